"""`-c` / `--cid`: a logged conversation, read back as the context to go on from.

The reading lives in `parlay.store.conversation`, shared with `Store.context` and
`start_session(resume=...)`, so Python and the command line rebuild a conversation the
same way.
"""

from __future__ import annotations

from parlay.store.conversation import (
    UNFINISHED,
    Conversation,
    find_conversation,
    rebuild_context,
)

__all__ = ["UNFINISHED", "Conversation", "find_conversation", "rebuild_context"]
