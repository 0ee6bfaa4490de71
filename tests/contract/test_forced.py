"""Calls the grammar forced: the model's own choice of tool name, read from its alternatives."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence

import pytest

from parlay.backends.base import Capabilities
from parlay.context import ToolCall, UserMessage
from parlay.engine.backend import NAME_ALTERNATIVES, PromptedBackend
from parlay.engine.checks.confidence import DEFAULT_CALL_CONFIDENCE, name_choices
from parlay.engine.contract.constrain import final_schema
from parlay.errors import ConfigurationError
from parlay.events import (
    Event,
    Finish,
    ScoredTextDelta,
    TextDelta,
    TokenChoice,
    ToolCallEnd,
    Usage,
)
from parlay.request import ChatRequest, GenerationOptions, ToolChoice
from parlay.start import EMBEDDED_ACTION_FORMAT, EMBEDDED_MIN_CALL_CONFIDENCE, default_backend

from .conftest import TOOLS

NAMES = [t.name for t in TOOLS]  # get_weather, add


def lp(p: float) -> float:
    return math.log(p)


def tokens(*pieces: str | tuple[str, Sequence[tuple[str, float]]]) -> list[TokenChoice]:
    """Tokens as written; a piece given with alternatives gets them (as probabilities)."""
    out = []
    for piece in pieces:
        if isinstance(piece, tuple):
            text, top = piece
            out.append(TokenChoice(text, lp(top[0][1]), tuple((t, lp(p)) for t, p in top)))
        else:
            out.append(TokenChoice(piece, 0.0, ((piece, 0.0),)))
    return out


def call_reply(first: str, top: Sequence[tuple[str, float]], rest: str, args: str) -> list:
    """`{"action": {"tool": "<first><rest>", "args": <args>}}` split into tokens, the name's
    first token carrying `top`."""
    return tokens(
        '{"',
        "action",
        '":',
        ' {"',
        "tool",
        '":',
        ' "',
        (first, top),
        rest,
        '", "args": ',
        args,
        "}}",
    )


def typed_reply(*firsts: tuple[str, Sequence[tuple[str, float]]]) -> list[TokenChoice]:
    """A typed reply calling `get_weather` once (`tool_call`) or once per entry of
    `firsts` (`tool_calls`, each for another address: the same call twice would be
    dropped as a duplicate), each name's first token carrying its alternatives."""
    entries: list[str | tuple[str, Sequence[tuple[str, float]]]] = []
    for index, first in enumerate(firsts):
        entries += [", " if index else "", '{"tool_name": "', first, "_weather"]
        entries.append(f'", "arguments": {{"city": "1.2.3.{4 + index}"}}}}')
    if len(firsts) == 1:
        return tokens('{"type": "tool_call", "tool": ', *entries, "}")
    return tokens('{"type": "tool_calls", "tools": [', *entries, "]}")


WHOIS = call_reply(
    "get", [("elite", 0.95), ("get", 0.02), ("who", 0.01)], "_weather", '{"city": "1.2.3.4"}'
)
WEATHER = call_reply("get", [("get", 0.9), ("weather", 0.05)], "_weather", '{"city": "Paris"}')


def test_a_name_the_model_leaned_away_from_has_a_small_share() -> None:
    call = ToolCall("get_weather", {"city": "1.2.3.4"})
    [choice] = name_choices(WHOIS, [call], NAMES)
    assert choice.call == call
    assert choice.share == pytest.approx(0.02 / 0.98)
    assert choice.leaning == "elite"


def test_a_name_the_model_chose_has_a_large_share() -> None:
    [choice] = name_choices(WEATHER, [ToolCall("get_weather", {"city": "Paris"})], NAMES)
    assert choice.share == pytest.approx(0.9 / 0.95)
    assert choice.leaning == "get"


def test_a_token_holding_the_opening_quote_is_read_with_it() -> None:
    # The tokenizer may glue the quote to the name: ` "get` against ` "add` and ` "weather`.
    reply = tokens(
        '{"action": {"tool":',
        (' "get', [(' "weather', 0.6), (' "get', 0.3), (' "add', 0.1)]),
        "_weather",
        '"}}',
    )
    [choice] = name_choices(reply, [ToolCall("get_weather", {})], NAMES)
    assert choice.share == pytest.approx(0.4)
    assert choice.leaning == ' "weather'


