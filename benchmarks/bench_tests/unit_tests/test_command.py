"""``langchain-tag bench`` end to end with fake models: tables printed, files written, errors one line."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench_tests.unit_tests.test_tasks import nba_dir  # noqa: F401  (fixture)
from langchain_tag.cli import main as cli
from langchain_tag.judging.prompts import JUDGE_PROMPTS
from langchain_tag.local import models
from langchain_tag.local.models import ModelConfig
from langchain_tag.testing import FakeChatModel, HashingEmbeddings, judged_rule_id
from langchain_tag_bench.command import add_bench_parser, model_config_for

STEPIEN = "stepien_rule_no_sell_or_no_consecutive_first_round_draft_pick_trade"


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    made: dict[str, Any] = {}

    def executor_reply(prompt: str) -> str:
        # Says "illegal, operation A, team A" when the draft-pick rule was given, else "legal".
        if re.search(r"\[" + STEPIEN + r"\]", prompt):
            return '{"answer": true, "illegal_operation": "A", "problematic_team": "A", "rationale": "r"}'
        return '{"answer": false, "illegal_operation": null, "problematic_team": null, "rationale": "r"}'

    def judge_reply(prompt: str) -> str:
        # YES for the draft-pick rule, and only for the scenario that trades draft picks.
        return "YES" if judged_rule_id(prompt) == STEPIEN and "draft pick" in prompt.split("RULE:")[0] else "NO"

    def get_chat_model(config: Any = None, *, role: str = "executor", **kw: Any) -> Any:
        reply = judge_reply if role == "judge" else executor_reply
        made[role] = FakeChatModel(respond=reply, with_logprobs=role == "judge")
        return made[role]

    monkeypatch.setattr(models, "get_chat_model", get_chat_model)
    monkeypatch.setattr(models, "get_embeddings", lambda: HashingEmbeddings())
    return made


def test_bench_nba_retrieval_only(nba_dir: Path, tmp_path: Path, fake_models: dict, capsys) -> None:  # noqa: F811
    out = tmp_path / "run"
    code = cli.main(
        ["bench", "nba", "--retrieval-only", "--methods", "similarity@2,tag", "--data", str(nba_dir), "--out", str(out)]
    )
    assert code == 0
    printed = capsys.readouterr()
    assert "| rules + similarity k=2 | 3 |" in printed.out and "| M3 TAG | 3 |" in printed.out
    assert "executor" not in fake_models  # no executor in a retrieval-only run
    assert fake_models["judge"].calls == 3 * 4  # 3 problems x 4 catalog rules
    assert (out / "retrieval.md").exists() and (out / "retrieval.png").exists()
    assert "6 new records" in printed.err
    assert "tag L0-000  units=1  recall=1.00" in printed.err  # one progress line per item without a terminal


def test_bench_nba_full_run_scores_strict_accuracy(nba_dir: Path, tmp_path: Path, fake_models: dict, capsys) -> None:  # noqa: F811
    out = tmp_path / "run"
    assert cli.main(["bench", "nba", "--methods", "none,tag", "--data", str(nba_dir), "--out", str(out)]) == 0
    table = capsys.readouterr().out
    records = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
    strict = {(r["method"], r["key"]): r["scores"]["strict"] for r in records}
    # Gold: L0-000 illegal (A, A); L0-001 legal; L1-000 illegal (A, C).
    assert strict == {
        ("none", "L0-000"): False,
        ("none", "L0-001"): True,
        ("none", "L1-000"): False,
        ("tag", "L0-000"): True,
        ("tag", "L0-001"): True,
        ("tag", "L1-000"): False,
    }
    # Strict % per level L0 / L1 / L2 / all: M0 50 / 0 / - / 33.3, TAG 100 / 0 / - / 66.7.
    assert "| M0 no retrieval | 3 | 50.0 | 0.0 | - | 33.3 |" in table
    assert "| M3 TAG | 3 | 100.0 | 0.0 | - | 66.7 |" in table
    assert (out / "results.png").exists()


def test_bench_errors_are_one_line(tmp_path: Path, capsys, fake_models: dict) -> None:
    assert cli.main(["bench", "npov", "--out", str(tmp_path)]) == 1
    assert "npov needs --cases FILE and --policy FILE" in capsys.readouterr().err
    assert cli.main(["bench", "nba", "--data", str(tmp_path / "nowhere")]) == 1
    assert "NBA data directory not found" in capsys.readouterr().err
    assert cli.main(["bench", "nba", "--methods", "bogus", "--data", str(tmp_path)]) == 1
    assert "unknown method 'bogus'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench", "chess"])
    assert exit_info.value.code == 2


def test_model_config_for_names() -> None:
    base = ModelConfig(provider="local")
    assert model_config_for(None, base) is base
    assert model_config_for("local:0.5b", base).local_model == "0.5b"
    remote = model_config_for("deepseek-chat", base)
    assert (remote.provider, remote.model, remote.judge_model) == ("openai", "deepseek-chat", "deepseek-chat")


def test_judge_prompt_option_offers_every_applicability_prompt_in_the_registry() -> None:
    parser = argparse.ArgumentParser()
    bench = add_bench_parser(parser.add_subparsers())
    option = next(a for a in bench._actions if "--judge-prompt" in a.option_strings)
    assert set(option.choices) == {name for name in JUDGE_PROMPTS if name.startswith("applicability")}
    assert "relevance" not in option.choices
