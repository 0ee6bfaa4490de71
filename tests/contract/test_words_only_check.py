"""Under tool_choice none a reply must be words: the `words_only` check, one of the
default list like the others, asks again for a reply that is only a call, empty or only
parlay's instruction, and is switched off by name like the others."""

from __future__ import annotations

import json

from parlay.backends.scripted import ScriptedBackend
from parlay.context import UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.checks import DEFAULT_CHECKS, Check, Evidence, Verdict
from parlay.engine.policy import TurnPolicy
from parlay.request import ChatRequest, ToolChoice

from .conftest import TOOLS
from .prompted_kit import run, text_of

ACTION = json.dumps({"action": {"tool": "add", "args": {"a": 2, "b": 3}}})
NONE = TurnPolicy.of_choice(ToolChoice("none"))


def _words_only() -> Check:
    return next(check for check in DEFAULT_CHECKS if check.name == "words_only")


def test_words_only_is_a_check_of_the_default_list_judging_under_none() -> None:
    check = _words_only()
    assert isinstance(check.judge(Evidence([], [], [], NONE, TOOLS)), Verdict)
    spoken = Evidence([], [], [], NONE, TOOLS, text="5.")
    assert check.judge(spoken) is None
    echoed = Evidence([], [], [], NONE, TOOLS, text="No tool can be called.", echo=True)
    assert isinstance(check.judge(echoed), Verdict)
    auto = TurnPolicy.of_choice(ToolChoice("auto"))
    assert check.judge(Evidence([], [], [], auto, TOOLS)) is None


async def test_a_call_under_none_is_asked_again_unless_words_only_is_switched_off() -> None:
    request = ChatRequest((UserMessage("2 + 3?"),), TOOLS, ToolChoice("none"))
    replies = [ACTION, "2 + 3 is 5."]
    inner = ScriptedBackend(list(replies))
    events, finish = await run(PromptedBackend(inner), request)
    assert text_of(events) == "2 + 3 is 5." and len(inner.requests) == 2
    assert finish.diagnostics is not None and finish.diagnostics.rules == ("words_only",)
    off = ScriptedBackend(list(replies))
    events, finish = await run(PromptedBackend(off, rules_off={"words_only"}), request)
    assert len(off.requests) == 1 and text_of(events) == ""
    assert finish.diagnostics is not None and finish.diagnostics.retries == ()
