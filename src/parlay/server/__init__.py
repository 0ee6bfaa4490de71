"""The OpenAI- and Anthropic-compatible proxy (`parlay serve`)."""

from parlay.server.app import Proxy, create_app
from parlay.server.config import ServerConfig, build_backend
from parlay.server.run import app_from_config, serve

__all__ = ["Proxy", "ServerConfig", "app_from_config", "build_backend", "create_app", "serve"]
