from __future__ import annotations

from langchain_tag.rules import Rule
from langchain_tag.testing import prompt_text
from langchain_tag_bench.prompts import BENCH_EXECUTOR_PROMPTS, BENCH_JUDGE_PROMPTS


def _rule() -> Rule:
    return Rule(
        rule_id="R-7",
        rule_name="the name",
        condition="THE-CONDITION",
        action="THE-ACTION",
        category_tags=["t"],
        applies_when="a trade",
        constraint="THE-CONSTRAINT",
        does_not_apply_to=["VETO-ITEM"],
    )


def test_nba_prompt_shows_rich_schema_and_vetoes_but_not_action() -> None:
    text = prompt_text(BENCH_JUDGE_PROMPTS["nba"].messages("x", _rule(), "json"))
    assert "VETO-ITEM" in text and "THE-CONSTRAINT" in text and "a trade" in text
    assert "THE-ACTION" not in text
    assert '"applicable"' in text


def test_executor_rule_mode_lists_only_ids_and_actions() -> None:
    text = prompt_text(BENCH_EXECUTOR_PROMPTS["npov"].messages("INPUT-S", [("R-1", "do X")], "rules"))
    assert "[R-1] do X" in text and "INPUT-S" in text and "Applied rules:" in text


def test_nba_prompt_reads_vetoes_from_a_rule_document() -> None:
    rule = Rule.from_document(_rule().to_document())
    assert "VETO-ITEM" in prompt_text(BENCH_JUDGE_PROMPTS["nba"].messages("x", rule, "json"))
