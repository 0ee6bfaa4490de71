"""The parser on realistic malformed model outputs: one case per tolerance."""

from __future__ import annotations

import pytest

from parlay.engine.contract.parser import ActionStreamParser, parse

TOOLS = ("get_weather", "add", "search")
PARIS = [("get_weather", {"city": "Paris"})]

CORPUS = [
    # (label, model output, expected calls, expected visible text)
    (
        "fenced action block with prose around",
        'Let me look.\n```json action\n{"tool": "get_weather", "parameters": {"city": "Paris"}}\n```\nOne moment.',
        PARIS,
        "Let me look.\n\nOne moment.",
    ),
    (
        "plain json fence (Qwen style)",
        '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        PARIS,
        "",
    ),
    (
        "smart quotes",
        "```json\n{“tool”: “get_weather”, “parameters”: {“city”: “Paris”}}\n```",
        PARIS,
        "",
    ),
    (
        "single quotes and a trailing comma",
        "```json\n{'tool': 'get_weather', 'parameters': {'city': 'Paris',},}\n```",
        PARIS,
        "",
    ),
    (
        "a last key without its value (hypothesis found the streamed JSON broke here)",
        '{"tool": "search", "parameters": {"q": "rain", "lang"}}',
        [("search", {"q": "rain", "lang": None})],
        "",
    ),
    (
        "stringified arguments",
        '```json\n{"tool": "get_weather", "parameters": "{\\"city\\": \\"Paris\\"}"}\n```',
        PARIS,
        "",
    ),
    ("alias keys: name + input", '{"name": "get_weather", "input": {"city": "Paris"}}', PARIS, ""),
    ("alias keys: tool + args", '{"tool": "get_weather", "args": {"city": "Paris"}}', PARIS, ""),
    (
        "OpenAI-style function wrapper",
        '{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}',
        PARIS,
        "",
    ),
    (
        "json protocol with thought",
        '{"thought": "weather needed", "action": {"tool": "get_weather", "args": {"city": "Paris"}}}',
        PARIS,
        "",
    ),
    (
        "json protocol final answer",
        '{"final": {"content": "It is sunny."}}',
        [],
        "It is sunny.",
    ),
    (
        "a final answer quoting JSON whose last inner quote was not escaped (SmolLM2)",
        r'{"final": {"content": "order_status returned {\"status\": \"shipped Tuesday"}}',
        [],
        'order_status returned {"status": "shipped Tuesday"}',
    ),
    (
        "a final answer quoting JSON whole is left as it is",
        r'{"final": {"content": "It returned {\"status\": \"done\"}, and \"ok"}}',
        [],
        'It returned {"status": "done"}, and "ok',
    ),
    (
        "several blocks",
        '```json action\n{"tool": "get_weather", "parameters": {"city": "Paris"}}\n```\n'
        '```json action\n{"tool": "add", "parameters": {"a": 1, "b": 2}}\n```',
        [*PARIS, ("add", {"a": 1, "b": 2})],
        "\n",
    ),
    (
        "an array of calls",
        '```json\n[{"tool": "get_weather", "parameters": {"city": "Paris"}}, '
        '{"tool": "add", "parameters": {"a": 1, "b": 2}}]\n```',
        [*PARIS, ("add", {"a": 1, "b": 2})],
        "",
    ),
    (
        "cut off by the token limit",
        '```json action\n{"tool": "get_weather", "parameters": {"city": "Par',
        [("get_weather", {"city": "Par"})],
        "",
    ),
    (
        "python literals and unquoted keys",
        "```json\n{tool: 'add', parameters: {a: 1, b: True, c: None}}\n```",
        [("add", {"a": 1, "b": True, "c": None})],
        "",
    ),
    (
        "missing commas",
        '```json\n{"tool": "add" "parameters": {"a": 1 "b": 2}}\n```',
        [("add", {"a": 1, "b": 2})],
        "",
    ),
    (
        "unclosed fence, then nothing",
        '```json action\n{"tool": "search", "parameters": {"q": "whales"}}',
        [("search", {"q": "whales"})],
        "",
    ),
    (
        "code fence is left alone",
        "Here:\n```python\nprint({'tool': 1})\n```\n",
        [],
        "Here:\n```python\nprint({'tool': 1})\n```\n",
    ),
    (
        "JSON data in an answer is not a call",
        'The record:\n{"name": "Ada", "born": 1815}',
        [],
        'The record:\n{"name": "Ada", "born": 1815}',
    ),
    (
        "JSON fence of data is not a call",
        '```json\n{"city": "Paris", "temp": 20}\n```',
        [],
        '```json\n{"city": "Paris", "temp": 20}\n```',
    ),
    ("plain prose", "The capital of France is Paris.", [], "The capital of France is Paris."),
    (
        "a fence without a newline",
        '```json{"tool": "get_weather", "parameters": {"city": "Paris"}}```',
        PARIS,
        "",
    ),
    (
        "escaped characters in arguments",
        '{"tool": "search", "parameters": {"q": "say \\"hi\\"\\n\\u00e9"}}',
        [("search", {"q": 'say "hi"\né'})],
        "",
    ),
]


