"""The streaming property and robustness of the action parser (hypothesis)."""

from __future__ import annotations

import itertools
import json

import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from parlay.engine.contract.parser import ActionStreamParser, parse
from parlay.engine.contract.parser.state import args_delta, text_delta
from parlay.events import TextDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart

TOOLS = ("get_weather", "add", "search")

PIECES = [
    "Sure, let me check.\n",
    "```json action\n",
    "```json\n",
    "```\n",
    "```python\nprint('hi')\n```\n",
    '{"tool": "get_weather", "parameters": {"city": "Paris"}}',
    '{"name": "add", "arguments": {\'a\': 1, "b": 2,}}',
    '{"thought": "need it", "action": {"tool": "search", "args": {"q": "whales \\"blue\\""}}}',
    '{"final": {"content": "It is sunny \\u00e9 \\n done"}}',
    '{"tool": "add", "parameters": {"a": 1, "b": [1, 2, 3]}}',
    "@tool search",
    "“smart” quotes and ‘single’ ones",
    '{"tool": "get_weather", "parameters": "{\\"city\\": \\"Rome\\"}"}',
    '{"name": "Ada", "age": 36}',
    "\n",
    "\n```\n",
    "`",
    "``",
    "{",
    "}",
    '"',
    "\\",
    "@",
    "@to",
    " and some prose ",
    "中文文本",
    '{"tool": "add", "parameters": {"a": True, "b": None, "c": 1.5e3, d: x}}',
    '[{"tool": "add", "parameters": {}}, {"tool": "search", "parameters": {"q": 1}}]',
    '{"type": "tool_calls", "tools": [{"tool_name": "add", "arguments": {"a": 1}}, '
    '{"tool_name": "search", "arguments": {"q": "x"}}]}',
    '{"type": "tool_call", "tool": {"tool_name": "get_weather", "arguments": {"city": "Oslo"}}}',
    '{"type": "final", "content": "done \\u00e9"}',
    '{"type": "object", "properties": {}}',
    '{"type": "tool_',
]


def run_chunked(text: str, cuts: list[int]) -> tuple:
    ids = iter(range(10_000))
    parser = ActionStreamParser(TOOLS, id_factory=lambda: f"id{next(ids)}")
    events = []
    last = 0
    for cut in sorted(set(c for c in cuts if 0 < c < len(text))):
        events += parser.feed(text[last:cut])
        last = cut
    events += parser.feed(text[last:])
    events += parser.finish()
    return summarize(events), parser.result()


def summarize(events: list) -> tuple:
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    starts = [(e.id, e.name, e.index) for e in events if isinstance(e, ToolCallStart)]
    deltas: dict[str, str] = {}
    for e in events:
        if isinstance(e, ToolCallArgsDelta):
            deltas[e.id] = deltas.get(e.id, "") + e.delta
    ends = [
        (e.call.id, e.call.name, e.call.arguments) for e in events if isinstance(e, ToolCallEnd)
    ]
    # Order: every delta and end of a call comes after its start.
    seen: set[str] = set()
    for e in events:
        if isinstance(e, ToolCallStart):
            seen.add(e.id)
        elif isinstance(e, (ToolCallArgsDelta, ToolCallEnd)):
            assert e.id in seen, "a call event came before its start"
    assert [s[0] for s in starts] == [e[0] for e in ends], "every started call must end"
    return text, starts, deltas, ends


text_strategy = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=text_strategy, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=40))
@example(text='```json\n{"tool": "add", "parameters": {"a": 1}}\n```', cuts=[1, 2, 3, 10, 30])
def test_every_chunking_gives_the_whole_parse(text: str, cuts: list[int]) -> None:
    whole, whole_result = run_chunked(text, [])
    streamed, streamed_result = run_chunked(text, cuts)
    assert streamed == whole
    assert streamed_result.text == whole_result.text == whole[0]
    assert [(c.name, c.arguments) for c in streamed_result.calls] == [
        (c.name, c.arguments) for c in whole_result.calls
    ]


@settings(max_examples=200, deadline=None)
@given(text=text_strategy)
def test_char_by_char_equals_whole(text: str) -> None:
    assert run_chunked(text, list(range(len(text))))[0] == run_chunked(text, [])[0]


