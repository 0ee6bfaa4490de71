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
  closes a cut string but never invents a value (`call_assembly.py`).

`ActionStreamParser` (`stream.py`) composes four readers over one shared `ParserState`:
`TextReader` (`recognise.py`), `JsonScanner` (`json_scan.py`), `StringReader`
(`strings.py`) and `CallAssembler` (`call_assembly.py`).
"""

from parlay.engine.contract.parser.results import ParseProblem, ParseResult
from parlay.engine.contract.parser.stream import ActionStreamParser, parse
from parlay.engine.contract.parser.vocabulary import ARGS_KEYS

__all__ = ["ARGS_KEYS", "ActionStreamParser", "ParseProblem", "ParseResult", "parse"]
