"""MCP both ways: the tools of MCP servers in a session, and parlay tools served over MCP.

```python
from parlay.mcp import MCPTools, serve

session = Session(backend, tools=MCPTools.stdio("python weather_server.py"))
serve([get_price, delete_item])   # this process becomes an MCP server on stdio
```

Importing this package imports the `mcp` SDK (about a second); `import parlay` does not.
"""

from parlay.errors import MCPServerError
from parlay.mcp.client import MCPTools
from parlay.mcp.server import build_server, serve, serve_async

__all__ = ["MCPServerError", "MCPTools", "build_server", "serve", "serve_async"]
