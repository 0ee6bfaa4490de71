import pytest

from parlay import (
    AssistantMessage,
    Context,
    Instruction,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)


def test_insert_returns_new_context_and_leaves_the_old_one_alone():
    empty = Context()
    one = empty.insert(UserMessage("hi"))
    two = one.insert(AssistantMessage("hello"))
    assert len(empty) == 0 and len(one) == 1 and len(two) == 2
    assert list(one) == [UserMessage("hi")]
    assert list(two) == [UserMessage("hi"), AssistantMessage("hello")]
    assert two.last == AssistantMessage("hello")
    assert empty.last is None


def test_insert_shares_every_earlier_item():
    base = Context([SystemMessage("s"), UserMessage("u")])
    left = base.insert(AssistantMessage("a"))
    right = base.insert(AssistantMessage("b"))
    assert left.parent is base and right.parent is base
    assert left.shares(base) and right.shares(base)
    assert not left.shares(right)
    # The very same item objects, not copies.
    assert left.items()[0] is right.items()[0]


def test_context_cannot_be_mutated():
    ctx = Context([UserMessage("u")])
    with pytest.raises(AttributeError, match="immutable"):
        ctx._item = UserMessage("x")  # type: ignore[misc]
    with pytest.raises(AttributeError):
        UserMessage("u").content = "x"  # type: ignore[misc]


def test_insert_rejects_what_is_not_an_item():
    with pytest.raises(TypeError, match="UserMessage"):
        Context().insert("plain text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="int"):
        Context().insert(3)  # type: ignore[arg-type]


def test_iteration_is_oldest_first_and_indexing_works():
    ctx = Context(UserMessage(str(i)) for i in range(5))
    assert [m.content for m in ctx] == ["0", "1", "2", "3", "4"]
    assert ctx[0] == UserMessage("0") and ctx[-1] == UserMessage("4")
    assert [m.content for m in ctx.reversed_items()] == ["4", "3", "2", "1", "0"]


def test_loose_tool_calls_join_the_assistant_turn_before_them():
    call_a = ToolCall("a", {"x": 1}, id="c1")
    call_b = ToolCall("b", {}, id="c2")
    ctx = Context([UserMessage("u"), AssistantMessage("thinking"), call_a, call_b])
    ctx = ctx.insert(ToolResult("c1", "a", output="1")).insert(call_b)
    messages = ctx.messages()
    assert messages[1] == AssistantMessage("thinking", (call_a, call_b))
    assert messages[2] == ToolResult("c1", "a", output="1")
    assert messages[3] == AssistantMessage("", (call_b,))
    assert ctx.find_call("c1") == call_a
    assert ctx.find_call("nope") is None


def test_messages_extend_the_rendering_of_an_ancestor():
    ctx = Context([UserMessage("1")])
    first = ctx.messages()
    later = ctx.insert(AssistantMessage("2")).insert(UserMessage("3"))
    assert later.messages() == (*first, AssistantMessage("2"), UserMessage("3"))
    # The ancestor still renders the same after its rendering was reused.
    assert ctx.messages() == first


def test_instruction_component_renders_through_its_template():
    item = Instruction.instruct(
        "Summarize the text.",
        requirements=["one sentence"],
        grounding={"text": "Cats sleep a lot."},
    )
    (message,) = Context([item]).messages()
    assert isinstance(message, UserMessage)
    assert message.content.startswith("Summarize the text.")
    assert "- one sentence" in message.content
    assert "[text]\nCats sleep a lot." in message.content


def test_tool_result_content_spells_out_errors():
    assert ToolResult("c", "t", output="ok").content == "ok"
    failed = ToolResult("c", "t", error="boom")
    assert failed.is_error and failed.content == "Error: boom"
