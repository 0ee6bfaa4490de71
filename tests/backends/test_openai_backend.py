"""The OpenAI-compatible backend against recorded wire payloads and injected faults."""

import json

import httpx
import pytest
import respx

from parlay import (
    AssistantMessage,
    BackendConnectionError,
    BackendProtocolError,
    BackendStatusError,
    BackendTimeoutError,
    ChatRequest,
    ConfigurationError,
    GenerationOptions,
    InvalidRequestError,
    OpenAIBackend,
    ResponseFormat,
    Session,
    SystemMessage,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolCallTruncatedError,
    ToolChoice,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from parlay.backends.local import free_port
from parlay.events import ScoredTextDelta, TextDelta, TokenChoice
from parlay.wire.openai_client import encode_request

BASE = "http://upstream.test/v1"
# respx's routes as the backends' transport: given one, a backend sends through httpx.
RESPX = httpx.MockTransport(respx.mock.async_handler)
WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def sse(*chunks: dict | str) -> list[bytes]:
    out = []
    for chunk in chunks:
        data = chunk if isinstance(chunk, str) else json.dumps(chunk)
        out.append(f"data: {data}\n\n".encode())
    return out


def delta_chunk(delta: dict, finish: str | None = None) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def split_everywhere(frames: list[bytes], size: int):
    """Re-chunk the byte stream at fixed sizes, cutting lines and JSON anywhere."""
    whole = b"".join(frames)

    async def body():
        for i in range(0, len(whole), size):
            yield whole[i : i + size]

    return body()


async def collect(backend: OpenAIBackend, request: ChatRequest):
    return [event async for event in backend.stream(request)]


def request_with_tools(**kw) -> ChatRequest:
    return ChatRequest([UserMessage("weather in Paris and Rome?")], tools=[WEATHER], **kw)


def test_request_encoding(snapshot):
    call = ToolCall("get_weather", {"city": "Paris"}, id="call_1")
    request = ChatRequest(
        [
            SystemMessage("be brief"),
            UserMessage("weather?"),
            AssistantMessage("", (call,)),
            ToolResult("call_1", "get_weather", output="sunny"),
            ToolResult("call_2", "get_weather", error="city unknown"),
        ],
        tools=[WEATHER],
        tool_choice=ToolChoice("tool", "get_weather"),
        parallel_tool_calls=False,
        response_format=ResponseFormat({"type": "object"}, name="answer"),
        options=GenerationOptions(temperature=0, max_tokens=64, stop=["END"], seed=1),
    )
    assert encode_request(request, model="gpt-x", stream=True) == snapshot


@respx.mock
async def test_non_streaming_response_with_tool_calls():
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            200,
            json={
                "id": "chatcmpl-9",
                "model": "gpt-x",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_a",
                                    "type": "function",
                                    "function": {
                                        "name": "get_weather",
                                        "arguments": '{"city": "Paris"}',
                                    },
                                },
                                {
                                    "id": "call_b",
                                    "type": "function",
                                    "function": {
                                        "name": "get_weather",
                                        "arguments": "{'city': 'Rome',}",
                                    },
                                },
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
            },
        )
    )
    backend = OpenAIBackend("gpt-x", transport=RESPX, base_url=BASE, api_key="k", stream=False)
    events = await collect(backend, request_with_tools())
    ends = [e.call for e in events if isinstance(e, ToolCallEnd)]
    assert ends == [
        ToolCall("get_weather", {"city": "Paris"}, "call_a"),
        ToolCall("get_weather", {"city": "Rome"}, "call_b"),  # repaired
    ]
    finish = events[-1]
    assert finish.reason == "tool_calls" and finish.usage.total_tokens == 29
    sent = json.loads(respx.calls.last.request.content)
    assert respx.calls.last.request.headers["authorization"] == "Bearer k"
    assert "stream" not in sent and sent["tools"][0]["function"]["name"] == "get_weather"


STREAM = sse(
    delta_chunk({"role": "assistant", "content": None}),
    delta_chunk({"content": "Let me check."}),
    delta_chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_", "arguments": ""},
                }
            ]
        }
    ),
    delta_chunk({"tool_calls": [{"index": 0, "function": {"name": "weather"}}]}),
    delta_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}),
    delta_chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_b",
                    "function": {"name": "get_weather", "arguments": '{"city":'},
                }
            ]
        }
    ),
    delta_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Par'}}]}),
    delta_chunk({"tool_calls": [{"index": 1, "function": {"arguments": ' "Rome"}'}}]}),
    delta_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'is"}'}}]}),
    delta_chunk({}, finish="tool_calls"),
    {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}},
    "[DONE]",
)


