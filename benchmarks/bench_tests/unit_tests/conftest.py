"""Benchmark unit tests run offline: any socket other than a Unix one fails the test."""

from __future__ import annotations

import pytest
import pytest_socket

from langchain_tag.rules import Rule


def pytest_runtest_setup(item: pytest.Item) -> None:
    pytest_socket.disable_socket(allow_unix_socket=True)


@pytest.fixture
def rules() -> list[Rule]:
    """Five small rules with distinctive, secret-marked actions."""
    specs = [
        (
            "R-001",
            "wildcard import",
            "the code imports with `from m import *`",
            "replace it with explicit imports",
            ["imports"],
        ),
        (
            "R-002",
            "several modules one line",
            "one import statement names several modules",
            "put each import on its own line",
            ["imports"],
        ),
        (
            "R-003",
            "tabs for indentation",
            "a line is indented with tab characters",
            "indent with four spaces",
            ["indentation"],
        ),
        (
            "R-004",
            "mutable default argument",
            "a function has a list or dict as a default argument value",
            "use None and create the value inside",
            ["functions"],
        ),
        (
            "R-005",
            "bare except clause",
            "an except clause names no exception class",
            "catch a specific exception class",
            ["exceptions"],
        ),
    ]
    return [
        Rule(rule_id=i, rule_name=n, condition=c, action=f"ACTION<{a}>", source_text=f"source of {i}", category_tags=t)
        for i, n, c, a, t in specs
    ]
