"""A tiny OpenAI-compatible upstream on raw asyncio: answers at once, or fails on purpose.

Used by the fault tests (and by the benchmark behind bench/results/proxy.md). The
behaviour is chosen by the `model` field of the request (the proxy's upstream backend
sends its configured model):

- anything else: a short text reply ("Hello from the stub."), streamed or not
- "call": a native tool call (get_weather {"city": "Paris"})
- "fail-500": HTTP 500 with an OpenAI error body
- "slow": waits 30 s before answering
- "cut": streams text that opens an action block, then drops the connection
- "cut-call": streams a native tool call halfway, then drops the connection
- "stall": streams the first chunk, then waits 30 s
- "drip": streams five text chunks 0.3 s apart
- "drip-call": streams a native tool call, its argument fragments 0.3 s apart
- "fail-429": HTTP 429 with `Retry-After: 7`
- "fail-401": HTTP 401 whose body echoes the key it was sent, as OpenAI's does
- "echo-key": HTTP 500 whose body echoes the request's Authorization header
- "schema-400": HTTP 400 saying the JSON schema cannot become a grammar, when the request
  has a `response_format`; else a short text reply
- "not-json": HTTP 200 whose body is HTML, not JSON nor server-sent events
- "garbage-sse": streams the role chunk, then a `data:` line that is not JSON
- "surrogate": a reply whose text holds a lone surrogate (JSON's `\ud800` escape)
- "turns": one tool conversation, read from the history alone: a call of get_weather
  until the history holds its result ("sunny, 21 C"), then an answer; natively when the
  request has tools, else in the prompt engine's JSON action format

Every request is counted by its mode (`StubUpstream.calls`).

Run as a script (`python proxy_stub.py PORT`) for a separate process.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
from collections import Counter
from typing import Any

TEXT = "Hello from the stub."
CALLS: Counter[str] = Counter()  # requests answered, by mode


def _completion(model: str, calls: bool) -> dict[str, Any]:
    text = "Hello \ud800 from the stub." if model == "surrogate" else TEXT
    message: dict[str, Any] = {"role": "assistant", "content": text}
    reason = "stop"
    if calls:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_stub1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        }
        reason = "tool_calls"
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    }


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _stream_chunks(mode: str) -> list[bytes]:
    role = _chunk({"role": "assistant", "content": ""})
    if mode == "call":
        return [
            role,
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_stub1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                }
            ),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
            _chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    if mode == "cut":
        return [
            role,
            _chunk({"content": "Sure.\n```json\n"}),
            _chunk({"content": '{"name": "get_weather", "arguments": {"ci'}),
        ]
    if mode == "cut-call":
        return _stream_chunks("call")[:3]
    if mode == "garbage-sse":
        return [role, b"data: {this is not json\n\n", *_stream_chunks("")[1:]]
    if mode == "surrogate":
        return [role, _chunk({"content": "Hello \ud800 there."}), *_stream_chunks("")[-3:]]
    if mode == "drip-call":
        return _stream_chunks("call")
    words = ["Hello ", "from ", "the ", "stub."]
    usage = {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "stub",
        "choices": [],
        "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
    }
    return [
        role,
        *(_chunk({"content": w}) for w in words),
        _chunk({}, "stop"),
        b"data: " + json.dumps(usage).encode() + b"\n\n",
        b"data: [DONE]\n\n",
    ]


def _head(status: int, kind: str, length: int | None, extra: tuple[str, ...] = ()) -> bytes:
    reason = {200: "OK", 500: "Internal Server Error", 404: "Not Found"}.get(status, "Error")
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {kind}", "Connection: keep-alive"]
    lines.extend(extra)
    if length is None:
        lines.append("Transfer-Encoding: chunked")
    else:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _frame(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            length = 0
            headers: dict[str, str] = {}
            while True:
                header = await reader.readline()
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            raw = await reader.readexactly(length) if length else b"{}"
            body = json.loads(raw or b"{}")
            body["_headers"] = headers
            if not await _answer(line.decode("latin-1"), body, writer):
                return
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
        return
    finally:
        writer.close()


async def _answer(line: str, body: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
    """Write one response; False when the connection must be dropped."""
    if "/chat/completions" not in line:
        payload = b'{"error": {"message": "not found"}}'
        writer.write(_head(404, "application/json", len(payload)) + payload)
        await writer.drain()
        return True
    mode = str(body.get("model") or "")
    CALLS[mode] += 1
    if mode == "slow":
        await asyncio.sleep(30)
    failure = _failure(mode, body)
    if failure is not None:
        writer.write(failure)
        await writer.drain()
        return True
    if mode == "fail-500":
        payload = json.dumps({"error": {"message": "the stub fell over", "type": "server_error"}})
        data = payload.encode()
        writer.write(_head(500, "application/json", len(data)) + data)
        await writer.drain()
        return True
    if mode == "turns":
        writer.write(_turn(body))
        await writer.drain()
        return True
    if not body.get("stream"):
        data = json.dumps(_completion(mode, mode == "call")).encode()
        writer.write(_head(200, "application/json", len(data)) + data)
        await writer.drain()
        return True
    chunks = _stream_chunks(mode)
    if mode in ("cut", "cut-call"):
        writer.write(_head(200, "text/event-stream", None) + b"".join(_frame(c) for c in chunks))
        await writer.drain()
        writer.transport.abort()  # no terminating chunk: the peer sees a cut body
        return False
    if mode in ("stall", "drip", "drip-call"):
        writer.write(_head(200, "text/event-stream", None) + _frame(chunks[0] + chunks[1]))
        await writer.drain()
        for chunk in chunks[2:]:
            await asyncio.sleep(30 if mode == "stall" else 0.3)
            writer.write(_frame(chunk))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True
    writer.write(_head(200, "text/event-stream", None) + _frame(b"".join(chunks)) + b"0\r\n\r\n")
    await writer.drain()
    return True


def _error(status: int, message: str, extra: tuple[str, ...] = ()) -> bytes:
    data = json.dumps({"error": {"message": message, "type": "error"}}).encode()
    return _head(status, "application/json", len(data), extra) + data


def _failure(mode: str, body: dict[str, Any]) -> bytes | None:
    """The whole response for a mode that fails at once, else None."""
    auth = body["_headers"].get("authorization", "")
    if mode == "fail-429":
        return _error(429, "Rate limit reached, slow down", ("Retry-After: 7",))
    if mode == "fail-401":
        return _error(401, f"Incorrect API key provided: {auth.partition(' ')[2]}")
    if mode == "echo-key":
        return _error(500, f"internal error while serving {auth}")
    if mode == "schema-400" and body.get("response_format"):
        return _error(400, "failed to convert the JSON schema to a grammar")
    if mode == "not-json":
        data = b"<html><body>502 Bad Gateway</body></html>"
        return _head(200, "text/html", len(data)) + data
    return None


# The tool the stub calls, as an OpenAI client offers it (shared by the proxy tests).
WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
RESULT = "sunny, 21 C"
ANSWER = "It is sunny in Paris."


def _turn(body: dict[str, Any]) -> bytes:
    """The "turns" mode: what to answer is read from the request's history alone."""
    messages = body.get("messages") or []
    answered = any(RESULT in json.dumps(m.get("content")) for m in messages)
    native = bool(body.get("tools"))
    if native and not answered:
        reply = _completion("turns", calls=True)
    else:
        reply = _completion("turns", calls=False)
        if not native:  # the prompt engine's JSON action format
            action = {"tool": "get_weather", "args": {"city": "Paris"}}
            text = {"final": {"content": ANSWER}} if answered else {"action": action}
            reply["choices"][0]["message"]["content"] = json.dumps(text)
        else:
            reply["choices"][0]["message"]["content"] = ANSWER
    if not body.get("stream"):
        data = json.dumps(reply).encode()
        return _head(200, "application/json", len(data)) + data
    message = reply["choices"][0]["message"]
    if message.get("tool_calls"):
        chunks = _stream_chunks("call")
    else:
        content = message["content"]
        chunks = [_chunk({"role": "assistant", "content": content}), _chunk({}, "stop")]
        chunks.append(b"data: [DONE]\n\n")
    return _head(200, "text/event-stream", None) + _frame(b"".join(chunks)) + b"0\r\n\r\n"


class StubUpstream:
    """The stub on 127.0.0.1 in a thread of its own (its own event loop)."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(_handle, "127.0.0.1", self.port, backlog=1024)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def start(self) -> StubUpstream:
        self._thread.start()
        self._ready.wait(10)
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def calls(self, mode: str) -> int:
        """Requests answered in `mode` so far (this process's stubs together)."""
        return CALLS[mode]

    def stop(self) -> None:
        """Cancel the handlers still sleeping (slow, stall), then stop the loop."""

        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._loop.stop()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop)
        self._thread.join(10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _main(port: int) -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", port, backlog=1024)
    print(f"stub listening on {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_main(int(sys.argv[1])))
