"""Notebook display: contexts, thunks and diagnostics as readable, escaped HTML."""

from __future__ import annotations

import parlay
from parlay.backends.scripted import ScriptedBackend, calls
from parlay.context import Context, ToolResult, UserMessage
from parlay.diagnostics import Diagnostics, RetryRecord


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_context_shows_its_turns_with_each_call_folded_under_its_turn() -> None:
    session = parlay.Session(
        ScriptedBackend([calls(("add", {"a": 2, "b": 3})), "It is 5."]), tools=[add]
    )
    answer = session.query({"a": 2, "b": 3}, "What is a + b?")
    assert answer.value == "It is 5."
    html = session.ctx._repr_html_()
    assert html.index("What is a + b?") < html.index("<details>") < html.index("It is 5.")
    call_part = html[html.index("<details>") : html.index("</details>")]
    assert "<code>add</code>" in call_part and "&quot;a&quot;: 2" in call_part
    assert "<pre>5</pre>" in call_part  # the result sits with its call


def test_a_thunk_shows_its_steps_and_its_diagnostics() -> None:
    session = parlay.Session(
        ScriptedBackend([calls(("add", {"a": 1, "b": 1})), "Two."]), tools=[add]
    )
    answer = session.query({"a": 1}, "1 + 1?")
    answer.value  # noqa: B018
    html = answer._repr_html_()
    assert "<code>add</code>" in html and "Two." in html


def test_a_pending_thunk_says_so_and_prints_its_text_once_computed() -> None:
    reply = parlay.Session(ScriptedBackend(["Hello."])).chat("hi")
    assert "pending" in reply._repr_html_()
    assert "pending" in str(reply)
    reply.value  # noqa: B018
    assert str(reply) == "Hello."


def test_diagnostics_list_retries_with_their_reasons() -> None:
    diagnostics = Diagnostics(
        contract_injected=True,
        action_format="json",
        retries=(RetryRecord("missed_tool", "the request names what get_weather does"),),
        notes=("kept a call",),
        rules=("missed_tool", "kept_insisted_value"),
    )
    html = diagnostics._repr_html_()
    assert "retry 1" in html and "missed_tool: the request names what get_weather does" in html
    assert "kept a call" in html
    assert "rules that acted" in html and "missed_tool, kept_insisted_value" in html


def test_what_a_model_or_user_wrote_is_escaped() -> None:
    ctx = Context([UserMessage("<script>alert(1)</script>")]).insert(
        ToolResult("c1", "x", output="<b>not bold</b>")
    )
    html = ctx._repr_html_()
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "<b>not bold</b>" not in html
