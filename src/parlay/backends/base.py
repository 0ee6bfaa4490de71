"""The Backend seam: anything that turns a `ChatRequest` into a stream of events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from attrs import frozen

from parlay.errors import ConfigurationError
from parlay.events import Event
from parlay.request import ChatRequest


@frozen
class Capabilities:
    """What a backend can do natively.

    `native_tools`: it understands `tools` / `tool_choice` and returns structured calls.
    `json_schema`: it can constrain output to a JSON schema (`ResponseFormat`).
    """

    native_tools: bool = False
    json_schema: bool = False


# A chat model with no tool calling of its own whose replies can be held to a JSON schema
# (llama.cpp, vLLM): what the prompted engine needs to use its grammar.
PLAIN_CHAT = Capabilities(native_tools=False, json_schema=True)


@runtime_checkable
class Backend(Protocol):
    """A model. `stream` yields `TextDelta`, `ToolCallStart`, `ToolCallArgsDelta`,
    `ToolCallEnd` events and ends with exactly one `Finish`.

    Backends raise `BackendError` subclasses for transport failures; wrapping backends
    (the prompted engine) take any `Backend`, so the seam is this one method.
    """

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> Capabilities: ...

    def stream(self, request: ChatRequest) -> AsyncIterator[Event]: ...


def checked_base_url(url: str) -> str:
    """`url` if it can be spoken to over HTTP; else a `ConfigurationError` saying how to
    write it (httpx's own message for `localhost:8080/v1` is "unsupported protocol")."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.strip("/"):
        hint = f"http://{url.split('://')[-1].lstrip('/')}"
        raise ConfigurationError(
            f"base URL {url!r} is not an http(s) URL: write it with its scheme, like {hint!r}"
        )
    return url
