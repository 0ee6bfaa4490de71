"""Values the conversation never gave: the grounding checks and the retries they start."""

from __future__ import annotations

import json

import pytest

from parlay.context import AssistantMessage, SystemMessage, ToolResult, UserMessage
from parlay.engine.backend import PromptedBackend
from parlay.engine.contract.examples import EXAMPLE_RESULT
from parlay.engine.contract.grounding import (
    Grounds,
    copied_answer,
    echoes,
    invented_value,
)
from parlay.request import ChatRequest, ToolSpec

from .conftest import CALL, TOOLS, WEATHER
from .prompted_kit import PLAIN_SCHEMA, ask, block, calls_of, run, scripted, text_of

SHOW = ToolSpec(
    "book_show",
    "Book seats for a show.",
    {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "seats": {"type": "array", "items": {"type": "string"}},
            "section": {"type": "string", "enum": ["stalls", "circle"]},
            "note": {"type": "string"},
            "currency": {"type": "string", "default": "EUR"},
        },
        "required": ["title", "seats", "section", "currency"],
    },
)


def invented(arguments: dict, *said: str, spec: ToolSpec = SHOW) -> str:
    """The argument found invented, or ""."""
    found = invented_value(arguments, spec, Grounds(tuple(UserMessage(text) for text in said)))
    return found[0] if found else ""


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("Hamlet", "Two seats for hamlet tonight"),  # case
        ("Hamlet at the Globe", "Two seats for Hamlet"),  # half the words, fillers aside
        ("brownies", "a vegan brownie recipe"),  # plural
        ("Italian", "somewhere in Italy"),  # shared stem
        ("Canada", "I am Canadian"),
    ],
)
def test_a_value_with_a_word_the_user_wrote_is_grounded(value: str, said: str) -> None:
    assert invented({"title": value}, said) == ""


def test_a_value_no_one_wrote_is_named_by_its_argument() -> None:
    assert invented({"title": "string1"}, "Make me some python code") == "title"
    assert invented({"title": "Hamlet", "seats": ["A1", "Z9"]}, "Hamlet, seats A1") == "seats"


def test_words_that_only_start_alike_do_not_ground() -> None:
    assert invented({"title": "interface"}, "an international call") == "title"
    # Words with digits match only as themselves: "strings" does not ground "string1".
    assert invented({"title": "string1"}, "concatenate two strings") == "title"


def test_a_value_mostly_made_up_is_invented_though_one_word_was_said() -> None:
    url = "https://example.com/api/interfaces"
    assert invented({"title": url}, "How do I get details for an interface?") == "title"


def test_choices_defaults_and_optional_arguments_need_no_grounding() -> None:
    arguments = {"title": "Hamlet", "section": "stalls", "currency": "USD", "note": "aisle"}
    assert invented(arguments, "Hamlet please") == ""


def test_results_system_text_and_earlier_answers_ground_values() -> None:
    grounds = Grounds(
        (
            SystemMessage("The user lives in Lyon."),
            UserMessage("What is on near me?"),
            AssistantMessage("", (CALL,)),
            ToolResult("call_1", "get_weather", '{"show": "Cyrano"}'),
            AssistantMessage("Cyrano is on; shall I book it?"),
        )
    )
    assert invented_value({"city": "Lyon"}, WEATHER, grounds) is None
    assert invented_value({"title": "Cyrano"}, SHOW, grounds) is None
    # A call's own arguments are not something anyone said.
    assert invented_value({"city": "Rome"}, WEATHER, grounds) == ("city", "Rome")


def test_a_conversation_outside_the_latin_script_is_not_checked() -> None:
    # "Beijing" may be the user's 北京, translated: word matching cannot tell.
    assert invented({"title": "Beijing opera"}, "北京的京剧演出") == ""
    assert invented({"title": "Boris Godunov"}, "Билеты на Бориса Годунова") == ""


