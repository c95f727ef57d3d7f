from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_tag.cli import main
from langchain_tag.rules import Rule, save_rules


def test_unknown_mode_exits_2_without_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "x", "--rules", str(tmp_path / "r.jsonl"), "--mode", "bm25"])
    assert exc.value.code == 2
    assert "invalid choice: 'bm25'" in capsys.readouterr().err


def test_bad_rule_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"rule_id": "a", "rule_name": "n", "condition": "c"}\n')
    assert main(["match", "some input", "--rules", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("langchain-tag: error:") and "r.jsonl:1: field 'action'" in err
    assert "Traceback" not in err


def test_debug_shows_the_exception(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        main(["--debug", "match", "x", "--rules", str(tmp_path / "missing.jsonl")])


def test_bad_skip_phases(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["extract", "doc.md", "-o", "r.jsonl", "--skip-phases", "7"])
    assert "phases are 1-5" in capsys.readouterr().err


def test_match_with_fake_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    import langchain_tag.models as models
    from langchain_tag.testing import fake_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: fake_judge({"R-003"}, with_logprobs=True))
    path = save_rules(rules, tmp_path / "rules.jsonl")
    assert main(["match", "def f():\n\treturn 1", "--rules", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"rule_id": "R-003", "p_yes": pytest.approx(0.9)}]
