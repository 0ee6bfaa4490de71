"""Images for a model that reads text only: a placeholder stands in each image's place
(the rendered wording is a snapshot), or, set to refuse, the request is a clear error."""

from __future__ import annotations

import asyncio
import base64

import pytest

from parlay import (
    AssistantMessage,
    ChatRequest,
    ConfigurationError,
    Image,
    InvalidRequestError,
    PromptedBackend,
    ScriptedBackend,
    ToolCall,
    ToolResult,
    UserMessage,
)
from parlay.engine.contract.images import size_text
from parlay.engine.contract.render import render_contract

from .conftest import TOOLS

PNG = Image.from_bytes(b"\x89PNG" + b"\0" * 12_284, "image/png")  # 12 KB
READ = ToolCall("get_weather", {"city": "Rome"}, "call_1")
WITH_IMAGES = ChatRequest(
    [
        UserMessage("What is in this picture?", (PNG, Image(url="https://example.com/cat.jpg"))),
        AssistantMessage("", (READ,)),
        ToolResult("call_1", "get_weather", "", images=(PNG,)),
    ],
    TOOLS,
)


def run(backend: PromptedBackend, request: ChatRequest) -> str:
    async def text() -> str:
        return "".join([getattr(e, "text", "") async for e in backend.stream(request)])

    return asyncio.run(text())


def test_a_text_only_model_is_told_an_image_was_there(snapshot) -> None:
    inner = ScriptedBackend(["I cannot see images."])
    run(PromptedBackend(inner), WITH_IMAGES)
    sent = "\n".join(f"<<{m.role}>>\n{m.content}" for m in inner.requests[0].messages)
    assert "[image: image/png, 12 KB — this model reads text only]" in sent
    assert "[image: https://example.com/cat.jpg — this model reads text only]" in sent
    assert sent == snapshot
    assert not any(getattr(m, "images", ()) for m in inner.requests[0].messages)


def test_a_request_without_tools_reaches_the_inner_model_with_the_placeholder() -> None:
    inner = ScriptedBackend(["I cannot see it."])
    request = ChatRequest([UserMessage("", (PNG,))])
    assert run(PromptedBackend(inner), request) == "I cannot see it."
    (message,) = inner.requests[0].messages
    assert message == UserMessage("[image: image/png, 12 KB — this model reads text only]")


def test_images_refuse_makes_an_image_a_clear_error() -> None:
    inner = ScriptedBackend(["never asked"])
    with pytest.raises(InvalidRequestError, match="reads text only"):
        run(PromptedBackend(inner, images="refuse"), WITH_IMAGES)
    assert inner.requests == []
    # A request without images is served as ever.
    assert run(PromptedBackend(inner, images="refuse"), ChatRequest([UserMessage("hi")]))


def test_an_unknown_images_setting_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="placeholder, refuse"):
        PromptedBackend(ScriptedBackend([]), images="describe")


def test_the_contract_without_images_is_unchanged_by_the_setting() -> None:
    request = ChatRequest([UserMessage("What is the weather in Rome?")], TOOLS)
    plain = PromptedBackend(ScriptedBackend([]))
    refusing = plain.configure(images="refuse")
    first = render_contract(request, plain.options).messages
    assert first == render_contract(request, refusing.options).messages


@pytest.mark.parametrize(
    ("size", "text"), [(512, "512 bytes"), (12_288, "12 KB"), (1_468_006, "1.4 MB")]
)
def test_the_placeholder_gives_a_size_a_reader_can_take_in(size: int, text: str) -> None:
    assert size_text(size) == text
    assert (
        Image.from_bytes(base64.b64decode(base64.b64encode(b"x" * size)), "image/png").size == size
    )
