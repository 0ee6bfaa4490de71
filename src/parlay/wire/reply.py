"""A whole reply gathered from the event stream: what non-streaming encoders write out.

The gathering is the core's (`parlay.reply`), shared with the session and the engine.
"""

from parlay.reply import Reply, ReplyBuilder, agather, gather

__all__ = ["Reply", "ReplyBuilder", "agather", "gather"]
