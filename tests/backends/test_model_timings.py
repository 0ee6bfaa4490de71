"""A llama.cpp server's own account of a reply (prompt cache reuse) reaches the debug log."""

import logging
import re

import httpx
import respx
from tests.backends.test_openai_backend import BASE, RESPX, delta_chunk, split_everywhere, sse

from parlay import ChatRequest, OpenAIBackend, UserMessage
from parlay.backends.model_timings import describe_timings

# The shape llama.cpp's server sends in its last chunk (recorded from the embedded model,
# second request of a conversation: all but one prompt token came from its cache).
TIMINGS = {
    "cache_n": 120,
    "prompt_n": 1,
    "prompt_ms": 20.543,
    "prompt_per_token_ms": 20.543,
    "predicted_n": 5,
    "predicted_ms": 28.747,
}


@respx.mock
async def test_debug_log_says_how_much_of_the_prompt_came_from_the_model_servers_cache(caplog):
    usage = {"prompt_tokens": 121, "completion_tokens": 5}
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=split_everywhere(
                sse(
                    delta_chunk({"content": "hi"}, finish="stop"),
                    {"id": "c", "choices": [], "usage": usage, "timings": TIMINGS},
                    "[DONE]",
                ),
                1_000,
            ),
        )
    )
    backend = OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key="")
    with caplog.at_level(logging.DEBUG, logger="parlay.model"):
        async for _ in backend.stream(ChatRequest([UserMessage("hi")])):
            pass
    first, account = [r.getMessage() for r in caplog.records if r.name == "parlay.model"]
    assert re.fullmatch(rf"first token after \d+\.\d\d s \({re.escape(BASE)}\)", first)
    assert account == (
        "prompt: 121 tokens, 120 from the model server's cache, 1 read in 0.02 s;"
        f" reply: 5 tokens in 0.03 s ({BASE})"
    )


@respx.mock
async def test_a_reply_the_engine_stops_early_still_logs_its_first_token(caplog):
    # The loop guard and the engine close a stream before the server's last chunk (the one
    # with `timings`): the time to the first token is then the only account there is.
    respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=split_everywhere(sse(*[delta_chunk({"content": "loop "})] * 50), 1_000),
        )
    )
    backend = OpenAIBackend("m", transport=RESPX, base_url=BASE, api_key="")
    with caplog.at_level(logging.DEBUG, logger="parlay.model"):
        stream = backend.stream(ChatRequest([UserMessage("hi")]))
        await anext(stream)
        await stream.aclose()
    lines = [r.getMessage() for r in caplog.records if r.name == "parlay.model"]
    assert len(lines) == 1 and lines[0].startswith("first token after ")


def test_timings_that_are_not_llama_cpps_give_no_line():
    assert describe_timings({"prompt_n": "many"}) is None
    assert describe_timings({"queue_ms": 3}) is None
