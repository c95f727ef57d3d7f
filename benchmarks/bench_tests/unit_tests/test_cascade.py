"""The cascade replayed from two recorded quality runs: band on dev, shares, agreement, F1 and time on test."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.rules import Rule, save_rules
from langchain_tag_bench.cascade import cascade_report, load_judge_run, main
from langchain_tag_bench.quality import FITTED_FILE, RECORDS_FILE, load_quality_set

STATEMENTS = {
    "S1": "Never call eval on user input.",
    "S2": "Always close files you open.",
    "S3": "Do not catch bare exceptions.",
}
CASES = {  # id -> (split, statements violated)
    "d1": ("dev", ["S1"]),
    "d2": ("dev", ["S2"]),
    "t1": ("test", ["S3"]),
    "t2": ("test", []),
}
# Case -> (R1, R2, R3) scores. The cheap judge errs near its threshold (0.45..0.6) and once far from it (t2 R3).
CHEAP = {"d1": (0.9, 0.1, 0.55), "d2": (0.1, 0.45, 0.1), "t1": (0.2, 0.1, 0.48), "t2": (0.6, 0.05, 0.95)}
STRONG = {"d1": (0.9, 0.1, 0.1), "d2": (0.1, 0.9, 0.1), "t1": (0.1, 0.1, 0.9), "t2": (0.1, 0.1, 0.1)}


def _quality_set(root: Path) -> Path:
    directory = root / "tiny"
    directory.mkdir()
    (directory / "policy.md").write_text("# Policy\n\n" + "\n\n".join(STATEMENTS.values()) + "\n", encoding="utf-8")
    statements = [{"id": sid, "text": text} for sid, text in STATEMENTS.items()]
    (directory / "statements.json").write_text(json.dumps(statements), encoding="utf-8")
    with (directory / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for cid, (split, violates) in CASES.items():
            fh.write(json.dumps({"id": cid, "code": f"# case {cid}\npass\n", "violates": violates, "split": split}))
            fh.write("\n")
    return directory


def _rules() -> list[Rule]:
    return [
        Rule(rule_id=f"R{i}", rule_name=f"rule {i}", condition=f"condition {i}", action="act", source_text=text)
        for i, text in enumerate(STATEMENTS.values(), start=1)
    ]


def _run(root: Path, name: str, scores: Mapping[str, tuple[float, ...]], seconds: float, rules: list[Rule]) -> Path:
    """A run directory as ``bench quality --methods tag,tag-fitted`` leaves it (features: logit of the score)."""
    directory = root / name
    directory.mkdir()
    save_rules(rules, directory / "rules.jsonl")
    Calibration(method="platt", slope=1.0, intercept=0.0, threshold=0.5).save(directory / FITTED_FILE)
    with (directory / RECORDS_FILE).open("w", encoding="utf-8") as fh:
        for cid, values in scores.items():
            split = CASES[cid][0]
            judgments = [
                {"rule_id": r.rule_id, "p_yes": p, "score": p, "applies": p >= 0.5}
                for r, p in zip(rules, values, strict=True)
            ]
            tag: dict[str, Any] = {
                "method": "tag",
                "key": cid,
                "split": split,
                "threshold": 0.5,
                "judgments": judgments,
            }
            tag.update(calls=len(values), seconds=seconds * len(values), units=[])
            fitted_judgments = [{**j, "feature": math.log(j["p_yes"] / (1 - j["p_yes"]))} for j in judgments]
            fitted: dict[str, Any] = {"method": "tag-fitted", "key": cid, "split": split, "judgments": fitted_judgments}
            fitted.update(calls=0, seconds=0.0, units=[])
            fh.write(json.dumps(tag) + "\n" + json.dumps(fitted) + "\n")
    return directory


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    rules = _rules()
    return (
        _quality_set(tmp_path),
        _run(tmp_path, "cheap", CHEAP, 0.1, rules),
        _run(tmp_path, "strong", STRONG, 0.5, rules),
    )


def test_load_judge_run_reads_scores_threshold_and_timing(runs: tuple[Path, Path, Path]) -> None:
    _, cheap_dir, _ = runs
    cheap = load_judge_run(cheap_dir)
    assert cheap.row == "tag-fitted" and cheap.threshold == 0.5
    assert cheap.scores["t2"] == pytest.approx({"R1": 0.6, "R2": 0.05, "R3": 0.95})
    assert cheap.seconds_per_judgment == pytest.approx(0.1) and cheap.judgments_timed == 12
    assert cheap.split_of == {"d1": "dev", "d2": "dev", "t1": "test", "t2": "test"}
    assert cheap.rule_ids == ["R1", "R2", "R3"]
    assert load_judge_run(cheap_dir, "tag-raw").scores["d1"]["R3"] == pytest.approx(0.55)
    with pytest.raises(ValueError, match="unknown row"):
        load_judge_run(cheap_dir, "tag-domain")


def test_report_rows(runs: tuple[Path, Path, Path]) -> None:
    set_dir, cheap_dir, strong_dir = runs
    report = cascade_report(
        load_quality_set(set_dir),
        load_judge_run(cheap_dir),
        load_judge_run(strong_dir),
        targets=[1.0, 0.5],
        reference=load_judge_run(strong_dir, "tag"),
    )
    assert (report.dev_cases, report.dev_pairs) == (2, 6)
    cheap, strong, reference, full, loose = report.rows
    assert (cheap.strong_share, cheap.agreement, cheap.f1) == (0.0, pytest.approx(3 / 6), 0.0)
    assert cheap.seconds_per_case == pytest.approx(6 * 0.1 / 2)
    assert (strong.strong_share, strong.agreement, strong.f1) == (1.0, 1.0, 1.0)
    assert strong.seconds_per_case == pytest.approx(6 * 0.5 / 2)
    assert reference.f1 == 1.0 and "reference" in reference.label
    # Target 100%: the dev band covers 0.45 and 0.55, midway to their neighbours; on test it catches 0.48 and 0.6.
    assert full.band is not None
    assert (full.band.low, full.band.high) == (pytest.approx(0.275), pytest.approx(0.725))
    assert full.band.strong_share == pytest.approx(2 / 6) and full.band.agreement == 1.0
    assert (full.strong_share, full.agreement) == (pytest.approx(2 / 6), pytest.approx(5 / 6))
    assert (full.precision, full.recall, full.f1) == (0.5, 1.0, pytest.approx(2 / 3))
    assert full.seconds_per_case == pytest.approx((6 * 0.1 + 2 * 0.5) / 2)
    # Target 50%: the cheap judge alone already agrees on 4 of 6 dev pairs, so no dev pair is sent; the empty
    # band still reaches midway to the nearest dev scores, [0.475, 0.525], and catches 0.48 on test.
    assert loose.band is not None and loose.band.strong_share == 0.0
    assert (loose.band.low, loose.band.high) == (pytest.approx(0.475), pytest.approx(0.525))
    assert (loose.strong_share, loose.f1) == (pytest.approx(1 / 6), pytest.approx(0.5))
    table = report.markdown()
    assert "| cascade, dev agreement >= 100% | [0.275, 0.725] | 33%, 100.0% | 33% | 83.3% |" in table


def test_main_prints_the_table(
    runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    set_dir, cheap_dir, strong_dir = runs
    out = tmp_path / "table.md"
    code = main(
        ["--cheap", str(cheap_dir), "--strong", str(strong_dir), "--set", str(set_dir), "--targets", "0.95"]
        + ["--cache-dir", str(tmp_path), "--out", str(out), "--strong-seconds", "2.0"]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "2.000 s / judgment" in printed and "| 6.0 |" in printed  # strong alone: 6 pairs x 2.0 s / 2 cases
    assert "cascade, dev agreement >= 95%" in printed and "strong alone, `tag` (reference" in printed
    assert out.read_text(encoding="utf-8").strip() == printed.strip()


def test_runs_with_other_rules_are_refused(
    runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    set_dir, cheap_dir, _ = runs
    other = _run(tmp_path, "other", {c: v[::-1] for c, v in STRONG.items()}, 0.5, _rules()[::-1])
    code = main(
        ["--cheap", str(cheap_dir), "--strong", str(other), "--set", str(set_dir), "--cache-dir", str(tmp_path)]
    )
    assert code == 2
    assert "judged different rules" in capsys.readouterr().err


def test_missing_records_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no records\.jsonl"):
        load_judge_run(tmp_path)
