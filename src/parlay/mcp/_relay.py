"""Relays an MCP stdio server's messages, refusing any one too large to read.

The MCP SDK reads a stdio server's output a line (one JSON-RPC message) at a time, whole:
a tool returning 50 MB held the client for two minutes and half a gigabyte before
parlay could cut the result. Run as a script between the SDK and the server
(`python _relay.py LIMIT -- COMMAND ARGS...`), this passes every line of at most LIMIT
bytes through as it is, and answers a longer one, without keeping it, with a JSON-RPC
error for the same request id, which the session shows the model as the tool's error.
The server reads the relay's own standard input and writes to its standard error.

A script with no imports from parlay: it starts in a few milliseconds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from typing import IO

# Where a message names its request id: near its start (every SDK writes it there) or,
# failing that, near its end.
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')
_KEEP = 4096
_CHUNK = 65536
_INTERNAL_ERROR = -32603


def refusal(head: bytes, tail: bytes, size: int, limit: int) -> bytes:
    """The error answering a message of `size` bytes, or nothing when it names no id."""
    found = _ID.search(head) or _ID.search(tail)
    if found is None:
        return b""
    message = (
        f"the MCP server's reply was {size:,} bytes, over parlay's limit of {limit:,} "
        "bytes for one message; it was not read (ask the tool for less)"
    )
    error = {"code": _INTERNAL_ERROR, "message": message}
    answer = {"jsonrpc": "2.0", "id": json.loads(found.group(1)), "error": error}
    return json.dumps(answer).encode() + b"\n"


class Lines:
    """The relay's state: the line being read, or the size of one being dropped."""

    def __init__(self, out: IO[bytes], limit: int) -> None:
        self.out, self.limit = out, limit
        self.line = bytearray()
        self.dropped = 0
        self.head = self.tail = b""

    def take(self, piece: bytes) -> None:
        """Part of a line: kept, or counted once the line is over the limit."""
        if self.dropped:
            self.dropped += len(piece)
            self.tail = (self.tail + piece)[-_KEEP:]
            return
        if len(self.line) + len(piece) <= self.limit:
            self.line += piece
            return
        whole = bytes(self.line[:_KEEP]) + piece[:_KEEP]
        self.head, self.tail = whole[:_KEEP], (bytes(self.line[-_KEEP:]) + piece)[-_KEEP:]
        self.dropped = len(self.line) + len(piece)
        self.line.clear()

    def end(self) -> None:
        """A line ended: passed on, or answered with the refusal."""
        if self.dropped:
            self.out.write(refusal(self.head, self.tail, self.dropped, self.limit))
            self.dropped = 0
        else:
            self.out.write(bytes(self.line) + b"\n")
            self.line.clear()
        self.out.flush()

    def feed(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self.take(chunk[start:end])
            self.end()
            start = end + 1
        self.take(chunk[start:])


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: _relay.py LIMIT -- COMMAND [ARGS...]\n")
        return 2
    limit, command = int(argv[1]), argv[3:]
    try:
        server = subprocess.Popen(command, stdout=subprocess.PIPE)
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror or exc}\n")
        return 127
    for sent in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sent, lambda number, _: server.send_signal(number))
    lines = Lines(sys.stdout.buffer, limit)
    assert server.stdout is not None
    while chunk := os.read(server.stdout.fileno(), _CHUNK):
        lines.feed(chunk)
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
