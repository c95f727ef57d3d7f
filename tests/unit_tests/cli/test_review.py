"""``langchain-tag review``: the page from the command line, and its errors in one line."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import pytest

from langchain_tag.cli.main import main

DATA = files("langchain_tag") / "data"
RULES = str(DATA / "demo_rules.jsonl")
POLICY = str(DATA / "demo_policy.md")


def test_review_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sub" / "review.html"
    assert main(["review", RULES, "--source", POLICY, "-o", str(out), "--title", "Demo policy"]) == 0
    html = out.read_text(encoding="utf-8")
    assert "<title>Demo policy</title>" in html and html.count('class="span-ref"') == 10
    assert f"wrote {out}" in capsys.readouterr().err


def test_review_with_verdicts_inputs_and_gold(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text(json.dumps({"id": "a", "text": "def f(x=[]): pass"}) + "\n", encoding="utf-8")
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(
        json.dumps({"id": "a", "matched": [{"rule_id": "R-001", "score": 0.8, "p_yes": 0.9}], "failed": []}) + "\n",
        encoding="utf-8",
    )
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "a", "rule_ids": ["R-001", "R-005"]}) + "\n", encoding="utf-8")
    out = tmp_path / "review.html"
    argv = ["review", RULES, "--source", POLICY, "-o", str(out), "--verdicts", str(verdicts), "--inputs", str(inputs)]
    assert main([*argv, "--gold", str(gold), "--threshold", "0.3"]) == 0
    html = out.read_text(encoding="utf-8")
    assert 'data-threshold="0.3"' in html and "def f(x=[]): pass" in html
    assert '<td class="num" id="overall-f1">66.7%</td>' in html  # TP 1, FN 1


def test_review_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(json.dumps({"id": "a", "matched": [{"rule_id": "X-9", "score": 0.8}]}) + "\n", encoding="utf-8")
    out = tmp_path / "review.html"
    assert main(["review", RULES, "--source", POLICY, "-o", str(out), "--verdicts", str(verdicts)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(verdicts) in err and RULES in err and "'X-9'" in err
    assert not out.exists()
    with pytest.raises(SystemExit) as exited:
        main(["review", RULES, "--source", POLICY, "-o", str(out), "--gold", str(verdicts)])
    assert exited.value.code == 2 and "--gold needs --verdicts" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["review", RULES, "--source", POLICY, "-o", str(out), "--threshold", "1.5"])
    assert "threshold must be a number within [0, 1], got '1.5'" in capsys.readouterr().err
    assert main(["review", RULES, "--source", str(tmp_path / "missing.md"), "-o", str(out)]) == 1
    assert "missing.md" in capsys.readouterr().err
