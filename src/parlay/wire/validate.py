"""What every request the proxy serves must pass before any upstream call, shared by the
OpenAI and Anthropic codecs: JSON of bounded nesting, strings that encode as UTF-8,
finite numbers, sane sizes, and tool schemas that are JSON Schema.

A malformed request is an `InvalidRequestError` (a 400 in the client's own protocol),
never a crash further in, after the upstream was already paid for.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from parlay.errors import InvalidRequestError
from parlay.request import ResponseFormat, ToolChoice, ToolSpec
from parlay.wire._check import field, flag


@frozen
class Limits:
    """Bounds on one request.

    `max_body_bytes`: the body's size (413 beyond). `max_depth`: nesting of JSON arrays
    and objects; tool schemas nest, conversations hardly (a chat request with tools is
    about 8 deep). `max_messages`: Anthropic's documented limit. `max_tokens`: above any
    model's output today, and a bound on what a client can make the upstream generate.
    """

    max_body_bytes: int = 8 * 1024 * 1024
    max_depth: int = 64
    max_messages: int = 100_000
    max_tokens: int = 1_000_000
    max_tools: int = 1_024


DEFAULT_LIMITS = Limits()

# OpenAI's and Anthropic's tool-name rule, with dots and colons (MCP-style names) allowed.
TOOL_NAME = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")


def _no_constant(name: str) -> Any:
    raise InvalidRequestError(f"the request body holds {name}, which is not JSON (use a number)")


def load_json(raw: bytes, limits: Limits = DEFAULT_LIMITS) -> Any:
    """The request body parsed, its nesting and every string and number checked."""
    text = utf8_text(raw)
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise InvalidRequestError(
            f"the request body is nested more than {limits.max_depth} levels deep"
        ) from None
    except InvalidRequestError:
        raise
    except ValueError as exc:  # JSONDecodeError, or an integer of over 4,300 digits
        reason = str(exc) if isinstance(exc, json.JSONDecodeError) else "a number is too long"
        raise InvalidRequestError(f"the request body is not valid JSON: {reason}") from None
    check_tree(data, limits.max_depth)
    return data


_UTF16_32_BOMS = (b"\xff\xfe", b"\xfe\xff")


def utf8_text(raw: bytes) -> str:
    """The body as text, which must be UTF-8 (RFC 8259 for JSON on a network).

    `json.loads` given bytes would take UTF-16 and UTF-32 too, guessing from the zero
    bytes; a body in them is refused instead, as the docs say. A UTF-8 byte-order mark is
    tolerated, as RFC 8259 allows."""
    if raw.startswith(_UTF16_32_BOMS) or b"\x00" in raw[:4]:
        # A JSON text in UTF-8 holds no zero byte (a NUL in a string is escaped), so one
        # among the first four bytes is UTF-16 or UTF-32 with or without a byte-order mark.
        raise InvalidRequestError(
            "the request body is not UTF-8 (it looks like UTF-16 or UTF-32): send JSON "
            "encoded as UTF-8"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(
            f"the request body is not UTF-8: {exc.reason} at byte {exc.start}"
        ) from None
    return text.removeprefix("\ufeff")


def check_tree(data: Any, max_depth: int) -> None:
    """Nesting at most `max_depth`, strings encodable as UTF-8 (no lone surrogates, which
    JSON's `\\ud800` escapes can make), numbers finite (`1e999` parses as infinity).

    Iterative, so no input can exhaust the stack here."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                raise InvalidRequestError(
                    f"the request body is nested more than {max_depth} levels deep"
                )
            for key, value in node.items():
                _check_text(key)
                stack.append((value, depth + 1))
        elif isinstance(node, list):
            if depth > max_depth:
                raise InvalidRequestError(
                    f"the request body is nested more than {max_depth} levels deep"
                )
            stack.extend((value, depth + 1) for value in node)
        elif isinstance(node, str):
            _check_text(node)
        elif isinstance(node, float) and not math.isfinite(node):
            raise InvalidRequestError("the request body holds a number too large for a float")


