"""The package's entry point: what ``langgraph.json`` names, and what a deployment reads in its docstring."""

from __future__ import annotations

import langchain_tag.app


def test_the_docstring_says_which_checkpointer_a_deployment_uses() -> None:
    doc = " ".join((langchain_tag.app.__doc__ or "").split())
    assert "langgraph dev" in doc and "in memory" in doc
    assert "Postgres" in doc and "SQLite" in doc and "checkpointer" in doc
