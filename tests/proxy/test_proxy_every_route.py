"""Refusals that must hold on every route that reads a request body (chat completions,
Responses, Messages and count_tokens), each a 400 in the route's own protocol: an outside
probe found UTF-16 bodies, a tool schema with a dangling `$ref`, and `tool_choice:
"required"` without tools on /v1/responses all answered 200."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from malformed import ROUTES, route_body, route_tool, shaped

from parlay import ScriptedBackend
from parlay.server import create_app

ENCODINGS = ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1")
# What asks for a call, in each route's own words.
CALL_CHOICES: dict[str, tuple[Any, ...]] = {
    "chat": ("required", {"type": "function", "function": {"name": "get_weather"}}),
    "responses": ("required", {"type": "function", "name": "get_weather"}),
    "messages": ({"type": "any"}, {"type": "tool", "name": "get_weather"}),
    "count_tokens": ({"type": "any"}, {"type": "tool", "name": "get_weather"}),
}
CHOICE_CASES = [(route, choice) for route, choices in CALL_CHOICES.items() for choice in choices]


async def _post(route: str, content: bytes) -> httpx.Response:
    app = create_app(ScriptedBackend(["ok"]))
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
        return await client.post(ROUTES[route][0], content=content)


def _refused(route: str, r: httpx.Response) -> str:
    """The message of a 400 in the route's own protocol."""
    assert r.status_code == 400, r.text[:300]
    body = r.json()
    assert shaped(ROUTES[route][1], body), body
    return str(body["error"]["message"])


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("route", ROUTES)
async def test_a_body_not_in_utf8_is_refused_with_400_on_every_route(
    route: str, encoding: str
) -> None:
    text = json.dumps(route_body(route, metadata={"note": "café"}), ensure_ascii=False)
    message = _refused(route, await _post(route, text.encode(encoding)))
    assert "not UTF-8" in message


@pytest.mark.parametrize("route", ROUTES)
async def test_a_utf8_body_is_still_served_on_every_route(route: str) -> None:
    """The control for the refusal above: the same body in UTF-8 (with a byte-order mark
    too, which RFC 8259 lets a parser ignore) is served."""
    body = route_body(route, tools=[route_tool(route)])
    for raw in (json.dumps(body).encode(), json.dumps(body).encode("utf-8-sig")):
        r = await _post(route, raw)
        assert r.status_code == 200, r.text[:300]


@pytest.mark.parametrize("route", ROUTES)
async def test_a_tool_schema_with_a_dangling_ref_is_refused_naming_the_tool_on_every_route(
    route: str,
) -> None:
    dangling = {"type": "object", "properties": {"city": {"$ref": "#/$defs/Missing"}}}
    tools = [route_tool(route), route_tool(route, "lookup", dangling)]
    message = _refused(
        route, await _post(route, json.dumps(route_body(route, tools=tools)).encode())
    )
    assert "'lookup'" in message and "#/$defs/Missing" in message
    # The same reference with its definition is served.
    defined = {**dangling, "$defs": {"Missing": {"type": "string"}}}
    tools = [route_tool(route), route_tool(route, "lookup", defined)]
    r = await _post(route, json.dumps(route_body(route, tools=tools)).encode())
    assert r.status_code == 200, r.text[:300]


@pytest.mark.parametrize(("route", "choice"), CHOICE_CASES)
async def test_a_tool_choice_asking_for_a_call_without_tools_is_refused_on_every_route(
    route: str, choice: Any
) -> None:
    body = route_body(route, tool_choice=choice)
    message = _refused(route, await _post(route, json.dumps(body).encode()))
    assert "no tool to call" in message
    # The same choice with the tool offered is served.
    r = await _post(route, json.dumps({**body, "tools": [route_tool(route)]}).encode())
    assert r.status_code == 200, r.text[:300]
