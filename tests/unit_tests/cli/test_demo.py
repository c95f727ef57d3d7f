"""The demo's line on the revision states the judge's reading and how often such readings were right, never a fact."""

from __future__ import annotations

import re
from pathlib import Path

from langchain_tag.cli.demo import CHECK_AGREEMENT, DemoRow, render_row
from langchain_tag.rules import Rule

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "first-run.md"

RULES = {
    "R-001": Rule(rule_id="R-001", rule_name="default argument value must be None", condition="c", action="a"),
    "R-003": Rule(rule_id="R-003", rule_name="bare except clause", condition="c", action="a"),
}


def _row(remaining: list[tuple[str, float | None]]) -> DemoRow:
    return DemoRow(
        input="def f(tags=[]):\n    return tags",
        matched=[("R-001", "default argument value must be None", 0.8, 0.9), ("R-003", "bare except", 0.7, 0.8)],
        output="def f(tags=None):\n    return tags or []",
        remaining=remaining,
        checked=2,
    )


def test_the_revision_line_is_the_judges_reading_with_its_score_and_its_benchmark_record() -> None:
    agreed, compared = CHECK_AGREEMENT
    share = f"{agreed / compared:.0%}".replace("%", " %")
    for remaining in ([("R-001", 0.62)], []):
        text = render_row(1, _row(remaining), RULES)
        assert "Checked:" not in text and "still breaks" not in text  # no finding stated as a fact
        assert "the judge reads" in text.lower()
        assert f"agreed with ruff on {agreed} of {compared}" in text and share in text
        assert "about chance" in text
    flagged = render_row(1, _row([("R-001", 0.62)]), RULES)
    assert "R-001 default argument value must be None (score 0.62)" in flagged


def test_the_cited_record_is_the_one_the_benchmark_page_shows() -> None:
    """The demo cites the check-loop row of its own default (one extra round) on the demo set."""
    text = RESULTS.read_text(encoding="utf-8")
    section = text.split("## Revise, then check", 1)[1].split("**The ruff set**", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| 1 (the default)"))
    agreed, compared = CHECK_AGREEMENT
    found = re.search(r"(\d+) % of (\d+)", row)
    assert found is not None and int(found.group(2)) == compared
    assert int(found.group(1)) == round(100 * agreed / compared)


def test_the_demo_reads_no_revision_by_default() -> None:
    """The check-loop page: the check off agreed with ruff on 14 of 15, the judge's reading on 7, at a call a rule."""
    import inspect

    from langchain_tag.cli.demo import run_demo
    from langchain_tag.cli.main import build_parser

    assert build_parser().parse_args(["demo"]).check_rounds == 0
    assert inspect.signature(run_demo).parameters["check_rounds"].default == 0
    assert build_parser().parse_args(["demo", "--check-rounds", "1"]).check_rounds == 1
