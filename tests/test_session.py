import asyncio

import pytest
from pydantic import BaseModel

from parlay import (
    AssistantMessage,
    InvalidRequestError,
    ScriptedBackend,
    Session,
    SessionToolCallingProtocol,
    SystemMessage,
    ToolCall,
    ToolChainLimitError,
    ToolResult,
    UserMessage,
    tool,
)
from parlay.backends.scripted import calls


@tool
def secret_number(name: str) -> int:
    """The secret number of a person (the model cannot know it)."""
    return {"ada": 7321, "bob": 12}[name]


def test_chat_inserts_input_and_output_and_does_not_run_tools():
    call = ToolCall("secret_number", {"name": "ada"}, id="c1")
    backend = ScriptedBackend(["hi there", AssistantMessage("", (call,))])
    session = Session(backend, tools=[secret_number], system="Be brief.")
    first = session.chat("hello")
    assert first.value == "hi there"
    second = session.chat("ada's number?")
    assert second.tools == (call,)
    assert session.ctx.messages() == (
        SystemMessage("Be brief."),
        UserMessage("hello"),
        AssistantMessage("hi there"),
        UserMessage("ada's number?"),
        AssistantMessage("", (call,)),
    )
    # The second request carried the first turn and the tool specs.
    request = backend.requests[1]
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "user"]
    assert [spec.name for spec in request.tools] == ["secret_number"]


def test_verbs_are_lazy_and_chain_in_order():
    backend = ScriptedBackend(lambda request: f"reply {len(request.messages)}")
    session = Session(backend)
    first = session.chat("one")
    second = session.chat("two")
    assert backend.requests == []
    # Forcing the second computes the first before it.
    assert second.value == "reply 3"
    assert first.value == "reply 1"
    assert [m.content for m in session.ctx.messages()] == ["one", "reply 1", "two", "reply 3"]


def test_transform_runs_the_tool_loop_until_the_model_answers():
    backend = ScriptedBackend([calls(("secret_number", {"name": "ada"})), "Ada's number is 7321."])
    session = Session(backend, tools=[secret_number])
    thunk = session.transform("ada", "Replace the name by the person's secret number.")
    assert thunk.value == "Ada's number is 7321."
    assert thunk.tools == ()
    assistant, result = thunk.steps
    assert (
        isinstance(assistant, AssistantMessage) and assistant.tool_calls[0].name == "secret_number"
    )
    assert isinstance(result, ToolResult) and result.output == "7321"
    # The second request carried the call and its result.
    assert backend.requests[1].messages[-1] == result
    roles = [m.role for m in session.ctx.messages()]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_query_loop_feeds_tool_errors_back_to_the_model():
    backend = ScriptedBackend([calls(("secret_number", {"name": "zed"})), "I could not find it."])
    thunk = Session(backend, tools=[secret_number]).query({"person": "zed"}, "What is the number?")
    assert thunk.value == "I could not find it."
    errors = [m.error for m in thunk.steps if isinstance(m, ToolResult)]
    assert errors == ["KeyError: 'zed'"]


def test_a_session_never_runs_a_call_to_a_tool_it_does_not_have():
    """A backend (here one of your own) that calls a tool the session lacks: the call
    is neither run nor returned; the turn ends as an answer naming the tool."""
    backend = ScriptedBackend(
        [calls(("secret_number", {"name": "ada"}), ("secret_nmber", {})), "unused"]
    )
    thunk = Session(backend, tools=[secret_number]).query({"person": "ada"}, "The number?")
    results = [m for m in thunk.steps if isinstance(m, ToolResult)]
    assert [r.name for r in results] == ["secret_number"]  # the offered one still ran
    assert "secret_nmber" not in [c.name for c in thunk.tools]
    backend = ScriptedBackend([calls(("secret_nmber", {})), "unused"])
    thunk = Session(backend, tools=[secret_number]).query({"person": "ada"}, "The number?")
    assert thunk.tools == () and thunk.steps == ()
    assert "secret_nmber" in thunk.value and "not available" in thunk.value
    assert thunk.diagnostics.unoffered_tools == ("secret_nmber",)
    assert len(backend.requests) == 1  # nothing ran, so nothing was asked again


