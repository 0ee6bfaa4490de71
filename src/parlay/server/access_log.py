"""uvicorn's access line written by a thread of its own, so that a slow stderr (a pipe
nobody drains fast enough, a terminal, a full disk) never holds the event loop.

The event loop only makes the log record and puts it on a queue. A thread wakes every
`EVERY` seconds and writes what has queued with the handlers uvicorn configured: waking
per record (as `logging.handlers.QueueListener` does) hands the GIL back and forth on
every request, which measured half the throughput under 32 clients.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from logging.handlers import QueueHandler

ACCESS_LOGGER = "uvicorn.access"
EVERY = 0.05


class _RecordAsIs(QueueHandler):
    """Queues the record unformatted: uvicorn's access formatter reads its `args` (the
    client, method, path, status), which `QueueHandler.prepare` would flatten."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


class BatchWriter:
    """Writes the queued records with `handlers`, a batch every `EVERY` seconds."""

    def __init__(
        self, lines: queue.SimpleQueue[logging.LogRecord], handlers: list[logging.Handler]
    ) -> None:
        self.lines = lines
        self.handlers = handlers
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="parlay-access-log", daemon=True)

    def _run(self) -> None:
        while not self.stopped.wait(EVERY):
            self.flush()
        self.flush()

    def flush(self) -> None:
        while True:
            try:
                record = self.lines.get_nowait()
            except queue.Empty:
                return
            for handler in self.handlers:
                if record.levelno >= handler.level:
                    handler.handle(record)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(2)


def access_log_off_the_loop(name: str = ACCESS_LOGGER) -> BatchWriter | None:
    """Move the handlers of logger `name` behind a queue and a writing thread (once: a
    logger already moved is left as it is). Returns the writer, None when the logger has
    no handler (the access log is off)."""
    logger = logging.getLogger(name)
    handlers = list(logger.handlers)
    if not handlers or any(isinstance(h, QueueHandler) for h in handlers):
        return None
    lines: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    writer = BatchWriter(lines, handlers)
    logger.handlers = [_RecordAsIs(lines)]
    writer.thread.start()
    atexit.register(writer.stop)  # what is queued is written before the process ends
    return writer