@pytest.mark.parametrize(("label", "output", "calls", "text"), CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus(label: str, output: str, calls: list, text: str) -> None:
    result = parse(output, TOOLS)
    assert [(c.name, c.arguments) for c in result.calls] == calls
    assert result.text == text


@pytest.mark.parametrize(
    "line",
    ['@tool get_weather {"city": "Paris"}', 'Sure.\n@tool add {"a": 1}\nDone.', "@tool search"],
)
def test_a_command_line_is_text_now_that_the_format_is_gone(line: str) -> None:
    # The `@tool NAME {args}` format is no longer taught or read: such a line is prose.
    for chunk in (0, 1, 4):
        parser = ActionStreamParser(TOOLS)
        pieces = [line[i : i + chunk] for i in range(0, len(line), chunk)] if chunk else [line]
        for piece in pieces:
            parser.feed(piece)
        parser.finish()
        result = parser.result()
        assert (result.calls, result.problems, result.text) == ((), (), line)


def test_cut_off_is_reported() -> None:
    result = parse('```json action\n{"tool": "add", "parameters": {"a": 1', TOOLS)
    assert [p.kind for p in result.problems] == ["cut_off"]


def test_block_without_name_is_a_problem() -> None:
    result = parse('```json action\n{"parameters": {"a": 1}}\n```', TOOLS)
    assert result.calls == ()
    assert [p.kind for p in result.problems] == ["no_tool_name"]


def test_unreadable_arguments_are_a_problem() -> None:
    result = parse('{"tool": "add", "parameters": "not json at all"}', TOOLS)
    assert result.calls[0].arguments == {}
    assert [p.kind for p in result.problems] == ["unreadable_arguments"]


def test_thought_is_capped() -> None:
    long = "x" * 500
    result = parse(
        '{"thought": "' + long + '", "action": {"tool": "add", "args": {}}}',
        TOOLS,
        thought_limit=200,
    )
    assert result.thoughts == ("x" * 200,)
    assert [p.kind for p in result.problems] == ["thought_too_long"]


def test_unknown_tool_named_with_tool_key_is_still_a_call() -> None:
    # The retry policy rejects it with the real tool list; the parser reports what it saw.
    result = parse('{"tool": "get_wether", "parameters": {}}', TOOLS)
    assert [c.name for c in result.calls] == ["get_wether"]


@pytest.mark.parametrize(
    ("arguments", "operator"),
    [
        ('{"a": 2 * Math.PI, "b": 5}', "*"),  # Qwen on BFCL simple_python_99
        ('{"a": 3.14 / 2, "b": 1}', "/"),
        ('{"a": 2 + 3, "b": 1}', "+"),
        ('{"a": 10 - 4, "b": 1}', "-"),
        ('{"a": round(2.5), "b": 1}', "("),
    ],
)
def test_arithmetic_in_arguments_is_reported_not_read_as_other_keys(
    arguments: str, operator: str
) -> None:
    for output in (
        '```json action\n{"tool": "add", "parameters": ' + arguments + "}\n```",
        '{"action": {"tool": "add", "args": ' + arguments + "}}",
    ):
        result = parse(output, TOOLS)
        assert [p.kind for p in result.problems] == ["unreadable_arguments"]
        assert f"an expression ({operator!r})" in result.problems[0].detail


def test_signs_and_operators_inside_values_are_not_expressions() -> None:
    output = '{"tool": "search", "parameters": {"q": "a*b (c) - d", "n": -3, "e": 1e+5}}'
    result = parse(output, TOOLS)
    assert result.problems == ()
    assert result.calls[0].arguments == {"q": "a*b (c) - d", "n": -3, "e": 100000.0}
