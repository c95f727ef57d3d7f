"""The review page benchmark's synthetic corpus has the shape asked for, and the page reads it."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_tag.review import render_review
from langchain_tag.rules import load_rules
from langchain_tag_bench.review_page import DATA, page_parts, synthetic_corpus


def test_synthetic_corpus_and_its_page(tmp_path: Path) -> None:
    paths = synthetic_corpus(tmp_path, 6, 13)
    rules = load_rules(paths["rules"])
    assert [r.rule_id for r in rules][-3:] == ["R-011", "R-012", "R-013"] and len({r.rule_id for r in rules}) == 13
    verdicts = [json.loads(line) for line in paths["verdicts"].read_text().splitlines()]
    assert len(verdicts) == 6 and all(len(v["pairs"]) == 13 for v in verdicts)
    assert all(
        [m["rule_id"] for m in v["matched"]]
        == [p["rule_id"] for p in sorted(v["pairs"], key=lambda p: -p["score"]) if p["applies"]]
        for v in verdicts
    )
    page = render_review(
        paths["rules"],
        Path(str(DATA / "demo_policy.md")),
        tmp_path / "p.html",
        verdicts=paths["verdicts"],
        inputs=paths["inputs"],
        gold=paths["gold"],
        threshold=0.5,
    )
    html = page.read_text(encoding="utf-8")
    parts = page_parts(html)
    assert sum(parts.values()) == len(html) and parts["svg plots"] > 0 and parts["inputs section"] > 0
    assert html.count('class="span-ref"') == 13  # the repeated rules share their spans, each labelled
