from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_tag.executors import EXECUTOR_PROMPTS, executor_chain, format_units, unfence
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel


def test_rule_units_are_id_and_action_only(rules: list[Rule]) -> None:
    units = format_units([r.to_document() for r in rules[:2]], "rules")
    assert units == [
        ("R-001", "ACTION<replace it with explicit imports>"),
        ("R-002", "ACTION<put each import on its own line>"),
    ]


def test_chunk_units_use_chunk_ids() -> None:
    docs = [Document(page_content="alpha", metadata={"chunk_id": "C7"}), Document(page_content="beta")]
    assert format_units(docs, "chunks") == [("C7", "alpha"), ("C2", "beta")]


def test_plain_chunk_in_rule_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not a rule document"):
        format_units([Document(page_content="x")], "rules")


@pytest.mark.parametrize("domain", sorted(EXECUTOR_PROMPTS))
def test_executor_chain_runs_for_each_domain(rules: list[Rule], domain: str) -> None:
    llm = FakeChatModel(respond=lambda text: "OK" if "ACTION<indent with four spaces>" in text else "MISSING")
    chain = executor_chain(llm, executor=domain)
    assert chain.invoke({"input": "x", "documents": [rules[2].to_document()], "unit_kind": "rules"}) == "OK"


def test_unknown_domain() -> None:
    with pytest.raises(ValueError, match="generic"):
        executor_chain(FakeChatModel(respond=lambda t: ""), executor="legal")


def test_no_matched_units_is_the_no_retrieval_prompt() -> None:
    from langchain_tag.executors import executor_messages
    from langchain_tag.testing import prompt_text

    none = prompt_text(executor_messages("x = 1", [], executor="code_review", unit_kind="none"))
    assert prompt_text(executor_messages("x = 1", [], executor="code_review", unit_kind="rules")) == none
    assert prompt_text(executor_messages("x = 1", [], executor="code_review", unit_kind="chunks")) == none


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("```python\ndef f():\n    return 1\n```", "def f():\n    return 1"),
        ("  ~~~\nx = 1\n~~~\n", "x = 1"),
        ("def f():\n    return 1\n", "def f():\n    return 1\n"),  # bare code: unchanged
        ("Here it is:\n```python\nx = 1\n```", "Here it is:\n```python\nx = 1\n```"),  # prose around: unchanged
        ("```\na = 1\n```\n\n```\nb = 2\n```", "```\na = 1\n```\n\n```\nb = 2\n```"),  # two blocks: unchanged
    ],
)
def test_unfence_unwraps_only_a_reply_that_is_one_fenced_block(reply: str, expected: str) -> None:
    assert unfence(reply) == expected


def test_the_code_review_executor_returns_bare_code() -> None:
    llm = FakeChatModel(respond=lambda t: "```python\nprint(1)\n```")
    assert executor_chain(llm, executor="code_review").invoke({"input": "x", "documents": []}) == "print(1)"
    assert executor_chain(llm, executor="generic").invoke({"input": "x", "documents": []}).startswith("```")