@settings(max_examples=300, deadline=None)
@given(text=text_strategy)
def test_argument_deltas_concatenate_to_json(text: str) -> None:
    (_, _, deltas, ends), _ = run_chunked(text, [])
    for call_id, _name, arguments in ends:
        if call_id in deltas:
            value = json.loads(deltas[call_id])
            if isinstance(value, dict):
                assert value == arguments


@settings(max_examples=500, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8"), max_size=300),
    cuts=st.lists(st.integers(0, 300)),
)
def test_garbage_never_raises(text: str, cuts: list[int]) -> None:
    whole, _ = run_chunked(text, [])
    assert run_chunked(text, cuts)[0] == whole


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="{}[]\":,'`@\\ \nabtoolnameparsx0123456789-.“”", max_size=200),
    cuts=st.lists(st.integers(0, 200)),
)
def test_json_ish_garbage_never_raises(text: str, cuts: list[int]) -> None:
    whole, _ = run_chunked(text, [])
    assert run_chunked(text, cuts)[0] == whole
    parse(text, TOOLS)


def test_plain_text_passes_through_unchanged() -> None:
    text = "Hello! Nothing to call here. {not json} and a `code` span.\n"
    result = parse(text, TOOLS)
    assert result.text == text and result.calls == ()


class _GeneralPathParser(ActionStreamParser):
    """The parser with `feed`'s shortcuts taken out: every chunk goes through the state loop."""

    def feed(self, text: str) -> list:
        if self.st.ended or not text:
            return []
        self.st.buf += text
        self._run(final=False)
        return self.st.take()


def run_per_feed(parser_class: type, text: str, cuts: list[int]) -> list[list]:
    ids = iter(range(10_000))
    parser = parser_class(TOOLS, id_factory=lambda: f"id{next(ids)}")
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(text))), len(text)]
    out = [parser.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
    return [*out, parser.finish()]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.lists(
        st.sampled_from([*PIECES, "a { b", "x @ y", " `c` ", "  {", "\t@", "``` ", "`x`\n"]),
        max_size=12,
    ).map("".join),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=60),
)
@example(text="prose `code` and {numbers}\n  {not json}\n@ x\n`", cuts=[4, 8, 12, 16, 20, 24])
def test_shortcuts_emit_what_the_state_loop_emits_feed_by_feed(text: str, cuts: list[int]) -> None:
    # `feed` takes shortcuts for prose, held backticks, fence labels and string content;
    # each feed must give exactly the events the state loop alone gives, when it gives them.
    assert run_per_feed(ActionStreamParser, text, cuts) == run_per_feed(
        _GeneralPathParser, text, cuts
    )


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="{}\"'`@\\ \t\n\u3000abtol:,[]", max_size=120),
    cuts=st.lists(st.integers(0, 120)),
)
def test_shortcuts_match_the_state_loop_on_garbage(text: str, cuts: list[int]) -> None:
    assert run_per_feed(ActionStreamParser, text, cuts) == run_per_feed(
        _GeneralPathParser, text, cuts
    )


def test_the_parsers_text_deltas_are_ordinary_text_deltas() -> None:
    made = text_delta("héllo\n")
    plain = TextDelta("héllo\n")
    assert type(made) is TextDelta
    assert made == plain and hash(made) == hash(plain) and repr(made) == repr(plain)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.text = "changed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("made", "plain"),
    [
        (text_delta("héllo\n"), TextDelta("héllo\n")),
        (args_delta("call_1", '{"a": "é'), ToolCallArgsDelta("call_1", '{"a": "é')),
    ],
    ids=["text", "arguments"],
)
def test_the_parsers_fast_deltas_are_what_their_classes_make(
    made: TextDelta | ToolCallArgsDelta, plain: TextDelta | ToolCallArgsDelta
) -> None:
    # `text_delta` and `args_delta` set the slots without the classes' `__init__`: a field
    # added to a class (left unset), a converter, a validator or a post-init step fails here.
    cls = type(plain)
    assert type(made) is cls and made == plain and repr(made) == repr(plain)
    assert not hasattr(cls, "__attrs_post_init__")
    assert all(f.converter is None and f.validator is None for f in attrs.fields(cls))
