"""The incremental action parser: model text in, backend events out.

One parser reads all three action syntaxes, whichever format the contract taught:

- fenced blocks: ```` ```json action ```` (or plain ```` ```json ````) holding
  `{"tool": NAME, "parameters": {...}}`, several per reply, or an array of such objects;
- a JSON object per reply: `{"thought": ..., "action": {"tool": NAME, "args": {...}}}` or
  `{"final": {"content": ...}}`, fenced or bare at the start of a line;
- a command line: `@tool NAME {json-args}`.

Reading every syntax costs nothing and makes the engine forgiving of models that drift
between them (Qwen2.5-Coder answers ```` ```json ```` whatever it is taught).

Streaming rules (the invariants the hypothesis tests check):

- the parser only decides when the text seen so far settles the question, never because
  a chunk happened to end, so every split of the same text gives the same calls, the same
  visible text and the same concatenated argument deltas as parsing it whole
  (`parse(text)` *is* one `feed` plus `finish`);
- text outside blocks is emitted at once; only what could still turn into a block is
  held back: a partial fence (```` ` ```` / ```` `` ````), a fence's info string until its
  line ends, and a `{` or `@` at the start of a line until its first key or word is read;
- a call starts (`ToolCallStart`) as soon as its name is read; its arguments stream as
  `ToolCallArgsDelta`s of *normalised* JSON (single and smart quotes re-quoted, trailing
  commas dropped, Python literals mapped), so the fragments concatenate to JSON a client
  can load even while the model writes sloppy JSON;
- nothing raises: what cannot be read becomes visible text or a `ParseProblem`.

Work is linear in the input: each character is looked at a bounded number of times, and
the buffer is compacted as text is consumed.

The package, one job per module (each layer a class adding to the one before; see
`state.py`):

- `results`: `ParseResult`, `ParseProblem`, the values a parse reports;
- `vocabulary`: the keys, aliases and fence labels that mark an action;
- `state`: the parser's mutable state and output plumbing;
- `arguments`: normalising argument JSON as it streams;
- `calls`: assembling names, arguments and thoughts into calls;
- `json_scan`: the JSON state machine (structure, value roles, strings, atoms);
- `blocks`: opening, reading and closing one action block;
- `recognise`: the text path, fences and `@tool` command lines;
- `stream`: `ActionStreamParser` itself (`feed`, `finish`, `result`);
- `whole`: `parse()`, a whole reply at once.
"""

from parlay.contract.parser.results import ParseProblem, ParseResult
from parlay.contract.parser.state import THOUGHT_LIMIT
from parlay.contract.parser.stream import ActionStreamParser
from parlay.contract.parser.vocabulary import (
    ACTION_FENCES,
    ARGS_KEYS,
    BLOCK_KEYS,
    CONTENT_KEYS,
    FINAL_KEYS,
    JSON_FENCES,
    NAME_KEYS,
    THOUGHT_KEYS,
    WRAPPER_KEYS,
)
from parlay.contract.parser.whole import parse

__all__ = [
    "ACTION_FENCES",
    "ARGS_KEYS",
    "BLOCK_KEYS",
    "CONTENT_KEYS",
    "FINAL_KEYS",
    "JSON_FENCES",
    "NAME_KEYS",
    "THOUGHT_KEYS",
    "THOUGHT_LIMIT",
    "WRAPPER_KEYS",
    "ActionStreamParser",
    "ParseProblem",
    "ParseResult",
    "parse",
]