def test_chain_limit_raises_with_the_history_so_far():
    backend = ScriptedBackend(lambda request: calls(("secret_number", {"name": "bob"})))
    session = Session(backend, tools=[secret_number], chain_limit=2)
    before = session.ctx
    thunk = session.transform("bob", "Loop forever.")
    with pytest.raises(ToolChainLimitError, match="after 2 rounds") as caught:
        _ = thunk.value
    history = caught.value.context.messages()
    assert [m.role for m in history] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert caught.value.limit == 2
    # The failed turn is not left half-written in the session.
    assert session.ctx is before


def test_forced_tool_choice_applies_to_the_first_round_only():
    backend = ScriptedBackend([calls(("secret_number", {"name": "bob"})), "12"])
    session = Session(backend, tools=[secret_number])
    assert session.query("bob", "number?", tool_choice="secret_number").value == "12"
    assert backend.requests[0].tool_choice.mode == "tool"
    assert backend.requests[1].tool_choice.mode == "auto"


def test_unknown_tool_choice_is_a_clear_error():
    session = Session(ScriptedBackend([]), tools=[secret_number])
    with pytest.raises(
        InvalidRequestError, match="'nope', which is not one of this session's tools"
    ):
        session.chat("x", tool_choice="nope")


def test_manual_insert_workflow():
    call = ToolCall("secret_number", {"name": "ada"}, id="c1")
    backend = ScriptedBackend([AssistantMessage("", (call,)), "It is 7321."])
    session = Session(backend, tools=[secret_number])
    thunk = session.chat("What is ada's number?")
    (asked,) = thunk.tools
    session.ctx = session.ctx.insert(ToolResult(asked.id, asked.name, output="7321"))
    assert session.respond().value == "It is 7321."
    assert backend.requests[1].messages[-1] == ToolResult("c1", "secret_number", output="7321")


