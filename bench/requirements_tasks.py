"""The 30 small tasks of the requirements bench, as plain Python (no parlay import), so
the same tasks and checks run in Mellea's own environment (bench/requirements_mellea.py).

A check takes the answer's text and returns (holds, reason). A task with a `tool` gives
the session that tool and asks for a fact only its result has (an invented value the
model cannot know).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

Check = Callable[[str], tuple[bool, str]]


@dataclass(frozen=True)
class Rule:
    description: str  # shown to the model
    check: Check


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    rules: tuple[Rule, ...]
    tool: str | None = None  # a name in TOOLS
    kind: str = "words"
    extra: dict[str, str] = field(default_factory=dict)


def words_at_most(n: int) -> Rule:
    def check(text: str) -> tuple[bool, str]:
        count = len(text.split())
        return count <= n, f"{count} words, more than {n}" if count > n else ""

    return Rule(f"Use at most {n} words", check)


def has(word: str) -> Rule:
    def check(text: str) -> tuple[bool, str]:
        found = word.lower() in text.lower()
        return found, "" if found else f"'{word}' does not appear"

    return Rule(f"Include the word '{word}'", check)


def lacks(word: str) -> Rule:
    def check(text: str) -> tuple[bool, str]:
        found = re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE) is not None
        return not found, f"'{word}' appears" if found else ""

    return Rule(f"Do not use the word '{word}'", check)


def _json(text: str) -> object:
    body = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1)
    return json.loads(body)


def json_with(*fields: str) -> Rule:
    def check(text: str) -> tuple[bool, str]:
        try:
            data = _json(text)
        except ValueError as error:
            return False, f"not JSON: {error}"
        if not isinstance(data, dict):
            return False, "not a JSON object"
        missing = [f for f in fields if f not in data]
        return not missing, f"missing {', '.join(missing)}" if missing else ""

    return Rule(f"Answer with a JSON object with the fields {', '.join(fields)}", check)


def mentions(fact: str, what: str) -> Rule:
    def check(text: str) -> tuple[bool, str]:
        found = fact.lower() in text.lower()
        return found, "" if found else f"the {what} from the tool ({fact}) is not in the answer"

    return Rule(f"State the {what} the tool gives", check)


# Tools whose results hold facts the model cannot know.
FACTS = {
    "locker_code": ("4417", "code"),
    "ship_name": ("Marisol", "name"),
    "meeting_room": ("B-212", "room"),
    "parcel_weight": ("7.3", "weight"),
    "wifi_password": ("tulip-88", "password"),
}


def locker_code(person: str) -> str:
    """The locker code of a person."""
    return f"{person}'s locker code is 4417"


def ship_name(port: str) -> str:
    """The name of the ship docked at a port."""
    return f"The ship at {port} is the Marisol"


def meeting_room(team: str) -> str:
    """The meeting room booked for a team."""
    return f"The {team} team meets in room B-212"


def parcel_weight(parcel: str) -> str:
    """The weight of a parcel, in kilograms."""
    return f"Parcel {parcel} weighs 7.3 kg"


def wifi_password(building: str) -> str:
    """The wifi password of a building."""
    return f"The wifi password of {building} is tulip-88"


TOOLS: dict[str, Callable[[str], str]] = {
    "locker_code": locker_code,
    "ship_name": ship_name,
    "meeting_room": meeting_room,
    "parcel_weight": parcel_weight,
    "wifi_password": wifi_password,
}


def _tool_task(name: str, description: str, tool: str, limit: int) -> Task:
    fact, what = FACTS[tool]
    return Task(name, description, (mentions(fact, what), words_at_most(limit)), tool, "tool")


TASKS: tuple[Task, ...] = (
    # length limits
    Task("fruit", "Name a red fruit.", (words_at_most(4),)),
    Task("sea", "Describe the sea.", (words_at_most(8), has("water"))),
    Task("capital", "What is the capital of France?", (words_at_most(6), has("Paris"))),
    Task("greeting", "Greet a new colleague.", (words_at_most(10),)),
    Task("tree", "Describe an oak tree in one sentence.", (words_at_most(15), has("oak"))),
    Task("colour", "Name the colour of the sky.", (words_at_most(3), has("blue"))),
    # words that must or must not appear
    Task("ada", "Say hello to Ada.", (has("Ada"), lacks("hi")), kind="words"),
    Task("fox", "Give a title for a story about a fox.", (has("fox"), words_at_most(6))),
    Task(
        "rain",
        "Write one sentence about rain.",
        (has("rain"), lacks("umbrella"), words_at_most(12)),
    ),
    Task("coffee", "Describe coffee.", (lacks("bitter"), has("coffee"), words_at_most(15))),
    Task("moon", "Say something about the moon.", (has("moon"), lacks("cheese"))),
    Task("dog", "Describe a dog in a few words.", (has("dog"), lacks("cat"), words_at_most(10))),
    Task("winter", "Describe winter.", (has("cold"), lacks("snow"), words_at_most(12))),
    Task("bread", "How is bread made? Be brief.", (has("flour"), words_at_most(20))),
    Task("python", "What is Python?", (has("programming"), lacks("snake"), words_at_most(15))),
    Task("thanks", "Thank a friend for a gift.", (has("thank"), has("gift"), words_at_most(15))),
    # JSON fields
    Task("cat", "Describe a cat.", (json_with("name", "colour"),), kind="json"),
    Task("book", "Describe a book you like.", (json_with("title", "author"),), kind="json"),
    Task("city", "Describe Paris.", (json_with("city", "country"),), kind="json"),
    Task("person", "Invent a person.", (json_with("name", "age"),), kind="json"),
    Task("car", "Describe a car.", (json_with("make", "colour", "year"),), kind="json"),
    Task("planet", "Describe Mars.", (json_with("name", "moons"),), kind="json"),
    Task("recipe", "Give a recipe.", (json_with("dish", "ingredients"),), kind="json"),
    Task("weather", "Report the weather.", (json_with("temperature", "sky"),), kind="json"),
    # a fact from a tool's result
    _tool_task("locker", "What is Ada's locker code?", "locker_code", 20),
    _tool_task("ship", "Which ship is docked at Lisbon?", "ship_name", 20),
    _tool_task("room", "Where does the design team meet?", "meeting_room", 20),
    _tool_task("parcel", "How heavy is parcel X9?", "parcel_weight", 20),
    _tool_task("wifi", "What is the wifi password of the library?", "wifi_password", 20),
    _tool_task("locker2", "Tell me Bob's locker code, briefly.", "locker_code", 12),
)

assert len(TASKS) == 30 and len({t.name for t in TASKS}) == 30
