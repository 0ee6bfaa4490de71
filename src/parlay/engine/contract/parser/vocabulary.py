"""What the parser recognises: action keys and their aliases, fence labels, quote and atom
characters. Shared by the block recogniser and the JSON scanner."""

from __future__ import annotations

import re

# Keys the parser understands, with the aliases models actually use.
NAME_KEYS = frozenset({"tool", "name", "tool_name", "function", "function_name", "tool_call"})
ARGS_KEYS = frozenset(
    "parameters arguments args input params tool_input tool_args kwargs action_input".split()
)
WRAPPER_KEYS = frozenset({"action", "function", "tool_call", "call", "function_call"})
# Keys whose list holds several calls: the json format's parallel form `{"actions": [...]}`,
# the typed format's `{"type": "tool_calls", "tools": [...]}`.
LIST_KEYS = frozenset({"actions", "tool_calls", "calls", "function_calls", "tools"})
FINAL_KEYS = frozenset({"final", "final_answer"})
CONTENT_KEYS = frozenset({"content", "text", "answer", "message", "response"})
THOUGHT_KEYS = frozenset({"thought", "thoughts", "reasoning"})
# The typed format says what a reply is in its first member, `"type"`, as a value.
KIND_KEY = "type"
# The values of `"type"` that make an object an action; any other value (a JSON schema's
# `{"type": "object"}`) leaves it prose.
ACTION_KINDS = frozenset({"tool_call", "tool_calls", "function_call", "function_calls"})
FINAL_KINDS = frozenset({"final", "final_answer"})
REPLY_KINDS = ACTION_KINDS | FINAL_KINDS
# A JSON object whose first key is one of these is read as an action, not as prose
# (`"tools"` only after a `"type"`: a list of tools is common prose).
BLOCK_KEYS = (
    NAME_KEYS | ARGS_KEYS | WRAPPER_KEYS | (LIST_KEYS - {"tools"}) | FINAL_KEYS | THOUGHT_KEYS
)
# Fence info strings that hold actions (or may: see `TextReader.run_info`).
ACTION_FENCES = frozenset({"json action", "action", "tool", "tool_call", "tool_code", "function"})
JSON_FENCES = frozenset({"json", "jsonc", "json5", "javascript", "js", ""})

# Opening quotes models use around keys and strings, each with the quote that closes it.
QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "”": "”"}
# Characters of an unquoted value or key (numbers, literals, bare names).
ATOM_CHARS = re.compile(r"[A-Za-z0-9_.+\-$]")
# JSON literals, and the Python spellings models write for them.
LITERALS = {"true": "true", "false": "false", "null": "null"}
LITERALS |= {"True": "true", "False": "false", "None": "null"}
