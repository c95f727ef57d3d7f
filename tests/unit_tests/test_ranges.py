"""Each numeric setting's range is checked in one place: a bad value gets the same message on every front."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

import pytest

from langchain_tag import ApplicabilityRetriever, Rule
from langchain_tag.cascade_retriever import CascadeRetriever
from langchain_tag.cli.main import main
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.rules import save_rules
from langchain_tag.testing import fake_judge

DATA = files("langchain_tag") / "data"
THRESHOLD_MESSAGE = re.compile(r"threshold must be a number within \[0, 1\], got '?2(\.0)?'?")


def test_a_bad_threshold_gets_one_message_on_every_front(
    rules: list[Rule], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_tag.review import render_review

    said: dict[str, str] = {}
    retriever = ApplicabilityRetriever(llm=fake_judge(set()), rules=rules, calibration=None)
    with pytest.raises(ValueError) as exc:
        retriever.invoke("x = 1", threshold=2)
    said["retriever"] = str(exc.value)
    path = str(save_rules(rules, tmp_path / "rules.jsonl"))
    for front, argv in {
        "match": ["match", "x", "--rules", path, "--threshold", "2"],
        "review": ["review", str(DATA / "demo_rules.jsonl"), "--source", str(DATA / "demo_policy.md")]
        + ["-o", str(tmp_path / "review.html"), "--threshold", "2"],
    }.items():
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        said[front] = capsys.readouterr().err
    with pytest.raises(ValueError) as exc:
        render_review(str(DATA / "demo_rules.jsonl"), str(DATA / "demo_policy.md"), tmp_path / "r.html", threshold=2)
    said["render_review"] = str(exc.value)
    strong = ApplicabilityRetriever(llm=fake_judge(set()), rules=rules, calibration=None)
    cascade = CascadeRetriever(cheap=retriever, strong=strong, low=0.1, high=0.9)
    with pytest.raises(ValueError) as exc:
        cascade.invoke("x = 1", threshold=2)
    said["cascade retriever"] = str(exc.value)
    with pytest.raises(ValueError) as exc:
        Calibration(method="identity", threshold=2)
    said["calibration"] = str(exc.value)

    assert {front: bool(THRESHOLD_MESSAGE.search(text)) for front, text in said.items()} == dict.fromkeys(said, True)
