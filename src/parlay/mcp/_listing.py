"""A server's tool listing, checked one tool at a time.

The SDK checks a `tools/list` page whole: one tool whose input schema is not an object
schema (`{"type": 5}`, `"required": "x"`) or that has no name fails the page, and so the
server's start, costing the user every other tool. `sift` checks each tool alone, as the
SDK will check the page (the wire schema of the negotiated protocol version, then the
SDK's `Tool` model), and takes out the ones that fail, saying why, before the SDK sees
the page.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen
from mcp import types
from mcp.types import methods
from pydantic import ValidationError

# What the SDK checks a result against before the handshake has named a version.
FALLBACK_VERSION = "2025-11-25"
# How many of a tool's faults its warning lists.
SHOWN_FAULTS = 3


@frozen
class Skipped:
    """A tool left out of a listing: `name` when it gave a usable one, else its place."""

    name: str | None
    position: int
    reason: str

    @property
    def shown(self) -> str:
        if self.name is not None:
            return repr(self.name)
        return f"with no usable name (number {self.position + 1} of its page)"


def sift(page: dict[str, Any], version: str | None) -> tuple[dict[str, Any], list[Skipped]]:
    """`page` without the tools the SDK would refuse, and those tools.

    A page whose own fields are wrong (no `tools` list, a bad cursor) is left as it
    is: that is the server's listing failing, which the SDK reports."""
    tools = page.get("tools")
    if not isinstance(tools, list):
        return page, []
    kept: list[Any] = []
    skipped: list[Skipped] = []
    for position, tool in enumerate(tools):
        faults = _faults(page, tool, version or FALLBACK_VERSION)
        if faults:
            skipped.append(Skipped(_name_of(tool), position, _reason(faults)))
        else:
            kept.append(tool)
    return ({**page, "tools": kept} if skipped else page), skipped


def _faults(page: dict[str, Any], tool: Any, version: str) -> list[str]:
    """What is wrong with `tool`, alone on a page like `page`: nothing when it loads."""
    faults: list[str] = []
    try:
        methods.validate_server_result("tools/list", version, {**page, "tools": [tool]})
    except ValidationError as exc:  # the page's own faults are the SDK's to report
        faults += [_fault(e, skip=2) for e in exc.errors() if tuple(e["loc"][:2]) == ("tools", 0)]
    except (KeyError, ValueError):
        pass  # a version this SDK has no wire schema for: the model check below remains
    if not faults:
        try:
            types.Tool.model_validate(tool, by_name=False)
        except ValidationError as exc:
            faults += [_fault(e, skip=0) for e in exc.errors()]
    return faults


def _fault(error: Any, skip: int) -> str:
    where = ".".join(str(part) for part in error["loc"][skip:]) or "the tool"
    got = "" if error["type"] == "missing" else f" (got {_short(error['input'])})"
    return f"{where}: {error['msg']}{got}"


def _short(value: Any, limit: int = 40) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _reason(faults: list[str]) -> str:
    more = len(faults) - SHOWN_FAULTS
    listed = "; ".join(faults[:SHOWN_FAULTS]) + (f"; and {more} more" if more > 0 else "")
    return f"its listing is not valid MCP: {listed}"


def _name_of(tool: Any) -> str | None:
    name = tool.get("name") if isinstance(tool, dict) else None
    return name if isinstance(name, str) and name else None
