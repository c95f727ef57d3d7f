"""Benchmark unit tests run offline: any socket other than a Unix one fails the test."""

from __future__ import annotations

import pytest
import pytest_socket


def pytest_runtest_setup(item: pytest.Item) -> None:
    pytest_socket.disable_socket(allow_unix_socket=True)
