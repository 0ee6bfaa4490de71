"""Tokens that hold part of a multi-byte character keep their exact bytes through the proxy.

The payload is llama.cpp's own (data/llamacpp_multibyte_logprobs.json, recorded from its
server with SmolLM2): it merges the tokens of one character into one entry whose text is
whole, but each alternative is a single token whose text is a stand-in ("�" for a
continuation byte, "" for the first two bytes of "！") beside its exact `bytes`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from parlay.events import Event, ScoredTextDelta, TextDelta, TokenChoice
from parlay.wire import openai_client as client
from parlay.wire import openai_server as server
from parlay.wire.reply import gather

RECORDED = json.loads(
    (Path(__file__).parent / "data" / "llamacpp_multibyte_logprobs.json").read_text("utf-8")
)
TOP = RECORDED["request"]["top_logprobs"]


def without_ids(entry: dict[str, Any]) -> dict[str, Any]:
    """A `logprobs.content` entry as the proxy sends it: llama.cpp's token ids are not kept."""
    out = {key: value for key, value in entry.items() if key != "id"}
    if "top_logprobs" in out:
        out["top_logprobs"] = [without_ids(alt) for alt in out["top_logprobs"]]
    return out


def upstream_entries(choice: dict[str, Any]) -> list[dict[str, Any]]:
    return [without_ids(entry) for entry in choice["logprobs"]["content"]]


def decoded_whole() -> list[Event]:
    return list(client.decode_response(RECORDED["whole"]))


def decoded_stream() -> list[Event]:
    decoder = client.StreamDecoder()
    events = [event for chunk in RECORDED["stream"] for event in decoder.feed(chunk)]
    return [*events, *decoder.finish()]


def scored_tokens(events: list[Event]) -> tuple[TokenChoice, ...]:
    return tuple(t for e in events if isinstance(e, ScoredTextDelta) for t in e.tokens)


def joined_text(tokens: tuple[TokenChoice, ...]) -> str:
    return b"".join(t.exact_bytes() for t in tokens).decode()


# -- decoding --------------------------------------------------------------------------------


def test_whole_response_keeps_the_bytes_the_text_cannot_say() -> None:
    tokens = scored_tokens(decoded_whole())
    content = RECORDED["whole"]["choices"][0]["message"]["content"]
    assert content == "你好," and joined_text(tokens) == content
    # llama.cpp's merged entries have whole text: nothing more to keep for them.
    assert [t.bytes for t in tokens] == [None, None, None]
    assert [t.top for t in tokens][2] == ((",", -0.9560645818710327), ("", -1.496517539024353))
    assert [t.top_bytes for t in tokens] == [
        (b"\xa0", b"\xa2"),
        (b"\xbd", b"\xb3"),
        (None, b"\xef\xbc"),  # "," says its bytes; "" stands for the start of "！"
    ]
    first = tokens[0]
    assert [exact for _, _, exact in first.top_with_bytes()] == [b"\xa0", b"\xa2"]
    assert first.exact_bytes().endswith(b"\xa0")  # the chosen alternative is its last token


def test_streamed_chunks_give_the_same_tokens_as_the_whole_response() -> None:
    streamed = decoded_stream()
    texts = [e for e in streamed if isinstance(e, TextDelta)]
    assert [e.text for e in texts] == ["你", "好", ","]
    assert all(isinstance(e, ScoredTextDelta) for e in texts)
    assert scored_tokens(streamed) == scored_tokens(decoded_whole())


@pytest.mark.parametrize(
    "raw",
    [None, "oA==", [256], [-1], [True], [1.5], {"0": 160}],
    ids=["null", "base64", "over_255", "negative", "bool", "float", "object"],
)
def test_bytes_in_a_shape_not_known_are_not_kept(raw: Any) -> None:
    entry = {"token": "�", "logprob": -0.5, "bytes": raw, "top_logprobs": []}
    assert client.decode_token_bytes(entry) is None
    assert client.decode_token(entry) == TokenChoice("�", -0.5)


def test_a_lone_surrogate_in_the_text_does_not_break_decoding() -> None:
    entry = json.loads('{"token": "\\ud83c", "logprob": -1, "bytes": [240, 159, 140]}')
    assert client.decode_token_bytes(entry) == b"\xf0\x9f\x8c"


# -- encoding --------------------------------------------------------------------------------


def test_whole_response_sends_back_exactly_what_the_upstream_sent(snapshot: Any) -> None:
    encoded = server.encode_response(
        gather(decoded_whole()), model="m", id="chatcmpl-1", created=1, top_logprobs=TOP
    )
    assert encoded == snapshot
    choice = encoded["choices"][0]
    assert choice["logprobs"]["content"] == upstream_entries(RECORDED["whole"]["choices"][0])
    rebuilt = bytes(b for entry in choice["logprobs"]["content"] for b in entry["bytes"])
    assert rebuilt.decode() == choice["message"]["content"]


def test_stream_sends_back_exactly_what_the_upstream_sent(snapshot: Any) -> None:
    encoder = server.StreamEncoder(model="m", top_logprobs=TOP, id="chatcmpl-1", created=1)
    chunks = encoder.start()
    for event in decoded_stream():
        chunks.extend(encoder.feed(event))
    assert chunks == snapshot
    sent = [c["choices"][0] for c in chunks if c["choices"][0]["delta"].get("content")]
    received = [c["choices"][0] for c in RECORDED["stream"] if c["choices"][0]["delta"]]
    assert [upstream_entries(c) for c in sent] == [upstream_entries(c) for c in received]


def test_exact_bytes_round_trip_through_the_client_codec() -> None:
    """What the proxy writes, parlay's own client codec reads back as the same tokens."""
    whole = server.encode_response(gather(decoded_whole()), model="m", top_logprobs=TOP)
    assert scored_tokens(list(client.decode_response(whole))) == scored_tokens(decoded_whole())


def test_chosen_tokens_without_text_of_their_own_keep_their_bytes() -> None:
    """llama.cpp merges a character's tokens; OpenAI sends each with a `bytes:` stand-in."""
    entries = [
        {"token": "bytes:\\xe4\\xbd", "logprob": -0.5, "bytes": [228, 189], "top_logprobs": []},
        {"token": "bytes:\\xa0", "logprob": -0.1, "bytes": [160], "top_logprobs": []},
    ]
    tokens = client.decode_tokens({"logprobs": {"content": entries}})
    assert [t.bytes for t in tokens] == [b"\xe4\xbd", b"\xa0"]
    assert joined_text(tokens) == "你"
    encoded = server.encode_logprobs(tokens, 0)
    assert encoded is not None and encoded["content"] == entries


def test_without_kept_bytes_the_text_gives_them() -> None:
    """Tokens made without bytes (scripted backends, other upstreams) encode as before."""
    token = TokenChoice(" café", -2.0, ((" café", -2.0), ("!", -3.0)))
    encoded = server.encode_logprobs([token], 2)
    assert encoded is not None
    (entry,) = encoded["content"]
    assert entry["bytes"] == list(" café".encode())
    assert [alt["bytes"] for alt in entry["top_logprobs"]] == [list(" café".encode()), [33]]


def test_top_bytes_must_match_the_alternatives() -> None:
    with pytest.raises(ValueError, match="`top_bytes` has 1 entries for 2 alternatives"):
        TokenChoice("a", -0.1, (("a", -0.1), ("b", -2.0)), top_bytes=(b"a",))
