"""The package's entry point: what ``langgraph.json`` names, and what a deployment reads in its docstring."""

from __future__ import annotations

import pytest

import langchain_tag.app
from langchain_tag.app import ContextError, make_graph


def test_the_docstring_says_which_checkpointer_a_deployment_uses() -> None:
    doc = " ".join((langchain_tag.app.__doc__ or "").split())
    assert "langgraph dev" in doc and "in memory" in doc
    assert "Postgres" in doc and "SQLite" in doc and "checkpointer" in doc


def test_make_graph_refuses_a_context_key_the_server_would_drop() -> None:
    pytest.importorskip("langgraph_sdk.runtime")
    from langgraph.store.memory import InMemoryStore
    from langgraph_sdk.runtime import _ExecutionRuntime, _ReadRuntime

    run = _ExecutionRuntime(access_context="threads.create_run", store=InMemoryStore(), context={"check_round": 0})
    with pytest.raises(ContextError, match=r"unknown context key 'check_round' \(did you mean 'check_rounds'\?\)"):
        make_graph({}, run)
    fine = _ExecutionRuntime(access_context="threads.create_run", store=InMemoryStore(), context={"check_rounds": 0})
    read = _ReadRuntime(access_context="assistants.read", store=InMemoryStore())
    assert all(make_graph({}, runtime).name == "tag" for runtime in (fine, read, None))
