from __future__ import annotations

from langchain_tag.extraction._span_detection import Span
from langchain_tag.extraction._verification import find_source, independence_ratio, uncovered_spans, verify_faithfulness
from langchain_tag.rules import Rule

DOC = (
    "Code should be indented with four spaces per level. Tabs should be used solely to remain consistent "
    "with code that is already indented with tabs. Limit all lines to a maximum of 79 characters."
)


def _rule(i: int, source: str, doc: str = "d") -> Rule:
    return Rule(rule_id=f"R-{i}", rule_name=f"name {i}", condition="c", action="a", source_text=source, document_id=doc)


def test_exact_source_found_with_offsets() -> None:
    start, end, score = find_source("Limit all lines to a maximum of 79 characters.", DOC)
    assert DOC[start:end] == "Limit all lines to a maximum of 79 characters." and score == 1.0


def test_fuzzy_source_above_threshold() -> None:
    found = find_source("Limit all lines to maximum of 79 characters", DOC)
    assert found is not None and 0.85 < found[2] < 1.0
    assert "79 characters" in DOC[found[0] : found[1]]


def test_unrelated_source_is_not_found() -> None:
    assert find_source("Always write docstrings for public modules and classes.", DOC) is None
    assert find_source("", DOC) is None


def test_verify_drops_unfaithful_and_records_offsets() -> None:
    rules = [
        _rule(1, "Code should be indented with four spaces per level."),
        _rule(2, "Use type hints everywhere you can, always."),
        _rule(3, "x", doc="other"),
    ]
    kept, dropped = verify_faithfulness(rules, {"d": DOC})
    assert [r.rule_id for r in kept] == ["R-1"]
    assert DOC[kept[0].source_start : kept[0].source_end] == rules[0].source_text and kept[0].faithfulness == 1.0
    assert {d.rule_id for d in dropped} == {"R-2", "R-3"}


def test_coverage_needs_half_the_span() -> None:
    span = Span("S-1", "d", "d#1", DOC[0:100], "requirement", "", 0, 100)
    assert uncovered_spans([span], {"d": [(0, 49)]}) == [span]
    assert uncovered_spans([span], {"d": [(0, 30), (20, 50)]}) == []  # overlapping ranges counted once
    assert uncovered_spans([span], {"other": [(0, 100)]}) == [span]


def test_independence_ratio() -> None:
    rules = [_rule(1, "s"), _rule(2, "s"), _rule(3, "s").model_copy(update={"rule_name": "Name  1"})]
    assert independence_ratio(rules) == 2 / 3
    assert independence_ratio([]) == 1.0
