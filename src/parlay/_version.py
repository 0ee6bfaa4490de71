"""parlay's version, in a module of its own: the MCP client and server name it without
importing the package facade (`parlay`), which imports them."""

__version__ = "0.1.0"