class ApprovingSession(SessionToolCallingProtocol, Session):
    """Denies calls for bob and caches results."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cache: dict[str, ToolResult] = {}
        self.asked: list[str] = []

    def call_tool(self, call):
        self.asked.append(call.arguments["name"])
        if call.arguments["name"] == "bob":
            return self.tool_call_result(call, PermissionError("denied by the user"))
        key = call.arguments_json
        if key in self.cache:
            return self.tool_call_result(call, self.cache[key].output)
        result = super().call_tool(call)
        self.cache[key] = result
        return result


def test_protocol_mixin_records_calls_and_results_in_the_context():
    session = ApprovingSession(ScriptedBackend([]), tools=[secret_number])
    call = ToolCall("secret_number", {"name": "ada"}, id="c1")
    result = session.call_tool(call)
    assert result.output == "7321"
    assert session.ctx.messages() == (AssistantMessage("", (call,)), result)
    produced = session.tool_call_result(ToolCall("secret_number", {"name": "x"}, id="c2"), 5)
    assert produced.output == "5" and session.ctx.last == produced


def test_protocol_hooks_apply_inside_the_tool_loop():
    backend = ScriptedBackend(
        [
            calls(("secret_number", {"name": "ada"}), ("secret_number", {"name": "bob"})),
            calls(("secret_number", {"name": "ada"})),
            "done",
        ]
    )
    session = ApprovingSession(backend, tools=[secret_number])
    thunk = session.query("ada and bob", "numbers?")
    assert thunk.value == "done"
    results = [m for m in thunk.steps if isinstance(m, ToolResult)]
    assert [r.output or r.error for r in results] == [
        "7321",
        "PermissionError: denied by the user",
        "7321",
    ]
    assert session.asked == ["ada", "bob", "ada"]
    assert len(session.cache) == 1
    # The loop recorded the round in its turn, not a second time in the context.
    assert [m.role for m in session.ctx.messages()].count("tool") == 3


async def test_async_twins_and_fork():
    backend = ScriptedBackend(lambda request: request.messages[-1].content.upper())
    session = Session(backend)
    thunk = await session.achat("hello")
    assert thunk.is_computed and thunk.value == "HELLO"
    fork = session.fork()
    left = await fork.achat("left")
    right = await session.achat("right")
    assert (left.value, right.value) == ("LEFT", "RIGHT")
    assert fork.ctx.parent.parent.shares(session.ctx.parent.parent)
    assert len(fork.ctx) == len(session.ctx) == 4


async def test_concurrent_async_verbs_keep_turn_order():
    backend = ScriptedBackend(lambda request: f"after {request.messages[-1].content}")
    session = Session(backend)
    first = session.chat("a")
    second = session.chat("b")
    await asyncio.gather(second._await(), first._await())
    assert [m.content for m in session.ctx.messages()] == ["a", "after a", "b", "after b"]


class Answer(BaseModel):
    city: str
    population: int


def test_format_sets_a_json_schema_and_parses_the_reply():
    backend = ScriptedBackend(['{"city": "Oslo", "population": 709000}'])
    thunk = Session(backend).instruct("Describe Oslo.", format=Answer)
    assert thunk.parsed == Answer(city="Oslo", population=709000)
    fmt = backend.requests[0].response_format
    assert fmt is not None and fmt.schema["required"] == ["city", "population"]


def test_the_old_positional_form_is_a_clear_error():
    # `Session(backend, [add])` used to take the list as the context and fail much later.
    with pytest.raises(TypeError, match=r"tools=\[\.\.\.\]"):
        Session(ScriptedBackend(["hi"]), [len])


def test_a_hook_is_found_by_plain_method_resolution_in_any_base_order():
    # Once a base-order check refused `(Session, SessionToolCallingProtocol)`, and the
    # loop sniffed which hook was overridden; now every Session has the hooks.
    seen: list[str] = []

    class Plain(Session):
        def call_tool(self, call: ToolCall) -> ToolResult:
            seen.append(f"plain {call.arguments['name']}")
            return super().call_tool(call)

    class Backwards(Session, SessionToolCallingProtocol):
        async def acall_tool(self, call: ToolCall) -> ToolResult:
            seen.append(f"backwards {call.arguments['name']}")
            return await super().acall_tool(call)

    for kind, name in ((Plain, "ada"), (Backwards, "bob")):
        backend = ScriptedBackend([calls(("secret_number", {"name": name})), "done"])
        reply = kind(backend, tools=[secret_number]).query("x", "go")
        assert [m.output for m in reply.steps if isinstance(m, ToolResult)] == [
            "7321" if name == "ada" else "12"
        ]
    assert seen == ["plain ada", "backwards bob"]
    assert Backwards(ScriptedBackend(["hi"])).call_tools([]) == []


def test_a_result_formatting_hook_applies_to_the_loop_and_to_tool_result():
    class Marked(Session):
        def tool_call_result(self, call: ToolCall, result: object) -> ToolResult:
            # The loop hands over the tool's ToolResult; by hand, any value.
            text = result.output if isinstance(result, ToolResult) else result
            return super().tool_call_result(call, f"<{text}>")

    backend = ScriptedBackend([calls(("secret_number", {"name": "ada"})), "done"])
    session = Marked(backend, tools=[secret_number])
    reply = session.query("x", "go")
    [result] = [m for m in reply.steps if isinstance(m, ToolResult)]
    assert result.output == "<7321>"
    assert [m.role for m in session.ctx.messages()].count("tool") == 1  # in the turn only
    session.tool_result(ToolCall("secret_number", {"name": "x"}, id="m1"), "seven")
    assert session.ctx.last == ToolResult("m1", "secret_number", output="<seven>", value="<seven>")


def test_chat_with_run_tools_runs_the_loop_through_the_protocol_hooks():
    # The loop `query` runs, for a plain user message: the CLI's turns go through it.
    seen: list[str] = []

    class Audited(SessionToolCallingProtocol, Session):
        def call_tool(self, call: ToolCall) -> ToolResult:
            seen.append(call.name)
            return super().call_tool(call)

    backend = ScriptedBackend([calls(("secret_number", {"name": "bob"})), "bob's is 12"])
    session = Audited(backend, tools=[secret_number])
    reply = session.chat("bob's number?", run_tools=True)
    assert reply.value == "bob's is 12"
    assert seen == ["secret_number"]
    call, result = reply.steps[0].tool_calls[0], reply.steps[1]
    assert (call.name, result.output) == ("secret_number", "12")
    # One turn: the user message and the thunk, whose messages hold every round.
    assert session.ctx.messages()[-1] == AssistantMessage("bob's is 12")


def test_chat_with_run_tools_stops_at_the_chain_limit():
    backend = ScriptedBackend([calls(("secret_number", {"name": "bob"}))] * 3)
    session = Session(backend, tools=[secret_number])
    with pytest.raises(ToolChainLimitError) as caught:
        session.chat("again and again", run_tools=True, chain_limit=1).value  # noqa: B018
    assert caught.value.limit == 1
