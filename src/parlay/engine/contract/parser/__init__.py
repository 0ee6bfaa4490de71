"""The incremental action parser: model text in, backend events out.

It reads every action syntax whichever the contract taught (fenced ```` ```json ````
blocks, one JSON object per reply), since models drift between them. The invariants the
property tests check:

- it decides only when the text so far settles a question, never because a chunk ended,
  so every split of a text gives what `parse(text)` gives;
- text outside blocks goes out at once; only what may still open a block is held, each
  hold bounded (`state.py`), so work is linear in the input;
- a call starts when its name is read; its arguments stream as deltas of normalised JSON
  that concatenate to its arguments, however sloppy the model's JSON;
- nothing raises: what cannot be read becomes text or a `ParseProblem`; cut-off repair
  closes a cut string but never invents a value (`arguments.py`).

`ActionStreamParser` (`stream.py`) composes the readers: `TextReader` (`recognise.py`),
`BlockReader` (`blocks.py`), `JsonScanner` (`json_scan.py`), `StringReader`
(`strings.py`) and `CallAssembler` (`calls.py`), over one shared `ParserState`.
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
