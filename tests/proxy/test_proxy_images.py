"""Images through the proxy, sent by the official SDKs in each protocol (chat completions,
Responses, Anthropic Messages), in a user message and in a tool result: prompted mode
(a text-only model) sees a placeholder, or refuses when set to; native mode hands the
image to the upstream, which reads it back (a second parlay proxy recording requests)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from proxy_harness import RunningServer, running

from parlay import (
    AnthropicBackend,
    ChatRequest,
    Image,
    OpenAIBackend,
    PromptedBackend,
    ScriptedBackend,
    ToolResult,
    UserMessage,
)
from parlay.errors import ConfigurationError
from parlay.server import create_app
from parlay.wire.images import MAX_IMAGE_BYTES

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 2040
B64 = base64.b64encode(PNG).decode()
DATA_URL = f"data:image/png;base64,{B64}"
IMAGE = Image("image/png", B64)
PLACEHOLDER = "[image: image/png, 2 KB — this model reads text only]"
PARAMS = {"type": "object", "properties": {"path": {"type": "string"}}}

# One conversation per protocol: an image in the user's message, a call, an image result.
CHAT = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": DATA_URL}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "view", "arguments": "{}"}}
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "image_url", "image_url": {"url": DATA_URL}}],
    },
]
CHAT_TOOLS: list[Any] = [{"type": "function", "function": {"name": "view", "parameters": PARAMS}}]
RESPONSES = [
    {
        "role": "user",
        "content": [
            {"type": "input_image", "image_url": DATA_URL, "detail": "auto"},
            {"type": "input_text", "text": "What is in this picture?"},
        ],
    },
    {"type": "function_call", "call_id": "c1", "name": "view", "arguments": "{}"},
    {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [{"type": "input_image", "image_url": DATA_URL}],
    },
]
RESPONSES_TOOLS: list[Any] = [{"type": "function", "name": "view", "parameters": PARAMS}]
SOURCE = {"type": "base64", "media_type": "image/png", "data": B64}
MESSAGES = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image", "source": SOURCE},
        ],
    },
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "view", "input": {}}],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": [{"type": "image", "source": SOURCE}],
            }
        ],
    },
]
MESSAGES_TOOLS: list[Any] = [{"name": "view", "input_schema": PARAMS}]


def send_chat(url: str) -> str:
    oa = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=20)
    done = oa.chat.completions.create(model="m", messages=CHAT, tools=CHAT_TOOLS)  # type: ignore[arg-type]
    return done.choices[0].message.content or ""


def send_responses(url: str) -> str:
    oa = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=20)
    done = oa.responses.create(model="m", input=RESPONSES, tools=RESPONSES_TOOLS)  # type: ignore[arg-type]
    return done.output_text


def send_messages(url: str) -> str:
    an = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0, timeout=20)
    done = an.messages.create(model="m", max_tokens=50, messages=MESSAGES, tools=MESSAGES_TOOLS)  # type: ignore[arg-type]
    return "".join(getattr(block, "text", "") for block in done.content)


SENDERS = {"chat": send_chat, "responses": send_responses, "messages": send_messages}


class Recorder:
    """A scripted model that keeps every request it was sent."""

    def __init__(self, reply: str) -> None:
        self.backend = ScriptedBackend(self._reply)
        self.reply = reply

    def _reply(self, request: ChatRequest) -> str:
        return self.reply

    @property
    def last(self) -> ChatRequest:
        return self.backend.requests[-1]


@pytest.fixture(scope="module")
def prompted() -> Iterator[tuple[RunningServer, Recorder]]:
    recorder = Recorder('{"type": "final", "content": "I cannot see images."}')
    with running(create_app(PromptedBackend(recorder.backend, action_format="json"))) as server:
        yield server, recorder


@pytest.mark.parametrize("protocol", list(SENDERS))
def test_a_text_only_model_behind_the_proxy_gets_a_placeholder_and_the_session_goes_on(
    prompted: tuple[RunningServer, Recorder], protocol: str
) -> None:
    server, recorder = prompted
    assert SENDERS[protocol](server.url) == "I cannot see images."
    seen = "\n".join(m.content for m in recorder.last.messages)
    assert seen.count(PLACEHOLDER) >= 2  # the user's image and the tool's
    assert not any(getattr(m, "images", ()) for m in recorder.last.messages)


@pytest.mark.parametrize("protocol", list(SENDERS))
def test_images_refuse_is_a_400_in_the_callers_protocol(protocol: str) -> None:
    backend = PromptedBackend(ScriptedBackend(["never"]), images="refuse")
    with running(create_app(backend)) as server:
        errors = (openai.BadRequestError, anthropic.BadRequestError)
        with pytest.raises(errors, match="reads text only") as caught:
            SENDERS[protocol](server.url)
    assert caught.value.status_code == 400


def test_an_image_over_the_cap_is_a_400_that_names_the_limit() -> None:
    big = base64.b64encode(b"\0" * (MAX_IMAGE_BYTES + 3)).decode()
    message = {"role": "user", "content": [{"type": "image", "source": {**SOURCE, "data": big}}]}
    with running(create_app(ScriptedBackend(["never"]))) as server:
        an = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0, timeout=20)
        with pytest.raises(anthropic.BadRequestError, match="limit here"):
            an.messages.create(model="m", max_tokens=5, messages=[message])  # type: ignore[list-item]


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[RunningServer, Recorder]]:
    """The upstream a native proxy forwards to: it speaks both protocols and records."""
    recorder = Recorder("A cat.")
    with running(create_app(recorder.backend)) as server:
        yield server, recorder


@pytest.mark.parametrize("upstream_kind", ["openai", "anthropic"])
@pytest.mark.parametrize("protocol", list(SENDERS))
def test_native_mode_hands_every_image_to_the_upstream(
    upstream: tuple[RunningServer, Recorder], protocol: str, upstream_kind: str
) -> None:
    server, recorder = upstream
    backend: Any
    if upstream_kind == "openai":
        backend = OpenAIBackend("m", base_url=server.url + "/v1", api_key="x")
    else:
        backend = AnthropicBackend("m", base_url=server.url, api_key="x")
    with running(create_app(backend)) as front:
        assert SENDERS[protocol](front.url) == "A cat."
    got = recorder.last.messages
    assert got[0] == UserMessage("What is in this picture?", (IMAGE,))
    if upstream_kind == "anthropic":  # images inside the tool_result itself
        assert got[-1] == ToolResult("c1", "view", images=(IMAGE,))
    else:  # a tool message holds text: the image follows in a user message
        assert isinstance(got[-2], ToolResult)
        assert got[-1].images == (IMAGE,)  # type: ignore[union-attr]


def test_serve_images_is_set_by_flag_or_environment_and_checked() -> None:
    from typer.testing import CliRunner

    from parlay.cli.app import app
    from parlay.server import ServerConfig
    from parlay.server.config import build_backend

    env = {"PARLAY_SERVE_UPSTREAM_URL": "http://up/v1", "PARLAY_SERVE_IMAGES": "refuse"}
    refusing = build_backend(ServerConfig.from_env(env))
    assert isinstance(refusing, PromptedBackend) and refusing.options.images == "refuse"
    flagged = build_backend(ServerConfig.from_env(env, images="placeholder"))
    assert isinstance(flagged, PromptedBackend) and flagged.options.images == "placeholder"
    shipped = build_backend(ServerConfig(upstream_url="http://up/v1"))
    assert isinstance(shipped, PromptedBackend) and shipped.options.images == "placeholder"
    result = CliRunner().invoke(
        app, ["serve", "--upstream-url", "http://up/v1", "--images", "describe"]
    )
    # A choice the flag does not offer: typer names the choices, as for --action-format.
    assert result.exit_code == 2 and "'describe'" in result.output
    assert "'placeholder'" in result.output and "'refuse'" in result.output
    with pytest.raises(ConfigurationError, match="images 'describe' is not one of"):
        ServerConfig.from_env({**env, "PARLAY_SERVE_IMAGES": "describe"})
