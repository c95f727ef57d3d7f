"""The command line's rough edges: usage errors, --version, the exit statuses in --help, empty inputs, --decisions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import langchain_tag
import langchain_tag.local.models as models
from langchain_tag.cli.main import build_parser, main
from langchain_tag.rules import Rule, save_rules
from tests.helpers.judge_fakes import scored_judge
from tests.unit_tests.judging.test_decision_judge import decisions_server  # noqa: F401 (the loopback Decisions API)


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "high"])
def test_a_threshold_outside_0_1_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    path = str(save_rules(rules, tmp_path / "rules.jsonl"))
    for argv in (
        ["match", "x", "--rules", path, "--threshold", value],
        ["batch", "export", "--inputs", path, "--rules", path, "--out", str(tmp_path), "--model", "m"]
        + ["--threshold", value],
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2  # as --help says of usage errors
        err = capsys.readouterr().err
        assert "--threshold" in err and "between 0 and 1" in err and err.count("\n") == 1


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"langchain-tag {langchain_tag.__version__}"


def test_the_top_level_help_lists_the_exit_statuses() -> None:
    text = build_parser().format_help()
    assert "exit status:" in text
    for line in ("0    ", "1    ", "2    a usage error", "3    ", "130  ", "141  ", "143"):
        assert line in text, line


def test_an_empty_inputs_file_gives_an_empty_result_and_exit_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    """As ``sort`` and ``jq`` do: no input, no output, no error."""
    started: list[object] = []
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: started.append(kw) or scored_judge())
    path = str(save_rules(rules, tmp_path / "rules.jsonl"))
    for content in ("", "\n  \n"):
        inputs = tmp_path / "inputs.jsonl"
        inputs.write_text(content)
        out = tmp_path / "out.jsonl"
        out.write_text("old\n")
        assert main(["match", "--inputs", str(inputs), "--rules", path, "-o", str(out)]) == 0
        assert out.read_text() == ""  # written, and empty
        assert main(["match", "--inputs", str(inputs), "--rules", path]) == 0
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "0 inputs" in captured.err and "error" not in captured.err
    assert started == []  # no model is started for nothing to judge
    bad = tmp_path / "bad.jsonl"
    bad.write_text("")
    assert main(["match", "--inputs", str(bad), "--rules", str(tmp_path / "missing.jsonl")]) == 1  # rules still read


def test_match_help_says_what_an_empty_inputs_file_gives() -> None:
    parser = build_parser()
    match = parser._subparsers._group_actions[0].choices["match"]  # type: ignore[union-attr]
    text = " ".join(match.format_help().split())
    assert "no input" in text and "exit status 0" in text


# --------------------------------------------------------------------------- match "TEXT" --decisions
@pytest.mark.enable_socket
@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
def test_match_one_input_with_decisions_asks_the_decisions_api(
    decisions_server: object,  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from tests.unit_tests.judging.test_decision_judge import (
        INPUTS,
        RULES,
        FakeDecisionsServer,
        expected_ids,
        use_decisions_server,
    )

    assert isinstance(decisions_server, FakeDecisionsServer)
    use_decisions_server(decisions_server, monkeypatch)
    rules = str(save_rules(RULES, tmp_path / "rules.jsonl"))
    assert main(["match", INPUTS[0], "--rules", rules, "--raw", "--decisions", "--no-cache", "--json"]) == 0
    assert decisions_server.paths == ["/v1/decisions"]  # one request, every rule a question of it; no chat call
    assert len(decisions_server.bodies[0]["questions"]) == len(RULES)
    assert [m["rule_id"] for m in json.loads(capsys.readouterr().out)] == expected_ids(INPUTS[0])