def test_each_call_is_found_in_order_and_fenced_blocks_use_the_tool_key() -> None:
    reply = tokens(
        '```json action\n{"tool": "',
        ("add", [("add", 0.5), ("sum", 0.5)]),
        '", "parameters": {"a": 1, "b": 2}}\n```\n```json action\n{"tool": "',
        ("add", [("plus", 0.9), ("add", 0.1)]),
        '", "parameters": {"a": 3, "b": 4}}\n```',
    )
    calls = [ToolCall("add", {"a": 1, "b": 2}), ToolCall("add", {"a": 3, "b": 4})]
    shares = [c.share for c in name_choices(reply, calls, NAMES)]
    assert shares == pytest.approx([0.5, 0.1])


def test_the_typed_formats_tool_name_key_is_read() -> None:
    # The typed format names its tools under `tool_name`: before this was read, no call of
    # the typed format was ever judged, and it abstained less than json where no tool fit.
    reply = typed_reply(("get", [("elite", 0.95), ("get", 0.02)]))
    [choice] = name_choices(reply, [ToolCall("get_weather", {"city": "1.2.3.4"})], NAMES)
    assert choice.share == pytest.approx(0.02 / 0.97)
    assert choice.leaning == "elite"


def test_the_name_is_read_at_every_token_and_judged_where_the_model_was_least_sure() -> None:
    # "get" is where most names begin: asked for VirusTotal data with only a weather tool
    # offered, SmolLM2 was sure of `get` and leaned to `v` after `get_`.
    reply = tokens(
        '{"tool": "',
        ("get", [("get", 0.9), ("fetch", 0.1)]),
        ("_", [("_", 0.95), ("V", 0.05)]),
        ("weather", [("v", 0.7), ("ip", 0.2), ("weather", 0.1)]),
        '", "arguments": {}}',
    )
    [choice] = name_choices(reply, [ToolCall("get_weather", {})], NAMES)
    assert choice.share == pytest.approx(0.1)
    assert (choice.leaning, choice.before) == ("v", "get_")


def test_only_continuations_of_an_offered_name_count() -> None:
    # After `a`, `dd` goes on to `add`; `dds` would be another name, and `dd"` ends it.
    names = ["add", "adder_total"]
    reply = tokens(
        '{"tool": "',
        "a",
        ("dd", [("dd", 0.5), ('dd"', 0.2), ("dds", 0.2), ("dder", 0.1)]),
        '"}',
    )
    [choice] = name_choices(reply, [ToolCall("add", {})], names)
    assert choice.share == pytest.approx(0.8)
    assert choice.before == "a"


def test_the_formats_placeholder_name_is_no_choice_either_way() -> None:
    # Unsure which tool to name, Qwen copies the instructions' `TOOL_NAME`: a sign that it
    # means to call, not that it wants another tool. It is left out of the share.
    reply = tokens('{"tool": "', ("add", [("TO", 0.6), ("add", 0.3), ("sum", 0.1)]), '"}')
    [choice] = name_choices(reply, [ToolCall("add", {})], NAMES)
    assert choice.share == pytest.approx(0.75)


def test_tokens_without_alternatives_are_passed_over() -> None:
    reply = tokens('{"tool": "', ("get", [("fetch", 0.9), ("get", 0.1)]), "_weather", '"}')
    reply[1] = TokenChoice("get", 0.0)  # this token came without alternatives
    reply[2] = TokenChoice("_weather", lp(0.6), (("_weather", lp(0.6)), ("_time", lp(0.4))))
    [choice] = name_choices(reply, [ToolCall("get_weather", {})], NAMES)
    assert choice.share == pytest.approx(0.6)


def test_no_alternatives_no_choice() -> None:
    reply = [TokenChoice(t.token, t.logprob) for t in WEATHER]  # a server that sent none
    assert name_choices(reply, [ToolCall("get_weather", {})], NAMES) == []
    assert name_choices([], [ToolCall("get_weather", {})], NAMES) == []


def test_a_call_not_in_the_tokens_is_skipped() -> None:
    assert name_choices(WEATHER, [ToolCall("add", {"a": 1, "b": 2})], NAMES) == []


class ScoredModel:
    """A plain-chat model under a grammar whose replies come with token alternatives."""

    def __init__(self, *replies: list[TokenChoice] | str) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    name = "scored"
    capabilities = Capabilities(native_tools=False, json_schema=True)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, str):
            yield TextDelta(reply)
        else:
            for token in reply:
                yield ScoredTextDelta(token.token, (token,))
        yield Finish("stop", Usage(1, 1))


async def run(backend: PromptedBackend, request: ChatRequest) -> tuple[list[Event], Finish]:
    events = [event async for event in backend.stream(request)]
    assert isinstance(events[-1], Finish)
    return events, events[-1]


