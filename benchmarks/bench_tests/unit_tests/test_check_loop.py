"""The check-loop benchmark's scoring: ruff, not the judge, counts what each round left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_tag_bench.check_loop import RULE_CODES, _inputs, ruff_codes, score


def test_ruff_codes_report_rule_codes_syntax_errors_and_undefined_names() -> None:
    found = ruff_codes(["def f(x=[]):\n    return x\n", "logging.info(1)\n", "def f(:\n"], ["B006"])
    assert "B006" in found[0] and "F821" in found[1] and found[2] & {"E999", "invalid-syntax"}


def test_inputs_are_the_demos_then_cases_ruff_flags() -> None:
    inputs = _inputs(5)
    assert len(inputs) == 5 and inputs[0].startswith("def add_tag")


def test_score_counts_violations_left_broken_outputs_and_judge_agreement() -> None:
    inputs = ["def add_tag(tag, tags=[]):\n    return tags\n"]
    fixed = "def add_tag(tag, tags=None):\n    return tags or []\n"
    records = [
        {
            "input": 0,
            "extra_rounds": 0,
            "matched": ["R-001"],
            "output": inputs[0],
            "remaining_by_judge": ["R-001"],
            "executor_calls": 1,
            "seconds": 2.0,
        },
        {
            "input": 0,
            "extra_rounds": 1,
            "matched": ["R-001"],
            "output": fixed,
            "remaining_by_judge": ["R-001"],
            "executor_calls": 2,
            "seconds": 5.0,
        },
    ]
    rows = score(records, inputs)
    assert "B006" in RULE_CODES["R-001"]
    assert [r["violations_left"] for r in rows] == [1, 0]
    assert [r["violations_in_inputs"] for r in rows] == [1, 1]
    assert [r["judge_agrees_with_ruff"] for r in rows] == [1.0, 0.0]  # the judge still saw R-001 after the fix
    assert [r["broken_outputs"] for r in rows] == [0, 0] and rows[1]["executor_calls"] == 2


def test_the_ruff_set_gives_violating_cases_the_statements_as_rules_and_their_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_tag_bench import ruff_cases
    from langchain_tag_bench.check_loop import ruff_set

    cases = [
        {
            "id": f"ruff-{i:04d}",
            "code": f"def f{i}():\n    pass\n",
            "violates": ["S01"] if i % 2 else [],
            "split": "test",
        }
        for i in range(6)
    ]
    where = tmp_path / "cases.jsonl"
    where.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    monkeypatch.setattr(ruff_cases, "cached_cases", lambda cache_dir: where)
    inputs, rules, codes = ruff_set(2, tmp_path)
    assert len(inputs) == 2 and all(int(i.split("(")[0][5:]) % 2 for i in inputs)  # only violating cases
    assert [r.rule_id for r in rules] == [s["id"] for s in ruff_cases.load_statements()]
    assert codes["S01"] == ("E722",) and "bare `except:`" in rules[0].action
    rows = score(
        [
            {
                "input": 0,
                "extra_rounds": 0,
                "matched": ["S01"],
                "output": "try:\n    x()\nexcept:\n    y()\n",
                "remaining_by_judge": None,
                "executor_calls": 1,
                "seconds": 1.0,
            }
        ],
        ["try:\n    x()\nexcept:\n    y()\n"],
        codes,
    )
    assert rows[0]["violations_in_inputs"] == 1 and rows[0]["violations_left"] == 1


def test_the_four_checks_of_a_revision_are_scored_against_ruff_and_resume(tmp_path: Path) -> None:
    """Absolute (the rule on the revision), differential (did its score fall), paired (both shown), off."""
    import re

    from langchain_tag.rules import Rule
    from langchain_tag.testing import FakeChatModel
    from langchain_tag_bench.check_loop import score_variants, variant_checks

    rules = [Rule(rule_id="R-001", rule_name="mutable default", condition="a default is a list", action="use None")]
    inputs = ["def f(tags=[]):\n    return tags\n", "def g(tags=[]):\n    return tags\n"]
    outputs = ["def f(tags=None):\n    return tags or []\n", inputs[1]]  # the first fixed, the second not
    records = [
        {"input": n, "extra_rounds": 0, "matched": ["R-001"], "output": out, "remaining_by_judge": None}
        for n, out in enumerate(outputs)
    ]

    def respond(prompt: str) -> tuple[str, float]:
        text = re.search(r"INPUT:\n<<<\n(.*?)\n>>>", prompt, re.DOTALL).group(1)
        if "REVISED CODE" in text:  # the paired check reads the revision beside its original: it sees the fix
            return ("YES", 0.9) if "=[]" in text.split("REVISED CODE", 1)[1] else ("NO", 0.1)
        return ("YES", 0.9) if "=[]" in text else ("YES", 0.6)  # alone, a fixed revision still reads as YES

    judge = FakeChatModel(respond=respond, with_logprobs=True)
    path = tmp_path / "variants.jsonl"
    rows = variant_checks(inputs, records, {"R-001": ("B006",)}, path, rules, judge)
    assert [(r["input"], r["ruff_still"], r["absolute_still"], r["paired_still"]) for r in rows] == [
        (0, False, True, False),
        (1, True, True, True),
    ]
    calls = judge.calls
    assert variant_checks(inputs, records, {"R-001": ("B006",)}, path, rules, judge) == rows
    assert judge.calls == calls  # every reading was kept: nothing judged again

    scored = {row["check"].split(" ")[0]: row for row in score_variants(rows)}
    assert scored["off"]["agrees"] == 1 and scored["absolute"]["agrees"] == 1 and scored["paired"]["agrees"] == 2
    differential = [row for name, row in scored.items() if name == "differential"]
    assert differential and differential[0]["agrees"] == 2  # the fixed revision's score fell from 0.9 to 0.6
    assert scored["off"]["judge_calls_per_rule"] == 0 and scored["paired"]["seconds_per_rule"] >= 0