USER = ToolSpec(
    "fetch_user_details",
    "Retrieve a user by id.",
    {
        "type": "object",
        "properties": {
            "user_id": {"type": "integer"},
            "paid": {"type": "number"},
            "limit": {"type": "integer"},
        },
        "required": ["user_id", "paid", "limit"],
    },
)


@pytest.mark.parametrize("key", ["user_id", "userId", "orderID", "id"])
def test_a_numeric_id_no_one_wrote_is_invented_in_any_script(key: str) -> None:
    spec = ToolSpec("f", "", {"properties": {key: {"type": "integer"}}, "required": [key]})
    assert invented({key: 1}, "获取武汉的天气", spec=spec) == key
    assert invented({key: 43523}, "Update user 43523's email", spec=spec) == ""
    assert invented({key: 7}, "用户7的资料", spec=spec) == ""


PRODUCT = ToolSpec(
    "get_product_details",
    "Details of one product.",
    {
        "type": "object",
        "properties": {"item_id": {"type": "string"}, "size": {"type": "string"}},
        "required": ["item_id"],
    },
)


def test_a_string_id_written_as_a_phrase_is_no_id() -> None:
    # Qwen's call for "Kak rok shimmer nya ada size XL ga?" ("is the shimmer skirt in XL?"):
    # every word was the user's, and none of them is an id.
    asked = "Kak rok shimmer nya ada size XL ga?"
    assert invented({"item_id": "Kak rok shimmer nya"}, asked, spec=PRODUCT) == "item_id"
    # Ids as people write them: one word, or with digits.
    assert invented({"item_id": "shimmer-skirt"}, "the shimmer-skirt in XL", spec=PRODUCT) == ""
    assert invented({"item_id": "SKU 42 red"}, "is SKU 42 red in stock?", spec=PRODUCT) == ""
    # Other arguments may be phrases.
    assert invented({"title": "Hamlet at the Globe"}, "Hamlet at the Globe") == ""


def test_numbers_not_named_as_ids_may_be_worked_out() -> None:
    # "three nights", "half of it": other numbers are left to the model.
    arguments = {"user_id": 12, "paid": 4.5, "limit": 3}
    assert invented(arguments, "User 12 paid four and a half; show three") == ""


async def test_a_made_up_id_under_auto_is_retried_like_a_made_up_word() -> None:
    inner = scripted(
        block("fetch_user_details", user_id=1, paid=1, limit=1), "Which user do you mean?"
    )
    request = ask("Show me the user's details", tools=(USER,))
    events, finish = await run(PromptedBackend(inner), request)
    assert calls_of(events) == []
    assert [(r.reason, r.detail) for r in finish.diagnostics.retries] == [
        ("invented_value", "user_id=1")
    ]


def test_an_answer_quoting_the_examples_result_is_caught_in_any_spacing() -> None:
    answers = frozenset({json.dumps(EXAMPLE_RESULT)})
    assert copied_answer('get_stock returned {"status":"done"}.', answers)
    assert copied_answer("The stock is 12 dollars.", answers) == ""


async def test_an_invented_value_under_auto_is_retried_with_a_way_out() -> None:
    inner = scripted(block("get_weather", city="Springfield"), "Which city do you mean?")
    events, finish = await run(PromptedBackend(inner), ask("Do a web search"))
    assert calls_of(events) == [] and text_of(events) == "Which city do you mean?"
    assert [(r.reason, r.detail) for r in finish.diagnostics.retries] == [
        ("invented_value", 'city="Springfield"')
    ]
    message = inner.requests[1].messages[-1].content
    assert "city that no one in this conversation gave" in message
    assert "answer in plain words" in message
    # Asked without the examples, which taught it to fill values in, and without the value.
    retry = inner.requests[1].messages
    assert [type(m).__name__ for m in retry] == ["SystemMessage", "UserMessage", "UserMessage"]
    assert "Springfield" not in message


