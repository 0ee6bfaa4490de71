"""Running the proxy on uvicorn, from a `ServerConfig`."""

from __future__ import annotations

from starlette.applications import Starlette

from parlay.server.app import create_app
from parlay.server.config import ServerConfig, build_backend


def app_from_config(config: ServerConfig) -> Starlette:
    return create_app(
        build_backend(config),
        models=config.advertised_models if config.models else (),
        client_keys=config.client_keys,
    )


def serve(config: ServerConfig, *, log_level: str = "warning") -> None:
    """Block serving `config` until interrupted."""
    import uvicorn

    app = app_from_config(config)
    uvicorn.run(
        app,
        host=config.host,
        port=config.port,
        log_level=log_level,
        # The proxy streams; proxies in front must not buffer, and neither do we.
        timeout_keep_alive=30,
    )
