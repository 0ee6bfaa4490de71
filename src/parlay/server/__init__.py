"""The OpenAI- and Anthropic-compatible proxy (`parlay serve`).

    parlay serve --upstream-url http://127.0.0.1:8080/v1 --upstream-model smollm2 \\
        --model smollm2 --port 8000

serves `POST /v1/chat/completions`, `POST /v1/messages`, `GET /v1/models` and
`GET /health` on 127.0.0.1:8000. A plain-chat upstream runs through the prompt-contract
engine (`--tools prompted`, the default); one with tools of its own is passed through
(`--tools native`). In code, `create_app(backend)` gives the ASGI app for any `Backend`.
"""

from parlay.server.app import Proxy, create_app
from parlay.server.config import ServerConfig, build_backend
from parlay.server.run import app_from_config, serve

__all__ = ["Proxy", "ServerConfig", "app_from_config", "build_backend", "create_app", "serve"]