def ask(text: str, choice: str = "auto") -> ChatRequest:
    return ChatRequest((UserMessage(text),), TOOLS, ToolChoice.coerce(choice))


FINAL = '{"final": {"content": "I have no tool for WHOIS lookups."}}'


async def test_a_forced_call_is_asked_again_for_an_answer() -> None:
    model = ScoredModel(WHOIS, FINAL)
    events, finish = await run(PromptedBackend(model), ask("WHOIS data for 1.2.3.4?"))
    assert not [e for e in events if isinstance(e, ToolCallEnd)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (
        "I have no tool for WHOIS lookups."
    )
    [retry] = finish.diagnostics.retries
    assert retry.reason == "forced_call"
    assert "get_weather" in retry.detail and "'elite'" in retry.detail and "2%" in retry.detail
    first, second = model.requests
    assert first.options.top_logprobs == NAME_ALTERNATIVES
    # The answer is asked for under a grammar that only admits one.
    assert second.response_format is not None and second.response_format.name == "final"
    assert second.response_format.schema == final_schema("typed")


async def test_a_call_the_model_chose_goes_through() -> None:
    model = ScoredModel(WEATHER)
    events, finish = await run(PromptedBackend(model), ask("Weather in Paris?"))
    assert [e.call.name for e in events if isinstance(e, ToolCallEnd)] == ["get_weather"]
    assert finish.diagnostics.retries == ()


@pytest.mark.parametrize("choice", ["required", "get_weather"])
async def test_a_forced_choice_is_never_second_guessed(choice: str) -> None:
    model = ScoredModel(WHOIS)
    events, finish = await run(PromptedBackend(model), ask("WHOIS data for 1.2.3.4?", choice))
    assert [e.call.name for e in events if isinstance(e, ToolCallEnd)] == ["get_weather"]
    assert finish.diagnostics.retries == ()
    # Nothing to read, so nothing asked of the server.
    assert model.requests[0].options.top_logprobs is None


# A name the model gave 30 % at its first token: SmolLM2 gets some right calls so.
UNSURE = call_reply("get", [("who", 0.6), ("get", 0.3)], "_weather", '{"city": "Paris"}')


async def test_a_call_named_less_surely_than_the_knob_is_asked_again_and_one_above_it_goes_out() -> (
    None
):
    model = ScoredModel(UNSURE, FINAL)
    _, finish = await run(PromptedBackend(model), ask("Weather in Paris?"))
    assert [r.reason for r in finish.diagnostics.retries] == ["forced_call"]
    model = ScoredModel(UNSURE)
    backend = PromptedBackend(model, min_call_confidence=0.25)
    events, finish = await run(backend, ask("Weather in Paris?"))
    assert [e.call.name for e in events if isinstance(e, ToolCallEnd)] == ["get_weather"]
    assert finish.diagnostics.retries == ()


def test_the_embedded_model_runs_at_its_own_call_confidence(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("PARLAY_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("PARLAY_LOCAL_MODEL", raising=False)
    backend = default_backend()
    assert isinstance(backend, PromptedBackend)
    assert backend.min_call_confidence == EMBEDDED_MIN_CALL_CONFIDENCE != DEFAULT_CALL_CONFIDENCE
    assert PromptedBackend(ScoredModel()).min_call_confidence == DEFAULT_CALL_CONFIDENCE
    # A local model of the user's own is not SmolLM2: the engine's default.
    (tmp_path / "mine.gguf").write_bytes(b"GGUF")
    monkeypatch.setenv("PARLAY_LOCAL_MODEL", str(tmp_path / "mine.gguf"))
    theirs = default_backend()
    assert isinstance(theirs, PromptedBackend)
    assert theirs.min_call_confidence == DEFAULT_CALL_CONFIDENCE


def test_the_embedded_smollm2_writes_json_where_the_engine_defaults_to_typed(
    monkeypatch, tmp_path
) -> None:
    """In the typed format SmolLM2 called its tool again after the result, with the
    example's value, where in json it answered (examples/quickstart.py)."""
    monkeypatch.delenv("PARLAY_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("PARLAY_LOCAL_MODEL", raising=False)
    backend = default_backend()
    assert isinstance(backend, PromptedBackend) and backend.grammar_available
    assert backend.action_format == EMBEDDED_ACTION_FORMAT == "json"
    assert PromptedBackend(ScoredModel()).action_format == "typed"
    (tmp_path / "mine.gguf").write_bytes(b"GGUF")
    monkeypatch.setenv("PARLAY_LOCAL_MODEL", str(tmp_path / "mine.gguf"))
    theirs = default_backend()
    assert isinstance(theirs, PromptedBackend) and theirs.action_format == "typed"


async def test_zero_turns_the_check_off() -> None:
    model = ScoredModel(WHOIS)
    backend = PromptedBackend(model, min_call_confidence=0)
    events, _ = await run(backend, ask("WHOIS data for 1.2.3.4?"))
    assert [e.call.name for e in events if isinstance(e, ToolCallEnd)] == ["get_weather"]
    assert model.requests[0].options.top_logprobs is None


async def test_the_last_attempt_keeps_its_call() -> None:
    # No retry is left to ask for an answer, and a call is better than nothing.
    model = ScoredModel(WHOIS)
    events, finish = await run(PromptedBackend(model, max_retries=0), ask("WHOIS for 1.2.3.4?"))
    assert [e.call.name for e in events if isinstance(e, ToolCallEnd)] == ["get_weather"]
    assert finish.diagnostics.retries == ()


async def test_the_last_attempt_notes_a_call_it_keeps_though_forced() -> None:
    model = ScoredModel(WHOIS)
    _, finish = await run(PromptedBackend(model, max_retries=0), ask("WHOIS for 1.2.3.4?"))
    [note] = [n for n in finish.diagnostics.notes if "grammar" in n]
    assert note.startswith("kept a call the grammar forced (no retry left): get_weather: ")


async def test_the_options_of_the_request_are_kept() -> None:
    model = ScoredModel(WEATHER)
    request = ask("Weather in Paris?").replace(
        options=GenerationOptions(temperature=0.0, max_tokens=64)
    )
    await run(PromptedBackend(model), request)
    sent = model.requests[0].options
    assert (sent.temperature, sent.max_tokens, sent.top_logprobs) == (0.0, 64, NAME_ALTERNATIVES)


@pytest.mark.parametrize(("choice", "sent"), [("auto", NAME_ALTERNATIVES), ("required", None)])
async def test_a_callers_logprobs_are_not_asked_of_the_server(
    choice: str, sent: int | None
) -> None:
    # The engine's text is parsed out of actions: the caller's alternatives would not fit
    # it, so only the engine's own reading of tool names asks for any.
    model = ScoredModel(WEATHER)
    request = ask("Weather in Paris?", choice).replace(options=GenerationOptions(top_logprobs=20))
    await run(PromptedBackend(model), request)
    assert model.requests[0].options.top_logprobs == sent


@pytest.mark.parametrize("share", [-0.1, 1.5])
def test_a_confidence_outside_zero_to_one_is_a_clear_error(share: float) -> None:
    with pytest.raises(ConfigurationError, match="min_call_confidence must be between 0 and 1"):
        PromptedBackend(ScoredModel(), min_call_confidence=share)


TYPED_FINAL = '{"type": "final", "content": "I have no tool for WHOIS lookups."}'


async def test_a_call_the_grammar_forced_in_the_typed_format_is_asked_again_for_an_answer() -> None:
    model = ScoredModel(typed_reply(("get", [("elite", 0.95), ("get", 0.02)])), TYPED_FINAL)
    engine = PromptedBackend(model, action_format="typed")
    events, finish = await run(engine, ask("WHOIS data for 1.2.3.4?"))
    assert not [e for e in events if isinstance(e, ToolCallEnd)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (
        "I have no tool for WHOIS lookups."
    )
    assert [r.reason for r in finish.diagnostics.retries] == ["forced_call"]
    # The answer is asked for under the typed format's own answer-only grammar.
    assert model.requests[1].response_format is not None
    assert model.requests[1].response_format.schema == final_schema("typed")


async def test_typed_calls_are_asked_again_only_when_the_grammar_forced_every_one() -> None:
    forced, chosen = ("get", [("elite", 0.95), ("get", 0.02)]), ("get", [("get", 0.9)])
    model = ScoredModel(typed_reply(forced, chosen))
    engine = PromptedBackend(model, action_format="typed")
    events, finish = await run(engine, ask("Weather in Paris and WHOIS data for 1.2.3.4?"))
    assert len([e for e in events if isinstance(e, ToolCallEnd)]) == 2
    assert finish.diagnostics.retries == ()
    model = ScoredModel(typed_reply(forced, forced), TYPED_FINAL)
    engine = PromptedBackend(model, action_format="typed")
    events, finish = await run(engine, ask("WHOIS data for 1.2.3.4 and 1.2.3.5?"))
    assert not [e for e in events if isinstance(e, ToolCallEnd)]
    assert [r.reason for r in finish.diagnostics.retries] == ["forced_call"]