async def test_a_second_made_up_value_leaves_only_an_answer_to_the_grammar() -> None:
    inner = scripted(
        block("get_weather", city="Springfield"),
        block("get_weather", city="Shelbyville"),
        '{"final": {"content": "Which city do you mean?"}}',
        caps=PLAIN_SCHEMA,
    )
    events, finish = await run(PromptedBackend(inner), ask("Do a web search"))
    assert calls_of(events) == [] and text_of(events) == "Which city do you mean?"
    assert [r.reason for r in finish.diagnostics.retries] == ["invented_value"] * 2
    assert [r.response_format.name for r in inner.requests] == ["action", "action", "final"]
    # The last try is the conversation itself, told not to call: no instruction to parrot.
    last = inner.requests[2].messages
    assert [type(m).__name__ for m in last] == ["SystemMessage", "UserMessage"]
    assert last[-1].content == "Do a web search"
    assert "must not call any tool" in last[0].content


@pytest.mark.parametrize("choice", ["required", "get_weather"])
async def test_a_forced_call_is_not_questioned_for_its_values(choice) -> None:
    inner = scripted(block("get_weather", city="Springfield"))
    events, finish = await run(PromptedBackend(inner), ask("Any weather", choice))
    assert calls_of(events) == [("get_weather", {"city": "Springfield"})]
    assert finish.diagnostics.retries == ()


async def test_an_answer_quoting_the_examples_made_up_result_is_asked_again_without_them() -> None:
    quoted = f"The result: {json.dumps(EXAMPLE_RESULT)}."
    inner = scripted(
        json.dumps({"final": {"content": quoted}}),
        json.dumps({"final": {"content": "I have no weather for you yet."}}),
        caps=PLAIN_SCHEMA,
    )
    events, finish = await run(PromptedBackend(inner), ask("Is it raining?"))
    assert text_of(events) == "I have no weather for you yet."
    assert [r.reason for r in finish.diagnostics.retries] == ["example_answer"]
    retry = inner.requests[1].messages
    assert [type(m).__name__ for m in retry] == ["SystemMessage", "UserMessage", "UserMessage"]
    assert "made-up result from the examples" in retry[-1].content


async def test_a_real_result_quoted_in_the_answer_is_no_copy() -> None:
    history = (
        UserMessage("Weather in Rome?"),
        AssistantMessage("", (CALL,)),
        ToolResult("call_1", "get_weather", json.dumps(EXAMPLE_RESULT)),
    )
    answer = f"get_weather returned {json.dumps(EXAMPLE_RESULT)}."
    inner = scripted(json.dumps({"final": {"content": answer}}), caps=PLAIN_SCHEMA)
    events, finish = await run(PromptedBackend(inner), ChatRequest(history, TOOLS))
    assert text_of(events) == answer and finish.diagnostics.retries == ()


async def test_check_values_off_lets_invented_and_copied_values_through() -> None:
    inner = scripted(block("get_weather", city="Springfield"))
    backend = PromptedBackend(inner, check_values=False)
    events, finish = await run(backend, ask("Do a web search"))
    assert calls_of(events) == [("get_weather", {"city": "Springfield"})]
    assert finish.diagnostics.retries == ()
    assert backend.configure(max_retries=1).check_values is False


async def test_a_made_up_call_after_a_quoted_made_up_result_gives_way_to_an_answer() -> None:
    # SmolLM2 on BFCL: an answer quoting the examples' result, then, asked without the
    # examples, a call with a value no one gave. Nothing real is left to call with.
    inner = scripted(
        json.dumps({"final": {"content": f"Done: {json.dumps(EXAMPLE_RESULT)}"}}),
        block("get_weather", city="Springfield"),
        json.dumps({"final": {"content": "Which city?"}}),
        caps=PLAIN_SCHEMA,
    )
    events, finish = await run(PromptedBackend(inner), ask("Is it raining?"))
    assert calls_of(events) == [] and text_of(events) == "Which city?"
    assert [r.reason for r in finish.diagnostics.retries] == ["example_answer", "invented_value"]
    assert [r.response_format.name for r in inner.requests] == ["action", "action", "final"]


