"""Clauses of a reply that only repeat the continuation, taken out as the reply streams.

A reply may answer and then copy an instruction of the continuation, or open with one:
the answer is worth showing, the instruction is not. A clause is held while it may still
turn out to be such a repeat (`OwnWords.may_be_repeated_by`), shown once it says
something of its own, dropped when it ends as one. Held text is bounded by
`OwnWords.longest`, so the trim is linear; every chunking shows the same text.
"""

from __future__ import annotations

import re

from parlay.engine.checks.own_words import OwnWords

# A clause ends at the white space after `.!?;:`, or at a line break; the white space
# opens the next clause, so a dropped clause takes its leading space with it.
_CLAUSE_END = re.compile(r"(?<=[.!?;:])\s|\n")


class EchoTrim:
    """The text of one plain reply, less the clauses that only repeat the continuation."""

    def __init__(self, own: OwnWords) -> None:
        self.own, self.active = own, bool(own.passages)
        self.dropped: list[str] = []  # the clauses taken out, as written
        self.shown_any = False
        # Held: whole clauses copying what the continuation said that no clause of the
        # reply's own has followed yet, and the clause being read.
        self._run = self._clause = ""
        self._clause_shown = False  # the clause being read said something of its own
        self._last = ""  # the last character read: a clause end may follow it

    @property
    def took_all(self) -> bool:
        """Whether every clause it took out left nothing shown: the reply was only parlay's."""
        return bool(self.dropped) and not self.shown_any

    def feed(self, text: str) -> str:
        """Read the next chunk; returns the text that may be shown now."""
        if not self.active or not text:
            return text
        scan = self._last + text
        shown: list[str] = []
        cursor = len(self._last)
        for end in _CLAUSE_END.finditer(scan, cursor):
            if end.start() > cursor:
                shown.append(self._read(scan[cursor : end.start()]))
            self._close()
            cursor = end.start()
        if cursor < len(scan):
            shown.append(self._read(scan[cursor:]))
        self._last = scan[-1]
        return "".join(shown)

    def flush(self) -> str:
        """The reply ended, or a call follows its text: decide what is held. Held copies
        after a dropped clause go with it: they say nothing the continuation did not."""
        if not self.active:
            return ""
        self._close()
        held, self._run = self._run, ""
        if held.strip() and (self.dropped or self.own.repeated_by(held.strip())):
            self.dropped.append(held.strip())
            return ""
        return self._show(held)

    def _read(self, piece: str) -> str:
        if self._clause_shown:
            return piece
        self._clause += piece
        held = self._run + self._clause
        if len(held) <= self.own.longest and self.own.may_be_repeated_by(self._clause.lstrip()):
            return ""
        self._run, self._clause, self._clause_shown = "", "", True
        return self._show(held)

    def _close(self) -> None:
        clause, self._clause = self._clause, ""
        if self._clause_shown:
            self._clause_shown = False
            return
        if clause.strip() and self.own.repeated_by(clause.strip()):
            self.dropped.extend(c for c in (self._run.strip(), clause.strip()) if c)
            self._run = ""
            return
        self._run += clause

    def _show(self, text: str) -> str:
        if not self.shown_any:
            if self.dropped:
                text = text.lstrip()  # a dropped first clause leaves no leading space
            self.shown_any = bool(text.strip())
        return text
