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
- nothing raises: what cannot be read becomes visible text or a `ParseProblem`;
- the argument deltas of every call concatenate to JSON equal to its arguments; arguments
  that are not an object do not stream (the call gets `{}` and an `unreadable_arguments`
  problem).

A code fence inside a string of a fenced block (`strings.py` has the rule and why): a
line-start fence opens or closes a code block the string holds, as content; only a bare
fence after string text ending in `}` or `]` (the model lost the closing quote) ends the
action block there, noted `cut_off`.

Cut-off repair never merges or invents values (`arguments.py`): a number, literal or key
the cut leaves unfinished is dropped with its key and named in the `cut_off` problem; a
string is closed where it was cut (its text has streamed).

Work is linear in the input: each character is looked at a bounded number of times, the
buffer is compacted as text is consumed, and what is held back to be decided is bounded:
a fence's info string (40 characters), the blank lines between a ```` ```json ```` fence and
its `{` (256), a `{` line's first key (48), the blanks and name after `@tool` (128), the
raw text of an unlabeled block before its tool name is read (`MAX_UNDECIDED`, 4,096: past
it the block is an action even if the name is no tool's), a fence's line inside a string
(16). Values nested deeper than `MAX_DEPTH` (100) are skipped, and dropped from arguments
with a problem; an atom over 100 characters is never read as a number (a string, noted);
NaN and infinities become null. Stringified arguments are read by this parser, not by a
general JSON repair.

The package, one job per module; the parser is composed of four readers, each an object
with its own state, beside the reading position they share:

- `results`: `ParseResult`, `ParseProblem`, the values a parse reports;
- `vocabulary`: the keys, aliases and fence labels that mark an action;
- `state`: `ParserState`, where the reading stands and what went out, and its size bounds;
- `recognise`: `TextReader`, the text path, fences and `@tool` command lines;
- `blocks`: `BlockReader`, one action block from its opening to its end;
- `json_scan`: `JsonScanner`, the JSON of a block (structure, value roles, atoms, depth);
- `strings`: `StringReader`, JSON strings, their escapes, and code fences inside them;
- `calls`: `CallAssembler`, names, arguments (normalised as they stream) and thoughts
  into calls; `arguments`: atoms as JSON;
- `stream`: `ActionStreamParser`, which builds the readers and runs them (`feed`,
  `finish`, `result`);
- `whole`: `parse()`, a whole reply at once.
"""

from parlay.engine.contract.parser.results import ParseProblem, ParseResult
from parlay.engine.contract.parser.state import MAX_DEPTH, MAX_UNDECIDED, THOUGHT_LIMIT
from parlay.engine.contract.parser.stream import ActionStreamParser
from parlay.engine.contract.parser.vocabulary import (
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
from parlay.engine.contract.parser.whole import parse

__all__ = [
    "ACTION_FENCES",
    "ARGS_KEYS",
    "BLOCK_KEYS",
    "CONTENT_KEYS",
    "FINAL_KEYS",
    "JSON_FENCES",
    "MAX_DEPTH",
    "MAX_UNDECIDED",
    "NAME_KEYS",
    "THOUGHT_KEYS",
    "THOUGHT_LIMIT",
    "WRAPPER_KEYS",
    "ActionStreamParser",
    "ParseProblem",
    "ParseResult",
    "parse",
]