def _check_text(text: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequestError(
            f"the request body holds a string that is not valid Unicode (a lone surrogate "
            f"{text[exc.start]!r} at character {exc.start})"
        ) from None


def check_count(items: list[Any], path: str, limit: int) -> None:
    if len(items) > limit:
        raise InvalidRequestError(f"`{path}` holds {len(items)} items; at most {limit} are served")


def check_tools(specs: Iterable[ToolSpec], path: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Names valid and unique, schemas valid JSON Schema describing an object."""
    seen: dict[str, int] = {}
    for i, spec in enumerate(specs):
        if i >= limits.max_tools:
            raise InvalidRequestError(f"`{path}` holds over {limits.max_tools} tools")
        if TOOL_NAME.fullmatch(spec.name) is None:
            raise InvalidRequestError(
                f"`{path}[{i}]` is named {spec.name[:80]!r}: a tool name is 1 to 128 letters, "
                "digits, '_', '-', '.' or ':'"
            )
        if spec.name in seen:
            raise InvalidRequestError(
                f"`{path}[{i}]` and `{path}[{seen[spec.name]}]` are both named {spec.name!r}: "
                "tool names must be unique"
            )
        seen[spec.name] = i
        problem = schema_problem(spec.parameters)
        if problem is None and not _describes_object(spec.parameters):
            problem = "a tool's arguments are an object, so its schema's type must be 'object'"
        if problem is not None:
            raise InvalidRequestError(
                f"the schema of tool {spec.name!r} (`{path}[{i}]`) is not valid JSON Schema: "
                f"{problem}"
            )


def check_choice_has_tools(choice: ToolChoice, tools: Sequence[ToolSpec], raw: Any) -> None:
    """Refuse a `tool_choice` that asks for a call (`required`, Anthropic's `any`, a named
    tool), `raw` as the client sent it, when the model is offered no tool to call: no
    reply could honour it, and OpenAI and Anthropic refuse it too."""
    if choice.mode not in ("required", "tool") or tools:
        return
    said = json.dumps(raw, ensure_ascii=False)
    said = said if len(said) <= 120 else said[:120] + "..."
    raise InvalidRequestError(
        f"`tool_choice` is {said}, which asks for a tool call, but the request offers the "
        "model no tool to call: send the tools in `tools`, or tool_choice 'auto' or 'none'"
    )


def check_schema(schema: Mapping[str, Any], path: str) -> None:
    problem = schema_problem(schema)
    if problem is not None:
        raise InvalidRequestError(f"`{path}` is not valid JSON Schema: {problem}")


def _describes_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type", "object")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


# Schemas come again with every turn of a conversation, and checking one against the
# metaschema costs about 3.6 s of CPU per MB (a millisecond for a small one). What was
# found is kept by the schema's content (a 16-byte digest of its canonical JSON: the
# key stays small whatever the schema's size), for the last `_KNOWN_SCHEMAS` schemas.
_KNOWN_SCHEMAS = 4_096
_known: collections.OrderedDict[bytes, str | None] = collections.OrderedDict()


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """What is wrong with `schema` against the JSON Schema 2020-12 metaschema, or None."""
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    key = hashlib.blake2b(canonical.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    if key in _known:
        _known.move_to_end(key)
        return _known[key]
    problem = _problem(schema)
    _known[key] = problem
    if len(_known) > _KNOWN_SCHEMAS:
        _known.popitem(last=False)
    return problem


def _problem(schema: Mapping[str, Any]) -> str | None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "".join(f"[{p!r}]" for p in exc.absolute_path) or "the top level"
        message = exc.message if len(exc.message) <= 200 else exc.message[:200] + "..."
        return f"at {where}: {message}"
    except RecursionError:  # a schema nested within max_depth cannot get here; a guard
        return "it is nested too deeply"
    return dangling_ref(schema)


def dangling_ref(schema: Mapping[str, Any]) -> str | None:
    """What is wrong with the first `$ref` of `schema` that points at nothing within it,
    or None. Only the schema itself is looked in: nothing is fetched, so a reference to
    another document is dangling too (no model or validator here could follow it)."""
    # The dialect its `$schema` names (draft-07's `definitions` are walked too), else 2020-12.
    if isinstance(schema.get("$schema"), str):
        root: Resource[Any] = Resource.from_contents(schema, default_specification=DRAFT202012)
    else:
        root = DRAFT202012.create_resource(schema)
    base = root.id() or ""
    registry: Registry[Any] = Registry().with_resource(base, root).crawl()
    # Only keywords that hold subschemas are walked: a `$ref` inside `enum` or `default`
    # is data, not a reference.
    stack = [(root, registry.resolver(base_uri=base))]
    while stack:
        resource, resolver = stack.pop()
        resolver = resolver.in_subresource(resource)
        contents = resource.contents
        ref = contents.get("$ref") if isinstance(contents, Mapping) else None
        if isinstance(ref, str):
            try:
                resolver.lookup(ref)
            except (Unresolvable, ValueError):
                shown = ref if len(ref) <= 200 else ref[:200] + "..."
                return f"$ref {shown!r} points at nothing in the schema"
        stack.extend((sub, resolver) for sub in resource.subresources())
    return None


def output_format(
    kind: Any, spec: Mapping[str, Any], where: str, *, kind_at: str, schema_required: bool
) -> ResponseFormat | None:
    """A structured-output request of either OpenAI API as a `ResponseFormat`: `text` is
    none, `json_object` any object, `json_schema` the schema, name and strictness of
    `spec` (found at `where`); `kind_at` names the type's field in errors."""
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat({"type": "object"}, "json_object", strict=False)
    if kind == "json_schema":
        schema = field(spec, "schema", dict, where=where, required=schema_required) or {}
        check_schema(schema, f"{where}.schema")
        name = field(spec, "name", str, where=where) or "response"
        return ResponseFormat(schema, name, flag(spec, "strict", where=where))
    raise InvalidRequestError(f"`{kind_at}` must be 'text', 'json_object' or 'json_schema'")
