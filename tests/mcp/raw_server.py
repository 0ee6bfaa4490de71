"""A bare JSON-RPC MCP server on stdio, for what the SDK's own server will not send.

`python raw_server.py bad-schemas` lists, over two pages, two good tools among tools
whose listing is invalid MCP (a schema `type` that is not "object", a `required` that
is not a list, an input schema that is not an object, a tool with no name).
`python raw_server.py junk N` first writes N lines that are not JSON-RPC to stdout,
then serves `echo` and `shout` alone, on one page. Either way those two answer
`tools/call`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TEXT_ARG = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
PAGES: dict[str | None, dict[str, Any]] = {
    None: {
        "tools": [
            {"name": "echo", "description": "Say the text back.", "inputSchema": TEXT_ARG},
            {"name": "typed_five", "inputSchema": {"type": 5}},
            {"name": "required_x", "inputSchema": {"type": "object", "required": "x"}},
        ],
        "nextCursor": "page-2",
    },
    "page-2": {
        "tools": [
            {"name": "not_an_object", "inputSchema": "a string"},
            {"description": "a tool with no name", "inputSchema": {"type": "object"}},
            {"name": "shout", "description": "Upper-case the text.", "inputSchema": TEXT_ARG},
        ]
    },
}
GOOD = {"tools": [PAGES[None]["tools"][0], PAGES["page-2"]["tools"][2]]}


def answer(method: str, params: dict[str, Any], pages: bool) -> dict[str, Any]:
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
    if method == "tools/list":
        return PAGES[params.get("cursor")] if pages else GOOD
    if method == "tools/call":
        text = str(params.get("arguments", {}).get("text", ""))
        said = text.upper() if params["name"] == "shout" else text
        return {"content": [{"type": "text", "text": said}]}
    raise LookupError(method)


def main() -> None:
    pages = sys.argv[1:2] == ["bad-schemas"]
    if sys.argv[1:2] == ["junk"]:
        for n in range(int(sys.argv[2])):
            print(f"debug: warming up step {n}", flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification, or an answer to a request of ours
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = answer(message["method"], message.get("params") or {}, pages)
        except LookupError:
            reply["error"] = {"code": -32601, "message": f"no method {message['method']}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
