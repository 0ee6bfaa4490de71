"""The embedded server's two slots: a retry rendered anew keeps the conversation's prompt
cache, so the next turn reads only what is new."""

from __future__ import annotations

import logging
import re

import pytest

from parlay import ChatRequest, GenerationOptions, LocalBackend, SystemMessage, UserMessage
from parlay.backends.slots import Route, SlotRouter, common_prefix

CONTRACT = SystemMessage("You may call these tools: " + ", ".join(f"tool_{i}" for i in range(600)))
TURN_1 = [CONTRACT, UserMessage("List the files.")]
TURN_2 = [*TURN_1, UserMessage("notes.txt stamp.sh"), UserMessage("Now read notes.txt.")]
# The answer-only retry renders the contract anew: it parts from turn 1 inside the system.
RETRY = [SystemMessage(CONTRACT.content[:4000] + " Answer in words."), TURN_1[1]]


def test_a_retry_rendered_anew_goes_to_the_other_slot_and_leaves_the_conversations_prompt():
    router = SlotRouter()
    first = router.route(TURN_1)
    # The other slot is empty: the conversation's cache is copied there first, so the
    # retry reads only where it parts from turn 1.
    assert router.route(RETRY) == Route(1 - first.slot, copy_from=first.slot)
    assert router.route(TURN_2) == first
    # The next retry finds the last one's prompt in its slot: no copy is worth it.
    assert router.route([*RETRY, UserMessage("again")]) == Route(1 - first.slot)


def test_a_second_retry_of_a_turn_does_not_take_the_conversations_slot():
    # Two retries rendered anew, each keeping less than 90% of either slot's prompt: both
    # go to the slot that holds no conversation, although the conversation's is older.
    router = SlotRouter()
    first = router.route(TURN_1)
    answer_only = [SystemMessage(CONTRACT.content[:4000] + " Words only."), TURN_1[1]]
    assert router.route(RETRY).slot != first.slot
    assert router.route(answer_only).slot != first.slot
    assert router.route(TURN_2) == first


def test_a_retry_that_appends_to_the_prompt_stays_in_the_conversations_slot():
    router = SlotRouter()
    first = router.route(TURN_1)
    assert first.copy_from is None
    appended = [*TURN_1, UserMessage("Call it with a path.")]
    assert router.route(appended) == first
    # The next turn keeps nearly all of the appended retry's prompt: the same slot.
    assert router.route(TURN_2) == first


def test_two_conversations_keep_a_slot_each():
    router = SlotRouter()
    other = [SystemMessage("Another agent, another contract."), UserMessage("hi")]
    one, two = router.route(TURN_1), router.route(other)
    assert one.slot != two.slot and two.copy_from is None  # nothing in common to copy
    assert router.route([*other, UserMessage("and?")]) == two
    assert router.route(TURN_2) == one


def test_common_prefix_is_exact_at_every_length():
    text = "abcdefghij" * 50
    for cut in (0, 1, 7, 250, 499, 500):
        changed = text[:cut] + "#" + text[cut + 1 :]
        assert common_prefix(text, changed) == min(cut, len(text))
    assert common_prefix(text, text + "more") == len(text)
    assert common_prefix("", text) == 0


CACHED = re.compile(r"prompt: (\d+) tokens, (\d+) from the model server's cache")


@pytest.mark.model
async def test_the_next_turn_reads_only_what_is_new_after_a_retry_rendered_anew(caplog):
    # llama.cpp honours the slot parlay picks and the copy between slots: turn 2 finds
    # turn 1's prompt in its cache although a retry with another contract ran between.
    backend = LocalBackend()
    short = GenerationOptions(temperature=0, max_tokens=4)
    with caplog.at_level(logging.DEBUG, logger="parlay.model"):
        for messages in (TURN_1, RETRY, TURN_2):
            async for _ in backend.stream(ChatRequest(messages, options=short)):
                pass
    accounts = [CACHED.search(r.getMessage()) for r in caplog.records]
    totals = [(int(m[1]), int(m[2])) for m in accounts if m]
    assert len(totals) == 3
    (turn_1, _), (_, retry_cached), (turn_2, cached) = totals
    # The retry ran in the other slot on a copy of turn 1's cache: it read only from where
    # it parts from turn 1 (the first 4,000 characters of the contract are shared).
    assert retry_cached > 500
    assert cached >= turn_1 - 8  # all of turn 1's prompt but its last few template tokens
    assert turn_2 - cached < turn_2 // 4
