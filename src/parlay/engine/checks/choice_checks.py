"""The checks of what the turn's policy asks of a reply: a call to the named tool, a
call at all, or (under tool_choice none) words."""

from __future__ import annotations

from parlay.engine.checks.check import EngineCheck, Evidence, Traits, Verdict, good_calls


def _wrong_tool(reply: Evidence) -> Verdict | None:
    good, policy = good_calls(reply), reply.policy
    if policy.tool is None or not good or any(c.name == policy.tool for c in good):
        return None
    return Verdict(WRONG_TOOL.name, ", ".join(c.name for c in good))


def _no_call(reply: Evidence) -> Verdict | None:
    no_call = reply.policy.must_call and not good_calls(reply)
    return Verdict(NO_CALL.name, about_text=True) if no_call else None


def _words_only(reply: Evidence) -> Verdict | None:
    """Under tool_choice none, a reply that left no text of its own (only calls, nothing,
    or parlay's words echoed): the turn must end in text."""
    if reply.policy.may_call or (reply.text.strip() and not reply.echo):
        return None
    return Verdict(WORDS_ONLY.name, ", ".join(call.name for call in reply.calls))


WRONG_TOOL = EngineCheck(
    "wrong_tool",
    _wrong_tool,
    "a named tool_choice answered with a call to another tool",
    "contract/retry/wrong_tool.j2",
)
NO_CALL = EngineCheck(
    "no_call",
    _no_call,
    "a forced tool_choice answered without a call (or with a refusal)",
    "contract/retry/no_call.j2",
)
WORDS_ONLY = EngineCheck(
    "words_only",
    _words_only,
    "under tool_choice none, a reply that is only a call, empty, or only the "
    "instruction not to call is asked again in words",
    "contract/retry/words_only.j2",
    Traits(under_none=True),
)
