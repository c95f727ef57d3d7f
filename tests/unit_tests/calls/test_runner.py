"""The call runner: each reply read once, and nothing of a run kept at module level."""

from __future__ import annotations

import functools
import sys
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableLambda

from langchain_tag.judging import _read as read
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import fake_judge


def _copied(message: BaseMessage) -> AIMessage:
    """A new message object with the reply's content and metadata (what ``llm | RunnableLambda(...)`` may return)."""
    return AIMessage(content=message.content, response_metadata=dict(message.response_metadata))


def _rules(count: int) -> list[Rule]:
    return [
        Rule(rule_id=f"R{i}", rule_name=f"rule {i}", condition=f"condition {i}", action=f"a{i}") for i in range(count)
    ]


def _module_state() -> dict[str, int]:
    """The size of every module-level mutable container (and function cache) of the package."""
    sizes = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("langchain_tag") or module is None:
            continue
        for attr, value in vars(module).items():
            if isinstance(value, dict | list | set | bytearray):
                sizes[f"{name}.{attr}"] = len(value)
            elif isinstance(value, functools._lru_cache_wrapper):
                sizes[f"{name}.{attr}()"] = value.cache_info().currsize
    return sizes


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_reply_is_read_once_and_no_module_state_grows(use_async: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = read.read_reply

    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(read, "read_reply", counted)
    judge = fake_judge({"R1", "R3"}, with_logprobs=True) | RunnableLambda(_copied)
    retriever = ApplicabilityRetriever(llm=judge, rules=_rules(6), calibration=None)
    retriever.invoke("warm-up input")  # imports and one-time set-up happen here
    before, reads[:] = _module_state(), []
    for n in range(5):
        query = f"fresh input {n}"
        found = await retriever.ainvoke(query) if use_async else retriever.invoke(query)
        assert [d.id for d in found] == ["R1", "R3"]
    assert len(reads) == 30  # 5 inputs x 6 rules, each reply read once
    grown = {k: (before.get(k, 0), v) for k, v in _module_state().items() if v > before.get(k, 0)}
    assert grown == {}
