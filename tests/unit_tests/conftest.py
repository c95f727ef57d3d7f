"""Unit tests run offline: any socket other than a Unix one fails the test."""

from __future__ import annotations

import pytest
import pytest_socket


def pytest_runtest_setup(item: pytest.Item) -> None:
    pytest_socket.disable_socket(allow_unix_socket=True)


@pytest.fixture(autouse=True)
def _own_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test gets its own cache directory, so nothing a test stores (verdicts, extraction calls) leaks."""
    monkeypatch.setenv("LANGCHAIN_TAG_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
