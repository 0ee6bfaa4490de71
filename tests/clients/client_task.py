"""The task every Python client does through the proxy: save a note, archive it, say so.

Two tools that really act on a folder; the scripted upstream calls the first, reads its
result, calls the second, then answers with what they printed. A client passes when both
files moved as the tools say and the answer reached it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from client_runs import ToolKit
from client_upstream import Script, Step

PROMPT = "Save a note titled alpha, then archive it, and tell me what happened."
ANSWER = "Saved the note alpha and archived it (done-alpha-archived)."
SAVE = {
    "name": "save_note",
    "description": "Save an empty note under a title.",
    "parameters": {
        "type": "object",
        "properties": {"title": {"type": "string", "description": "The note's title."}},
        "required": ["title"],
    },
}
ARCHIVE = {
    "name": "archive_note",
    "description": "Move a saved note into the archive.",
    "parameters": SAVE["parameters"],
}
SCRIPT = Script(
    steps=(
        Step("save_note", {"title": "alpha"}, "done-alpha"),
        Step("archive_note", {"title": "alpha"}, "done-alpha-archived"),
    ),
    answer=ANSWER,
)


class NoteTask(ToolKit):
    def __init__(self, folder: Path) -> None:
        super().__init__([self.save_note, self.archive_note], [SAVE, ARCHIVE])
        self.folder = folder
        self.ran: list[str] = []

    def save_note(self, title: str) -> str:
        """Save an empty note under a title.

        Args:
            title: The note's title.
        """
        self.ran.append("save_note")
        (self.folder / f"{title}.txt").write_text(title)
        return f"saved done-{title}"

    def archive_note(self, title: str) -> str:
        """Move a saved note into the archive.

        Args:
            title: The note's title.
        """
        self.ran.append("archive_note")
        (self.folder / "archive").mkdir(exist_ok=True)
        shutil.move(self.folder / f"{title}.txt", self.folder / "archive" / f"{title}.txt")
        return f"archived done-{title}-archived"

    def check(self, answer: str) -> None:
        """Both tools ran, in order, and the answer that reached the client says so."""
        assert self.ran == ["save_note", "archive_note"], self.ran
        assert (self.folder / "archive" / "alpha.txt").exists()
        assert not (self.folder / "alpha.txt").exists()
        assert "done-alpha-archived" in answer, answer
