"""The request checks the codecs share (parlay.wire.validate and the ranged fields):
what gets through, what is refused and what the refusal says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from parlay.errors import InvalidRequestError
from parlay.request import ToolSpec
from parlay.wire import anthropic_server, openai_server
from parlay.wire.validate import (
    Limits,
    check_tools,
    check_tree,
    dangling_ref,
    load_json,
    schema_problem,
)


def test_a_valid_body_loads() -> None:
    raw = json.dumps({"a": [1, 2.5, "é", {"b": None}], "emoji": "\U0001f600"}).encode()
    assert load_json(raw)["emoji"] == "\U0001f600"


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested more than 64"),
        (b"[" * 65 + b"]" * 65, "nested more than 64"),
        (b'{"t": NaN}', "NaN"),
        (b'{"t": -Infinity}', "-Infinity"),
        (b'{"t": 1e999}', "too large"),
        (b'{"t": ' + b"9" * 5000 + b"}", "too long"),
        (b'{"t": "\\ud800"}', "lone surrogate"),
        (b'{"\\udc00": 1}', "lone surrogate"),
        (b'{"t": "\xff"}', "not UTF-8"),
        (b"{nope", "not valid JSON"),
    ],
)
def test_a_malformed_body_is_refused_saying_why(raw: bytes, says: str) -> None:
    with pytest.raises(InvalidRequestError, match=says):
        load_json(raw)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_a_body_in_utf16_or_utf32_is_refused_with_or_without_a_bom(encoding: str) -> None:
    """`json.loads` on bytes guesses UTF-16 and UTF-32 from their zero bytes; the proxy
    says valid UTF-8, and refuses them."""
    raw = json.dumps({"model": "m", "messages": []}).encode(encoding)
    with pytest.raises(InvalidRequestError, match=r"not UTF-8.*UTF-16"):
        load_json(raw)


def test_a_body_in_latin1_is_refused_saying_where() -> None:
    raw = json.dumps({"t": "café"}, ensure_ascii=False).encode("latin-1")
    with pytest.raises(
        InvalidRequestError, match="not UTF-8: invalid continuation byte at byte 10"
    ):
        load_json(raw)


def test_a_utf8_body_with_a_byte_order_mark_still_loads() -> None:
    """RFC 8259 lets a parser ignore a UTF-8 byte-order mark; the proxy always did."""
    assert load_json(json.dumps({"t": "é"}).encode("utf-8-sig")) == {"t": "é"}


def test_a_surrogate_pair_written_as_escapes_is_one_character() -> None:
    assert load_json(b'{"t": "\\ud83d\\ude00"}')["t"] == "\U0001f600"


def test_the_tree_check_is_iterative() -> None:
    deep: Any = []
    for _ in range(200_000):  # far past the recursion limit
        deep = [deep]
    with pytest.raises(InvalidRequestError, match="nested"):
        check_tree(deep, 64)
    check_tree(deep, 300_000)  # no RecursionError either way


def test_the_depth_limit_is_configurable() -> None:
    raw = b"[" * 100 + b"]" * 100
    assert load_json(raw, Limits(max_depth=128)) is not None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": [1]},
        {"type": "object", "required": 5},
        {"type": ["string", 1]},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}},
        {"type": "object", "properties": {"a": {"enum": "x"}}},
    ],
)
def test_schemas_that_crashed_the_contract_renderer_are_refused(schema: Any) -> None:
    assert schema_problem(schema) is not None
    with pytest.raises(InvalidRequestError, match="'lookup'"):
        check_tools([ToolSpec("lookup", "", schema)], "tools")


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"type": "object", "properties": {"a": True}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}},
        {"type": ["object", "null"], "additionalProperties": False},
    ],
)
def test_valid_schemas_pass(schema: Any) -> None:
    check_tools([ToolSpec("lookup", "", schema)], "tools")


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}},
        {"$ref": "#/$defs/Missing", "$defs": {"Other": {}}},
        {"type": "object", "items": {"$ref": "#/properties/nope"}},
        {"type": "object", "properties": {"a": {"$ref": "#nowhere"}}},
        {"type": "object", "properties": {"a": {"$ref": "https://example.com/city.json"}}},
        # Draft-07 (zod-to-json-schema, older pydantic): its `definitions` are looked in too.
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"a": {"$ref": "#/definitions/gone"}},
        },
        # An anchor belongs to the resource its `$id` opens, not to the root.
        {
            "type": "object",
            "$defs": {"c": {"$id": "urn:city", "$anchor": "c", "type": "string"}},
            "properties": {"a": {"$ref": "#c"}},
        },
    ],
)
def test_a_tool_schema_with_a_dangling_ref_is_refused_naming_the_tool(schema: Any) -> None:
    assert dangling_ref(schema) is not None
    with pytest.raises(InvalidRequestError, match=r"'lookup'.*points at nothing"):
        check_tools([ToolSpec("lookup", "", schema)], "tools")


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#"}}},
        {
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/a/items"}},
            "$defs": {"a": {"items": {}}},
        },
        {"type": "object", "$defs": {"c": {"$anchor": "c"}}, "properties": {"a": {"$ref": "#c"}}},
        {
            "type": "object",
            "$defs": {"c": {"$id": "urn:city", "$defs": {"n": {"type": "string"}}}},
            "properties": {"a": {"$ref": "urn:city#/$defs/n"}},
        },
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"city": {"type": "string"}},
            "properties": {"a": {"$ref": "#/definitions/city"}},
        },
        # Data shaped like a reference is no reference: `enum`, `const` and `default` hold values.
        {"type": "object", "properties": {"a": {"enum": [{"$ref": "#/nowhere"}]}}},
        {"type": "object", "default": {"$ref": "#/nowhere"}, "const": {"$ref": "#/x"}},
    ],
)
def test_a_ref_that_resolves_within_the_schema_passes(schema: Any) -> None:
    assert dangling_ref(schema) is None
    check_tools([ToolSpec("lookup", "", schema)], "tools")


@pytest.mark.parametrize(
    ("names", "says"),
    [
        (["a", "b", "a"], "both named 'a'"),
        ([""], "tool name is 1 to 128"),
        (["get weather"], "tool name is 1 to 128"),
        (["x" * 129], "tool name is 1 to 128"),
    ],
)
def test_tool_names_are_valid_and_unique(names: list[str], says: str) -> None:
    with pytest.raises(InvalidRequestError, match=says):
        check_tools([ToolSpec(n) for n in names], "tools")


def test_mcp_style_names_pass() -> None:
    check_tools([ToolSpec("github.search_issues"), ToolSpec("fs:read-file")], "tools")


OA = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
AN = {**OA, "max_tokens": 10}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"temperature": 2.5}, "`temperature` must be from 0 to 2, got 2.5"),
        ({"top_p": 5}, "`top_p` must be from 0 to 1"),
        ({"max_tokens": -5}, "`max_tokens` must be from 1 to 1,000,000, got -5"),
        ({"max_tokens": 10**15}, "got 1000000000000000"),
        ({"max_tokens": 10**40}, "a number of 41 digits"),
        ({"max_tokens": True}, "not a boolean"),
        ({"stream": 1}, "`stream` must be a boolean"),
        ({"stream_options": {"include_usage": "yes"}}, "include_usage"),
        ({"temperature": 10**400}, "too large"),
        ({"presence_penalty": 3}, "`presence_penalty` must be from -2 to 2, got 3"),
        ({"frequency_penalty": "high"}, "frequency_penalty"),
    ],
)
def test_openai_numbers_and_flags_are_checked(extra: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidRequestError, match=says.replace("(", r"\(")):
        openai_server.decode_request({**OA, **extra})


def test_openai_penalties_reach_the_upstream_request() -> None:
    # They used to be dropped without a word: a client's repetition penalty did nothing.
    from parlay.wire.openai_client import encode_request

    chat = openai_server.decode_request(
        {**OA, "presence_penalty": 0.5, "frequency_penalty": -1}
    ).chat
    assert (chat.options.presence_penalty, chat.options.frequency_penalty) == (0.5, -1)
    body = encode_request(chat, model="m", stream=False)
    assert (body["presence_penalty"], body["frequency_penalty"]) == (0.5, -1)
    plain = encode_request(openai_server.decode_request(OA).chat, model="m", stream=False)
    assert "presence_penalty" not in plain and "frequency_penalty" not in plain


def test_anthropic_keeps_its_own_temperature_range() -> None:
    assert anthropic_server.decode_request({**AN, "temperature": 1}).chat.options.temperature == 1
    with pytest.raises(InvalidRequestError, match="from 0 to 1"):
        anthropic_server.decode_request({**AN, "temperature": 1.5})
    assert openai_server.decode_request({**OA, "temperature": 1.5}).chat.options.temperature == 1.5


def test_the_message_cap_holds_for_both() -> None:
    many = [{"role": "user", "content": "x"}] * 11
    with pytest.raises(InvalidRequestError, match="at most 10"):
        openai_server.decode_request({**OA, "messages": many}, Limits(max_messages=10))
    with pytest.raises(InvalidRequestError, match="at most 10"):
        anthropic_server.decode_request({**AN, "messages": many}, Limits(max_messages=10))