@pytest.mark.parametrize("size", [1, 3, 7, 64, 100_000])
@respx.mock
async def test_streamed_tool_call_deltas_merge_by_index(size):
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=split_everywhere(STREAM, size),
        )
    )
    events = await collect(
        OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key=""), request_with_tools()
    )
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    # The name arrived in two pieces; the call starts once, after its name began.
    assert [(s.id, s.index) for s in starts] == [("call_a", 0), ("call_b", 1)]
    for call_id, expected in [("call_a", '{"city": "Paris"}'), ("call_b", '{"city": "Rome"}')]:
        fragments = [
            e.delta for e in events if isinstance(e, ToolCallArgsDelta) and e.id == call_id
        ]
        assert "".join(fragments) == expected
        # Every fragment comes after its call's start.
        first_fragment = next(
            i for i, e in enumerate(events) if isinstance(e, ToolCallArgsDelta) and e.id == call_id
        )
        start_at = next(
            i for i, e in enumerate(events) if isinstance(e, ToolCallStart) and e.id == call_id
        )
        assert start_at < first_fragment
    ends = [e.call for e in events if isinstance(e, ToolCallEnd)]
    assert [(c.name, c.arguments) for c in ends] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert events[-1].reason == "tool_calls" and events[-1].usage.completion_tokens == 7
    sent = json.loads(respx.calls.last.request.content)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


@respx.mock
def test_streamed_calls_reach_a_session_thunk():
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(200, content=b"".join(STREAM))
    )

    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    session = Session(
        OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key=""), tools=[get_weather]
    )
    thunk = session.chat("weather?")
    assert thunk.value == "Let me check."
    assert [c.id for c in thunk.tools] == ["call_a", "call_b"]


@respx.mock
def test_a_native_call_cut_at_the_token_limit_is_not_run():
    """An upstream with native tools stops at `max_tokens` inside a call's arguments:
    the tool loop runs nothing and says so."""
    cut = [
        delta_chunk({"role": "assistant", "content": None}),
        delta_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Par'},
                    }
                ]
            }
        ),
        delta_chunk({}, "length"),
        "[DONE]",
    ]
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(200, content=b"".join(sse(*cut)))
    )
    ran = []

    def get_weather(city: str) -> str:
        """Weather for a city."""
        ran.append(city)
        return "sunny"

    session = Session(
        OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key=""), tools=[get_weather]
    )
    with pytest.raises(ToolCallTruncatedError) as caught:
        session.chat("weather in Paris?", run_tools=True).value  # noqa: B018
    assert ran == [] and caught.value.call.id == "call_a"
    assert len(respx.calls) == 1


@respx.mock
async def test_http_error_status_keeps_the_provider_message():
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(500, json={"error": {"message": "model overloaded"}})
    )
    with pytest.raises(BackendStatusError, match="HTTP 500: model overloaded") as caught:
        await collect(
            OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key=""), request_with_tools()
        )
    assert caught.value.status_code == 500


@respx.mock
async def test_timeout_is_a_timeout_error():
    respx.post(f"{BASE}/chat/completions").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(BackendTimeoutError, match="did not answer in time"):
        await collect(
            OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key=""), request_with_tools()
        )


async def test_refused_connection_is_a_connection_error():
    backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{free_port()}/v1", api_key="")
    with pytest.raises(BackendConnectionError, match="cannot reach"):
        await collect(backend, request_with_tools())


@respx.mock
async def test_stream_cut_before_the_end_is_a_protocol_error():
    cut = STREAM[:6]  # stops inside the first call's arguments, no finish, no [DONE]
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(200, content=b"".join(cut))
    )
    with pytest.raises(BackendProtocolError, match="ended before the model finished"):
        await collect(
            OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key=""), request_with_tools()
        )


@respx.mock
async def test_garbage_in_a_stream_is_a_protocol_error():
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(200, content=b"data: {not json\n\n")
    )
    with pytest.raises(BackendProtocolError, match="not JSON"):
        await collect(
            OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key=""), request_with_tools()
        )


def test_asking_for_token_alternatives_encodes_openai_logprobs():
    request = ChatRequest([UserMessage("hi")], options=GenerationOptions(top_logprobs=5))
    body = encode_request(request, model="m", stream=True)
    assert (body["logprobs"], body["top_logprobs"]) == (True, 5)
    # No alternatives: `top_logprobs` left out, as an explicit 0 gets none from llama.cpp.
    none = ChatRequest([UserMessage("hi")], options=GenerationOptions(top_logprobs=0))
    body = encode_request(none, model="m", stream=True)
    assert body["logprobs"] is True and "top_logprobs" not in body
    assert "logprobs" not in encode_request(
        ChatRequest([UserMessage("hi")]), model="m", stream=True
    )


@pytest.mark.parametrize("count", [-1, 21])
def test_top_logprobs_outside_the_openai_range_is_a_clear_error(count):
    with pytest.raises(InvalidRequestError, match="top_logprobs must be between 0 and 20"):
        GenerationOptions(top_logprobs=count)


