"""docs/deploy.md shows the nginx configuration the gateway test runs, not another."""

from __future__ import annotations

import re
from pathlib import Path

from gateway_parts import NGINX_CONF, SERVER_LINE

PAGE = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


def _directives(text: str) -> list[str]:
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_the_deploy_pages_nginx_location_is_the_one_the_gateway_test_runs() -> None:
    (shown,) = re.findall(r"```nginx\n(.*?)```", PAGE.read_text(), re.S)
    tested = NGINX_CONF.replace("{{", "{").replace("}}", "}")
    location = tested[tested.index("location / {") :]
    location = location[: location.index("}") + 1]
    assert _directives(location) == _directives(
        shown[shown.index("location / {") : shown.index("}", shown.index("location / {")) + 1]
    )
    for directive in ("keepalive 64;", "client_max_body_size 8m;"):
        assert directive in shown and directive in tested
    assert SERVER_LINE.format(port=8001) in shown
