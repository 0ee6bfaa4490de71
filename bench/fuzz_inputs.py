"""The fuzz's inputs: random and adversarial model replies, each a function of (seed, index).

Generators, with their share of the inputs:

- `random_chars`: characters drawn from JSON punctuation, backticks, `@tool`, letters,
  digits, blanks with CRLF, NUL, lone surrogates, curly quotes and any other code point;
- `fragments`: pieces of real replies (actions in every format, cut ones, prose, code
  fences) joined, cut at a random point, a few characters mutated;
- `mutated_action`: one well-formed action (a random format, nested arguments, escapes)
  with characters deleted, inserted or doubled, and often cut off;
- `code_in_args`: a `write_file` call whose content holds a fenced code block, written
  with raw newlines or `\\n` escapes, a bare or labeled inner fence, a lost quote;
- `long_runs`: a prefix that opens a state (a fence, a string, a number, a stray `@tool`)
  then one character up to 20,000 times;
- `deep_nesting`: brackets or objects nested up to 20,000 deep, in and out of arguments;
- `huge_numbers`: numbers of hundreds or thousands of digits, huge exponents.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable

_ACTIONS = [
    '```json action\n{"tool": "get_weather", "parameters": {"city": "Paris"}}\n```\n',
    '```json\n{"name": "add", "arguments": {"a": 1, "b": 2.5e3}}\n```\n',
    '{"thought": "need it", "action": {"tool": "search", "args": {"q": "blue \\"whales\\""}}}\n',
    '{"final": {"content": "Done: \\u00e9 \\n ok"}}\n',
    '{"tool": "add", "parameters": {"a": 1, "b": [1, 2, {"c": null}]}}\n',
    "@tool search\n",  # the command format is gone: prose now
    '```json\n[{"tool": "add", "parameters": {}}, {"tool": "search", "parameters": {"q": 1}}]\n```\n',
    '{"tool": "get_weather", "parameters": "{\\"city\\": \\"Rome\\"}"}\n',
    "```json\n{'tool': 'add', 'parameters': {'a': True, b: None, 'c': [1, 2,],},}\n```\n",
    '{"name": "Ada", "age": 36}\n',
    "```python\nprint({'tool': 1})\n```\n",
]
_PIECES = [
    *_ACTIONS,
    "Sure, let me check.\n",
    "```json action\n",
    "```json\n",
    "```\n",
    "```",
    "`",
    "\n",
    "\r\n",
    "{",
    "}",
    "[",
    '"',
    "'",
    "\\",
    "@",
    "@tool ",
    '{"tool": "add", "parameters": {"a": ',
    '{"tool": "write_file", "parameters": {"content": "',
    "“smart” quotes",
    "中文 ",
    "\x00",
    "\ud800",
    "1e999",
    "9" * 120,
    " and prose ",
]
_ALPHABET = [*"{}[]\":,'`@\\ \t\n\r\x00“”‘’", "\r\n", "```", "@tool ", "tool", "name"]
_RUN_CHARS = ["\n", " ", "\r\n", "{", "[", "`", '"', "\\", "1", "a", "@", "\t", "\x00", ",", ":"]
_RUN_PREFIXES = [
    "",
    "```json\n",
    "```\n",
    "```json action\n",
    '```json action\n{"tool": "a", "parameters": {"s": "',
    '```json action\n{"tool": "a", "parameters": {"s": "x\n',
    '{"tool": "add", "parameters": {"a": ',
    '{"tool": "add", "parameters": "',
    '{"thought": "',
    '{"name": "Ada", "bio": "',
    "@tool ",
    "@tool add ",
    "@tool add {",
    "text\n",
    '{"final": {"content": "',
]


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def random_chars(rng: random.Random) -> str:
    out: list[str] = []
    for _ in range(_log_uniform(rng, 1, 3000)):
        pick = rng.random()
        if pick < 0.5:
            out.append(rng.choice(_ALPHABET))
        elif pick < 0.8:
            out.append(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789.-+_ePRTS"))
        elif pick < 0.9:
            out.append(chr(rng.randrange(0xD800, 0xE000)))  # lone surrogates
        else:
            out.append(chr(rng.randrange(0x20, 0x30000)))
    return "".join(out)


def _mutate(rng: random.Random, text: str, count: int) -> str:
    chars = list(text)
    for _ in range(count):
        if not chars:
            break
        at = rng.randrange(len(chars))
        action = rng.random()
        if action < 0.4:
            del chars[at]
        elif action < 0.8:
            chars.insert(at, rng.choice(_ALPHABET))
        else:
            chars.insert(at, chars[at])
    return "".join(chars)


def fragments(rng: random.Random) -> str:
    text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12)))
    if rng.random() < 0.5:
        text = text[: rng.randint(0, len(text))]
    return _mutate(rng, text, rng.choice([0, 0, 1, 3]))


def _value(rng: random.Random, depth: int) -> object:
    pick = rng.random()
    if depth > 3 or pick < 0.4:
        return rng.choice([1, -2.5, 1e21, True, None, 'a "quoted" line\nnext', "é", ""])
    if pick < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}": _value(rng, depth + 1) for i in range(rng.randint(0, 3))}


def mutated_action(rng: random.Random) -> str:
    args = {f"k{i}": _value(rng, 0) for i in range(rng.randint(0, 4))}
    body = json.dumps(args, ensure_ascii=rng.random() < 0.5)
    fmt = rng.randrange(4)
    if fmt == 0:
        text = '```json action\n{"tool": "add", "parameters": ' + body + "}\n```\n"
    elif fmt == 1:
        text = '{"thought": "t", "action": {"tool": "add", "args": ' + body + "}}\n"
    elif fmt == 2:
        text = '{"tool": "add", "parameters": ' + body + "}\n"
    else:
        text = '```json\n{"name": "add", "arguments": ' + json.dumps(body) + "}\n```\n"
    text = _mutate(rng, text, rng.choice([0, 1, 2, 5]))
    if rng.random() < 0.5:
        text = text[: rng.randint(0, len(text))]
    return text


def code_in_args(rng: random.Random) -> str:
    label = rng.choice(["python", "", "js", " bash", "json"])
    code = "def f(x):\n    return x * 2\n" * rng.randint(1, 4)
    content = f"# Notes\n\n```{label}\n{code}```\n\nEnd.\n"
    # `\n` escapes, as JSON wants, or raw newlines, as models write
    escaped = rng.random() < 0.5
    written = json.dumps(content)[1:-1] if escaped else content.replace('"', '\\"')
    close = rng.choice(['"}}', '"}}', "}}", ""])  # sometimes a lost quote
    text = (
        "I'll write the file.\n```json action\n"
        '{"tool": "write_file", "parameters": {"path": "a.md", "content": "'
        + written
        + close
        + "\n```\nDone.\n"
    )
    if rng.random() < 0.3:
        text = text[: rng.randint(0, len(text))]
    return text


def long_runs(rng: random.Random) -> str:
    run = rng.choice(_RUN_CHARS) * _log_uniform(rng, 100, 20_000)
    suffix = rng.choice(["", "", "}", '"}}\n```', "\n```\n", "x"])
    return rng.choice(_RUN_PREFIXES) + run + suffix


def deep_nesting(rng: random.Random) -> str:
    depth = _log_uniform(rng, 10, 20_000)
    opener = rng.choice(["[", "{", '{"a": ', '[{"a": ', "{'k': ["])
    closer = {"[": "]", "{": "}", '{"a": ': "}", '[{"a": ': "}]", "{'k': [": "]}"}[opener]
    prefix = rng.choice(
        ['{"tool": "add", "parameters": ', "```json action\n", "```json\n", "", '{"x": ']
    )
    tail = closer * rng.choice([0, depth // 2, depth])
    return prefix + opener * depth + "1" + tail + rng.choice(["", "}", "}\n```"])


def huge_numbers(rng: random.Random) -> str:
    digits = "".join(rng.choice("0123456789") for _ in range(_log_uniform(rng, 50, 6000)))
    number = rng.choice(
        [digits, "-" + digits, "1." + digits, "1e" + digits[:6], digits + "e-99999", "+" + digits]
    )
    return rng.choice(
        [
            '{"tool": "add", "parameters": {"a": ' + number + "}}",
            '{"tool": "add", "parameters": {"a": [1, ' + number + "]}}",
            '```json action\n{"tool": "add", "parameters": {"a": ' + number,
            '{"tool": "add", "parameters": "{\\"a\\": ' + number + '}"}',
        ]
    )


GENERATORS: dict[str, tuple[float, Callable[[random.Random], str]]] = {
    "random_chars": (0.15, random_chars),
    "fragments": (0.33, fragments),
    "mutated_action": (0.15, mutated_action),
    "code_in_args": (0.15, code_in_args),
    "long_runs": (0.10, long_runs),
    "deep_nesting": (0.06, deep_nesting),
    "huge_numbers": (0.06, huge_numbers),
}


def make_input(seed: int, index: int) -> tuple[str, str]:
    """(generator name, text) for input `index` of a run seeded `seed`."""
    rng = random.Random(f"{seed}:{index}")
    names = list(GENERATORS)
    name = rng.choices(names, weights=[GENERATORS[n][0] for n in names])[0]
    return name, GENERATORS[name][1](rng)