async def test_a_made_up_result_given_as_a_tools_is_asked_again_about_that_tool() -> None:
    # Qwen on BFCL: "get_weather returned {"status": "done"}." It may have meant the call.
    pretended = f"get_weather returned {json.dumps(EXAMPLE_RESULT)}."
    inner = scripted(
        json.dumps({"final": {"content": pretended}}),
        block("get_weather", city="Rome"),
        caps=PLAIN_SCHEMA,
    )
    events, finish = await run(PromptedBackend(inner), ask("Is it raining in Rome?"))
    assert calls_of(events) == [("get_weather", {"city": "Rome"})] and text_of(events) == ""
    assert [(r.reason, r.detail) for r in finish.diagnostics.retries] == [
        ("pretended_call", "get_weather")
    ]
    retry = inner.requests[1]
    # Without the examples and without the reply; that tool's call or an answer.
    assert [type(m).__name__ for m in retry.messages] == [
        "SystemMessage",
        "UserMessage",
        "UserMessage",
    ]
    assert "If get_weather does what the user asks, call it" in retry.messages[-1].content
    schema = json.dumps(retry.response_format.schema)
    assert '"get_weather"' in schema and '"final"' in schema and '"add"' not in schema


async def test_a_pretended_call_can_end_in_an_answer() -> None:
    pretended = f"get_weather returned {json.dumps(EXAMPLE_RESULT)}."
    inner = scripted(
        json.dumps({"final": {"content": pretended}}),
        json.dumps({"final": {"content": "I can't tell from here."}}),
        caps=PLAIN_SCHEMA,
    )
    events, finish = await run(PromptedBackend(inner), ask("Is it raining in Rome?"))
    assert calls_of(events) == [] and text_of(events) == "I can't tell from here."
    assert [r.reason for r in finish.diagnostics.retries] == ["pretended_call"]


async def test_a_pretended_call_with_made_up_values_gives_way_to_an_answer() -> None:
    pretended = f"get_weather returned {json.dumps(EXAMPLE_RESULT)}."
    inner = scripted(
        json.dumps({"final": {"content": pretended}}),
        block("get_weather", city="Springfield"),
        json.dumps({"final": {"content": "Which city?"}}),
        caps=PLAIN_SCHEMA,
    )
    events, finish = await run(PromptedBackend(inner), ask("Is it raining?"))
    assert calls_of(events) == [] and text_of(events) == "Which city?"
    assert [r.reason for r in finish.diagnostics.retries] == ["pretended_call", "invented_value"]
    assert [r.response_format.name for r in inner.requests] == ["action", "action", "final"]


def test_a_tool_name_inside_another_word_is_no_pretended_call() -> None:
    from parlay.engine.judging import named_tool as _named_tool

    assert _named_tool("math.add returned 3", TOOLS) is None
    assert _named_tool("add_more returned 3", TOOLS) is None
    assert _named_tool("add returned 3", TOOLS).name == "add"


def test_an_echo_repeats_part_of_its_source() -> None:
    message = "If it does not, give your answer again. Reply now: the tool call, or your answer."
    assert echoes("The tool call, or your answer.", message)
    assert not echoes("Reply now.", message)  # too short to tell
    assert not echoes("It is sunny in Rome.", message)


def test_an_answer_quoting_two_made_up_results_names_the_same_one_in_every_process() -> None:
    from collections.abc import Iterator

    from parlay.engine.contract.grounding import copied_answer

    class ShortestFirst(frozenset[str]):
        """A set iterated in one fixed order, as a set may be in some process."""

        def __iter__(self) -> Iterator[str]:
            return iter(sorted(super().__iter__(), key=len))

    answers = {"It is 22 degrees.", "Sunny"}
    text = "Sunny. It is 22 degrees."
    assert copied_answer(text, ShortestFirst(answers)) == "It is 22 degrees."
    assert copied_answer(text, frozenset(answers)) == "It is 22 degrees."
