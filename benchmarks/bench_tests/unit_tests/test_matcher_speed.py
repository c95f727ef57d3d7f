"""The pure parts of the matcher-speed benchmark: token arithmetic, pre-filter recall, synthetic rules."""

from __future__ import annotations

import pytest

from langchain_tag.judging.prompts import JUDGE_PROMPTS
from langchain_tag.rules import Rule
from langchain_tag.testing import prompt_text
from langchain_tag_bench.matcher_speed import (
    Calibration,
    MethodCost,
    common_prefix_length,
    minimal_tokens,
    prefilter_recall,
    synthetic_rules,
)
from langchain_tag_bench.prompts import rule_first_messages


def test_minimal_tokens_counts_each_prefix_once() -> None:
    system_and_input = [1, 2, 3, 4, 5]
    prompts = [system_and_input + [10, 11, 99], system_and_input + [20, 99], system_and_input + [30, 31, 32, 99]]
    # First prompt whole (8), then only what follows the shared prefix: 2, then 4.
    assert minimal_tokens(prompts) == (8 + 2 + 4, 5)
    assert minimal_tokens([]) == (0, 0)
    assert minimal_tokens([[1, 2, 3]]) == (3, 3)
    # Rule first: nothing shared after the first token, so (almost) everything is evaluated.
    assert minimal_tokens([[7, 1, 2], [8, 1, 2]]) == (6, 0)
    assert common_prefix_length([1, 2, 3], [1, 2, 4, 5]) == 2


def test_prefilter_keeps_only_matches_within_the_top_n() -> None:
    ranking = ["R1", "R2", "R3", "R4", "R5"]
    assert prefilter_recall(["R2", "R5"], ranking, 3) == (0.5, ["R2"])
    assert prefilter_recall(["R2", "R5"], ranking, 5) == (1.0, ["R2", "R5"])
    assert prefilter_recall([], ranking, 2) == (None, [])


def test_synthetic_rules_are_distinct_and_deterministic() -> None:
    rules = synthetic_rules(300, seed=3)
    assert len({r.condition for r in rules}) == 300 == len({r.rule_id for r in rules})
    assert [r.condition for r in synthetic_rules(300, seed=3)] == [r.condition for r in rules]
    assert [r.condition for r in synthetic_rules(20, seed=4)] != [r.condition for r in rules[:20]]


def test_limit_seconds_and_method_means() -> None:
    calibration = Calibration(prompt_tps=100.0, decode_seconds=0.05)
    assert calibration.limit_seconds(1000, 10) == pytest.approx(10.0 + 0.5)
    cost = MethodCost(
        "tag", inputs=2, seconds=[1.0, 3.0], evaluated=[10, 30], generated=[5, 5], calls=[5, 5], f1s=[0.5]
    )
    assert cost.row() == {"seconds": 2.0, "evaluated": 20.0, "generated": 5.0, "calls": 5.0, "f1": 0.5}


def test_rule_first_prompt_puts_the_rule_before_the_input() -> None:
    rule = Rule(rule_id="R-1", rule_name="n", condition="COND", action="ACT", source_text="s")
    text = prompt_text(rule_first_messages(JUDGE_PROMPTS["applicability"], "THE-INPUT", rule))
    assert text.index("COND") < text.index("THE-INPUT")
    assert "ACT" not in text  # the applicability judge never sees the action
    usual = prompt_text(JUDGE_PROMPTS["applicability"].messages("THE-INPUT", rule))
    assert usual.index("THE-INPUT") < usual.index("COND")


def test_extraction_costs_per_phase_and_per_thousand_words(capsys: pytest.CaptureFixture[str]) -> None:
    from langchain_core.documents import Document

    from langchain_tag.extraction import RuleDocumentTransformer
    from langchain_tag.testing import fake_extractor
    from langchain_tag_bench.matcher_speed import extraction_costs, per_thousand_words, print_extraction

    policy = "Rules\n=====\n\nNever use eval.\n\nAlways close files and sockets you open.\n"
    report = RuleDocumentTransformer(fake_extractor()).extract([Document(page_content=policy, id="p")]).report
    costs = extraction_costs(report)
    assert [c.phase for c in costs] == sorted(report.usage) and {1, 2, 3} <= {c.phase for c in costs}
    assert next(c for c in costs if c.phase == 2).calls == 1  # only the compound sentence went to phase 2
    assert per_thousand_words(500, 250) == 2000.0
    print_extraction(costs, 250, 10.0, 2)
    out = capsys.readouterr().out
    assert "| per 1,000 words |" in out and "Seconds per 1,000 words: 40." in out