def logprob_chunk(content: str, top: list[tuple[str, float]]) -> dict:
    """A chunk as llama.cpp streams it with `logprobs` on (recorded, ids and bytes kept)."""
    chunk = delta_chunk({"content": content})
    chunk["choices"][0]["logprobs"] = {
        "content": [
            {
                "id": 57,
                "token": content,
                "bytes": list(content.encode()),
                "logprob": top[0][1],
                "top_logprobs": [
                    {"id": i, "token": t, "bytes": list(t.encode()), "logprob": p}
                    for i, (t, p) in enumerate(top)
                ],
            }
        ]
    }
    return chunk


@respx.mock
async def test_streamed_token_alternatives_come_with_the_text():
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=b"".join(
                sse(
                    logprob_chunk("I", [("I", -2.256), ("Hello", -2.395)]),
                    logprob_chunk("'m", [("'m", -0.149), (" am", -3.618)]),
                    delta_chunk({"content": "!"}),  # a chunk without them stays plain text
                    delta_chunk({}, "stop"),
                    "[DONE]",
                )
            ),
        )
    )
    request = ChatRequest([UserMessage("hi")], options=GenerationOptions(top_logprobs=2))
    events = await collect(OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key=""), request)
    texts = [e for e in events if isinstance(e, TextDelta)]
    assert "".join(e.text for e in texts) == "I'm!"
    first, second, third = texts
    assert isinstance(first, ScoredTextDelta) and isinstance(second, ScoredTextDelta)
    assert first.tokens == (TokenChoice("I", -2.256, (("I", -2.256), ("Hello", -2.395))),)
    assert second.tokens[0].top[1] == (" am", -3.618)
    assert type(third) is TextDelta


@respx.mock
async def test_whole_response_token_alternatives_and_odd_shapes():
    good = logprob_chunk("Hi", [("Hi", -0.1), ("Hello", -2.5)])["choices"][0]["logprobs"]
    for logprobs, scored in [(good, True), ({"content": "junk"}, False), (None, False)]:
        respx.post(f"{BASE}/chat/completions").mock(
            return_value=httpx.Response(
                200,
                json={
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "Hi"},
                            "logprobs": logprobs,
                            "finish_reason": "stop",
                        }
                    ],
                },
            )
        )
        backend = OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key="", stream=False)
        [text] = [
            e for e in await collect(backend, request_with_tools()) if isinstance(e, TextDelta)
        ]
        assert text.text == "Hi"
        assert isinstance(text, ScoredTextDelta) is scored


def _listing(*names):
    return httpx.Response(200, json={"object": "list", "data": [{"id": n} for n in names]})


def _hello(request):
    return httpx.Response(
        200,
        json={
            "model": json.loads(request.content).get("model"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "hi"}}],
        },
    )


@respx.mock
async def test_a_bare_url_uses_the_one_model_the_server_lists():
    """`parlay prompt -m http://HOST/v1` against parlay's own proxy answered
    "HTTP 400: model is required": no model was named, and none was looked up."""
    models = respx.get(f"{BASE}/models").mock(return_value=_listing("parlay"))
    chat = respx.post(f"{BASE}/chat/completions").mock(side_effect=_hello)
    backend = OpenAIBackend(transport=RESPX, base_url=BASE, stream=False)
    for _ in range(2):
        await Session(backend).chat("hi")
    assert [json.loads(c.request.content)["model"] for c in chat.calls] == ["parlay", "parlay"]
    assert models.call_count == 1  # asked once


@respx.mock
async def test_a_bare_url_with_several_models_says_which_to_name():
    respx.get(f"{BASE}/models").mock(return_value=_listing("qwen", "smol"))
    backend = OpenAIBackend(transport=RESPX, base_url=BASE, stream=False)
    with pytest.raises(ConfigurationError, match=r"serves 2 models \(qwen, smol\): name one"):
        await Session(backend).chat("hi")


@respx.mock
async def test_a_server_without_a_listing_gets_requests_without_a_model():
    respx.get(f"{BASE}/models").mock(return_value=httpx.Response(404, json={"error": "no"}))
    chat = respx.post(f"{BASE}/chat/completions").mock(side_effect=_hello)
    await Session(OpenAIBackend(transport=RESPX, base_url=BASE, stream=False)).chat("hi")
    assert "model" not in json.loads(chat.calls[0].request.content)


@respx.mock
async def test_a_named_model_is_never_looked_up():
    models = respx.get(f"{BASE}/models").mock(return_value=_listing("other"))
    chat = respx.post(f"{BASE}/chat/completions").mock(side_effect=_hello)
    await Session(OpenAIBackend("mine", transport=RESPX, base_url=BASE, stream=False)).chat("hi")
    assert models.call_count == 0
    assert json.loads(chat.calls[0].request.content)["model"] == "mine"
