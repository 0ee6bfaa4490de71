"""The incremental parser's public face: `feed`, `finish`, `result`, the state loop, and
`parse` for a whole reply."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from parlay.context import new_call_id
from parlay.engine.contract.parser.call_assembly import SUB_NAME, CallAssembler
from parlay.engine.contract.parser.json_scan import JsonScanner
from parlay.engine.contract.parser.recognise import TextReader
from parlay.engine.contract.parser.results import ParseResult
from parlay.engine.contract.parser.state import THOUGHT_LIMIT, ParserState, new_event, set_text
from parlay.engine.contract.parser.strings import StringReader
from parlay.events import Event, TextDelta


class ActionStreamParser:
    """Feed text deltas, get events; `finish()` flushes, `result()` summarises. `tool_names`
    tells `{"name": "Ada", ...}` in an answer (text) from a call (`Ada` is a tool)."""

    __slots__ = ("calls", "scanner", "st", "steps", "strings")

    def __init__(
        self,
        tool_names: Collection[str] = (),
        *,
        id_factory: Callable[[], str] = new_call_id,
        thought_limit: int = THOUGHT_LIMIT,
    ) -> None:
        st = self.st = ParserState(frozenset(tool_names), id_factory, thought_limit)
        calls = self.calls = CallAssembler(st, self._read_arguments)
        strings = self.strings = StringReader(st, calls)
        scanner = self.scanner = JsonScanner(st, calls.stack, strings, calls)
        reader = TextReader(st, scanner)
        # Each mode's step: True while it made progress the next step may build on.
        self.steps: dict[str, Callable[[bool], bool]] = {
            "text": reader.run_text,
            "info": reader.run_info,
            "block": scanner.run_block,
            "code": reader.run_code,
        }

    def _read_arguments(self, text: str) -> ParseResult:
        """Stringified arguments (`text` opens an object), read by a parser like this one
        as the arguments of a call named `SUB_NAME`, with ids of no use."""
        parser = ActionStreamParser(id_factory=lambda: "", thought_limit=self.st.thought_limit)
        parser.scanner.open_block(0, 0, fenced=False, labeled=True)
        parser.calls.open_arguments(SUB_NAME)
        parser.feed(text)
        parser.finish()
        return parser.result()

    def feed(self, text: str) -> list[Event]:
        st = self.st
        if (
            st.plain
            and text
            and "\n" not in text
            and ("`" not in text or ("```" not in text and text[-1] != "`"))
        ):
            # The hot path while prose streams: nothing held, and nothing in the chunk may
            # start a block. It goes out as the state loop would send it (inlined).
            st.text.append(text)
            delta = new_event(TextDelta)
            set_text(delta, text)
            return [delta]
        if st.ended or not text:
            return []
        strings = self.strings
        if strings.quote is not None and st.pos == len(st.buf) and strings.takes_whole(text):
            # The other hot path: content of a string in a block, nothing pending.
            strings.add(text)
            if st.buf or st.block_as_text:  # its raw text is kept (or shown)
                st.buf += text
                st.pos = len(st.buf)
                st.compact()
            return st.take()
        st.buf += text
        self._run(final=False)
        st.plain = not st.buf and st.mode == "text" and not st.line_blank
        return st.take()

    def finish(self) -> list[Event]:
        if self.st.ended:
            return []
        self._run(final=True)
        self.st.ended = True
        self.st.plain = False
        return self.st.take()

    def result(self) -> ParseResult:
        calls, st = self.calls, self.st
        found = tuple(calls.calls), tuple(calls.problems), tuple(calls.thoughts)
        return ParseResult("".join(st.text), *found, st.blocks)

    def _run(self, final: bool) -> None:
        st = self.st
        st.final = final
        while self.steps[st.mode](final):
            pass
        st.compact()
        if final:
            if st.mode == "block":
                self.scanner.close_block(cut=True)
            st.emit_text(st.buf[st.pos :])
            st.pos = len(st.buf)
            st.mode = "text"


def parse(text: str, tool_names: Collection[str] = (), **options: Any) -> ParseResult:
    """Parse a whole reply: the same as feeding it in one piece and finishing."""
    parser = ActionStreamParser(tool_names, **options)
    parser.feed(text)
    parser.finish()
    return parser.result()
