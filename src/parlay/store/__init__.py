"""The log of sessions, responses, tool calls and tool results: SQLite or PostgreSQL."""

from parlay.store.migrations import SCHEMA_VERSION
from parlay.store.recorder import TurnRecorder
from parlay.store.store import (
    ENV_VAR,
    LoggedCall,
    LoggedResponse,
    LoggedResult,
    LoggedSession,
    Store,
    default_path,
    default_target,
)

__all__ = [
    "ENV_VAR",
    "SCHEMA_VERSION",
    "LoggedCall",
    "LoggedResponse",
    "LoggedResult",
    "LoggedSession",
    "Store",
    "TurnRecorder",
    "default_path",
    "default_target",
]
