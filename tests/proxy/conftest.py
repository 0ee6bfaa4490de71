"""Fixtures for the proxy tests: the stub upstream, once per run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from proxy_stub import StubUpstream


@pytest.fixture(scope="session")
def stub_upstream() -> Iterator[StubUpstream]:
    stub = StubUpstream().start()
    yield stub
    stub.stop()
