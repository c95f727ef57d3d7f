"""The command line: every command end to end on fakes, and its rough edges (usage errors, --version, the exit
statuses in --help, empty inputs, --decisions)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import langchain_tag
import langchain_tag.local.models as models
from langchain_tag.cli.main import EXIT_JUDGMENTS_FAILED, build_parser, main
from langchain_tag.judging._logodds import logit
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.rules import Rule, save_rules
from langchain_tag.testing import FakeChatModel
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
        assert "--threshold" in err and "threshold must be a number within [0, 1]" in err and err.count("\n") == 1


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


# --------------------------------------------------------------------------- the commands, end to end on fakes
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
    import langchain_tag.local.models as models
    from langchain_tag.testing import fake_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: fake_judge({"R-003"}, with_logprobs=True))
    path = save_rules(rules, tmp_path / "rules.jsonl")
    assert main(["match", "def f():\n\treturn 1", "--rules", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {
            "rule_id": "R-003",
            "rule_name": "tabs for indentation",
            "score": pytest.approx(0.9),
            "p_yes": pytest.approx(0.9),
            "action": "ACTION<indent with four spaces>",
        }
    ]  # a fake model has no shipped calibration: the score is the raw P(YES)
    calibration = Calibration(method="threshold", intercept=-logit(0.95)).save(tmp_path / "cal.json")
    assert (
        main(["match", "def f():\n\treturn 1", "--rules", str(path), "--json", "--calibration", str(calibration)]) == 0
    )
    assert json.loads(capsys.readouterr().out) == []  # 0.9 is below the calibrated line
    assert main(["match", "x", "--rules", str(path), "--json", "--calibration", str(calibration), "--raw"]) == 0
    assert [m["rule_id"] for m in json.loads(capsys.readouterr().out)] == ["R-003"]


def test_match_keeps_verdicts_across_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    import langchain_tag.local.models as models
    from langchain_tag.testing import fake_judge

    judges: list = []

    def get_chat_model(**kw: Any) -> Any:
        judges.append(fake_judge({"R-003"}, with_logprobs=True))
        return judges[-1]

    monkeypatch.setattr(models, "get_chat_model", get_chat_model)
    monkeypatch.setenv("LANGCHAIN_TAG_CACHE_DIR", str(tmp_path / "cache"))
    path = save_rules(rules, tmp_path / "rules.jsonl")
    argv = ["match", "def f():\n\treturn 1", "--rules", str(path), "--json"]
    assert main(argv) == 0 and main(argv) == 0
    assert [j.calls for j in judges] == [len(rules), 0]  # the second run read every verdict from the cache
    assert (tmp_path / "cache" / "verdicts.sqlite").is_file()  # the default place: the cache directory
    assert main([*argv, "--no-cache"]) == 0 and judges[-1].calls == len(rules)
    assert main([*argv, "--verdicts", str(tmp_path / "v.sqlite")]) == 0 and judges[-1].calls == len(rules)
    outputs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(outputs) == 4 and all(o == outputs[0] for o in outputs)


def test_match_with_reference_inputs_scores_rules_against_the_sample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    import langchain_tag.local.models as models
    from langchain_tag.judging.calibration import defaults as module
    from langchain_tag.judging.prompts import JUDGE_PROMPTS
    from langchain_tag.testing import fake_judge

    domain = {"method": "threshold", "standardise": True, "threshold": 0.6}
    version = JUDGE_PROMPTS["applicability"].version
    monkeypatch.setitem(module.DOMAIN_REFERENCE_CALIBRATIONS, "fakechatmodel", {**domain, "prompt_version": version})
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: fake_judge({"R-003"}, with_logprobs=True))
    path = save_rules(rules, tmp_path / "rules.jsonl")
    sample = tmp_path / "sample.jsonl"
    sample.write_text("".join(json.dumps(f"x = {i}") + "\n" for i in range(5)))
    argv = ["match", "def f():\n\treturn 1", "--rules", str(path), "--json", "--reference-inputs", str(sample)]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == []  # R-003 says YES to every sample input too: nothing stands out
    sample.write_text('"x = 1"\n')
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("langchain-tag: error:") and "at least 4 distinct" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["match", "x", "--rules", "r.jsonl", "--predicate", "similarity"],
        ["extract", "doc.md", "-o", "r.jsonl", "--fast"],
        ["frobnicate"],
        ["run", "x", "--rules", "r.jsonl", "--mode", "bm25"],
        ["match", "x", "--rules", "r.jsonl", "--k", "-1"],
        ["match", "x", "--rules", "r.jsonl", "--max-concurrency", "0"],
        ["run", "x", "--rules", "r.jsonl", "--k", "0"],
    ],
)
def test_usage_errors_are_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "error:" in err and "--help" in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "contains no text"),
        (b"  \n\t\n", "contains no text"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "looks binary"),
        (b"caf\xe9 must be served hot", "cannot read"),
    ],
)
def test_extract_refuses_unreadable_documents_in_one_line(
    content: bytes, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import langchain_tag.local.models as models
    from langchain_tag.testing import fake_extractor

    llm = fake_extractor()
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: llm)
    doc = tmp_path / "policy.md"
    doc.write_bytes(content)
    assert main(["extract", str(doc), "-o", str(tmp_path / "r.jsonl"), "--no-store"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("langchain-tag: error:") and expected in err and len(err.strip().splitlines()) == 1
    assert llm.calls == 0


def test_duplicate_rule_ids_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], rules: list[Rule]) -> None:
    path = tmp_path / "r.jsonl"
    save_rules(rules, path)
    path.write_text(path.read_text() + rules[0].model_dump_json() + "\n")
    assert main(["match", "x", "--rules", str(path)]) == 1
    err = capsys.readouterr().err
    assert "duplicate rule_id 'R-001'" in err and len(err.strip().splitlines()) == 1


def test_provider_down_is_one_line_naming_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, rules: list[Rule]
) -> None:
    import langchain_tag.local.models as models
    from langchain_tag.testing import FakeChatModel

    monkeypatch.setattr(
        models, "get_chat_model", lambda **kw: FakeChatModel(respond=lambda t: TimeoutError("timed out"))
    )
    path = save_rules(rules, tmp_path / "rules.jsonl")
    assert main(["match", "x", "--rules", str(path)]) == 1
    err = capsys.readouterr().err
    assert "all 5 judgments failed calling FakeChatModel" in err and len(err.strip().splitlines()) == 1


def test_credentials_in_urls_are_not_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, rules: list[Rule]
) -> None:
    path = save_rules(rules, tmp_path / "rules.jsonl")
    monkeypatch.setenv("LANGCHAIN_TAG_PROVIDER", "openai")
    monkeypatch.setenv("LANGCHAIN_TAG_BASE_URL", "https://bob:hunter2@llm.example.test/v1?api-key=s3cr3t")
    monkeypatch.delenv("LANGCHAIN_TAG_MODEL", raising=False)
    assert main(["match", "x", "--rules", str(path)]) == 1
    err = capsys.readouterr().err
    assert "LANGCHAIN_TAG_MODEL must name" in err and "hunter2" not in err and "s3cr3t" not in err
    refused = ConnectionError("cannot reach https://bob:hunter2@llm.example.test/v1?token=s3cr3t")
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: FakeChatModel(respond=lambda t: refused))
    assert main(["match", "x", "--rules", str(path)]) == 1
    err = capsys.readouterr().err
    assert "llm.example.test" in err and "hunter2" not in err and "s3cr3t" not in err


@pytest.mark.parametrize("as_json", [True, False])
def test_match_exits_3_with_a_summary_when_judgments_failed(
    as_json: bool,
    rules: list[Rule],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = save_rules(rules, tmp_path / "rules.jsonl")
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: FakeChatModel(respond=lambda text: "Not sure."))
    assert main(["match", "x", "--rules", str(path), *(["--json"] if as_json else [])]) == EXIT_JUDGMENTS_FAILED
    err = capsys.readouterr().err
    assert "5 of 5 judgments failed and were counted NO: R-001, R-002, R-003, R-004, R-005" in err


def test_extract_names_the_task_input_in_every_phase_and_batches_as_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from langchain_tag.testing import fake_extraction_reply

    prompts: list[str] = []

    def reply(text: str) -> str:
        prompts.append(text)
        return fake_extraction_reply(text)

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: FakeChatModel(respond=reply))
    doc = tmp_path / "policy.md"
    doc.write_text("# Style\n\nNever use wildcard imports. Always use four spaces per indentation level.\n")
    out = tmp_path / "rules.jsonl"
    args = ["extract", str(doc), "-o", str(out), "--no-store", "--task-input", "a Python module under review"]
    assert main(args) == 0
    phase1 = [p for p in prompts if "label" in p.lower() and "Sentences:" in p]
    phase3 = [p for p in prompts if "Statements to turn into rules" in p]
    assert phase1 and phase3 and all("a Python module under review" in p for p in phase1 + phase3)
    assert len(phase3) == 2 and all(p.count('"statement":') == 1 for p in phase3)  # one statement per call
    with pytest.raises(SystemExit):
        main(["extract", str(doc), "-o", str(out), "--units-per-call", "0"])
    assert "expected a positive integer" in capsys.readouterr().err


# ---------------------------------------------------------------- pipes and JSON
POLICY = "# Style\n\nNever use wildcard imports. Always use four spaces per indentation level.\n"


def test_extract_reads_stdin_and_writes_stdout_with_a_prefix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from langchain_tag.testing import fake_extractor

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: fake_extractor())
    monkeypatch.setattr("sys.stdin", io.StringIO(POLICY))
    assert main(["extract", "-", "-o", "-", "--no-store", "--rule-id-prefix", "STYLE"]) == 0
    captured = capsys.readouterr()
    rules = [Rule.model_validate_json(line) for line in captured.out.splitlines()]
    assert rules and all(r.rule_id.startswith("STYLE-") and r.document_id == "stdin" for r in rules)
    assert "wrote" in captured.err and "wrote" not in captured.out
    assert not Path("-").exists()


def test_extract_with_no_rules_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: FakeChatModel(respond=lambda text: '{"labels": []}'))
    doc = tmp_path / "policy.md"
    doc.write_text("Nothing normative here at all.\n")
    assert main(["extract", str(doc), "-o", str(tmp_path / "r.jsonl"), "--no-store"]) == 1
    assert "error: no rules extracted" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_match_json_names_each_rule_with_scores_and_action(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.testing import fake_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: fake_judge({"R-003"}, with_logprobs=True))
    path = save_rules(rules, tmp_path / "rules.jsonl")
    assert main(["match", "x", "--rules", str(path), "--json", "--raw"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    by_id = {r.rule_id: r for r in rules}
    assert row["rule_name"] == by_id["R-003"].rule_name and row["action"] == by_id["R-003"].action
    assert row["p_yes"] == pytest.approx(0.9) and row["score"] == pytest.approx(0.9)


def test_run_json_and_debug_after_the_subcommand(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.testing import fake_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: fake_judge({"R-003"}))
    path = save_rules(rules, tmp_path / "rules.jsonl")
    assert main(["run", "x", "--rules", str(path), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    action = {r.rule_id: r.action for r in rules}["R-003"]
    assert payload["mode"] == "tag" and payload["given"] == [{"id": "R-003", "text": action}]
    assert isinstance(payload["output"], str)
    with pytest.raises(FileNotFoundError):
        main(["match", "x", "--rules", str(tmp_path / "missing.jsonl"), "--debug"])


def test_run_keeps_the_tag_modes_verdicts_and_refuses_a_sample_for_other_modes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.testing import fake_judge

    made: list = []

    def get_chat_model(**kw: Any) -> Any:
        made.append(fake_judge({"R-003"}))
        return made[-1]

    monkeypatch.setattr(models, "get_chat_model", get_chat_model)
    path = save_rules(rules, tmp_path / "rules.jsonl")
    argv = ["run", "x", "--rules", str(path), "--json", "--verdicts", str(tmp_path / "v.sqlite"), "--check-rounds", "0"]
    assert main(argv) == 0 and main(argv) == 0
    judged = [m.calls for m in made if any("RULE:" in p for p in m.prompts)]
    assert judged == [len(rules)]  # the second run's judge made no call: every verdict came from the file
    capsys.readouterr()
    sample = tmp_path / "sample.jsonl"
    sample.write_text("".join(json.dumps(f"x = {i}") + "\n" for i in range(4)))
    assert main(["run", "x", "--rules", str(path), "--mode", "all_rules", "--reference-inputs", str(sample)]) == 1
    assert "--reference-inputs applies to --mode tag only" in capsys.readouterr().err


def test_an_invalid_option_value_is_one_line_without_validation_noise(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.testing import fake_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: fake_judge(set()))
    path = save_rules(rules, tmp_path / "rules.jsonl")
    with pytest.raises(SystemExit) as exc:  # a usage error, refused before any model starts
        main(["match", "x", "--rules", str(path), "--threshold", "2"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "threshold must be a number within [0, 1], got '2'" in err
    assert "pydantic" not in err and "input_value" not in err


# ------------------------------------------------------------------ match --inputs, batch export/import

BULK_TEXTS = ["def f(x=[]):\n\treturn x", "from os import *", "try:\n    pass\nexcept:\n    pass"]


def _inputs_file(tmp_path: Path) -> Path:
    path = tmp_path / "inputs.jsonl"
    path.write_text(
        json.dumps({"id": "a", "text": BULK_TEXTS[0]}) + "\n" + json.dumps(BULK_TEXTS[1]) + "\n\n"
        '{"text": ' + json.dumps(BULK_TEXTS[2]) + "}\n"
    )
    return path


def test_match_inputs_writes_one_line_per_input_and_a_rerun_makes_no_call(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from tests.helpers.judge_fakes import scored_judge

    judges: list[FakeChatModel] = []

    def get_chat_model(**kw: Any) -> Any:
        judges.append(scored_judge())
        return judges[-1]

    monkeypatch.setattr(models, "get_chat_model", get_chat_model)
    rule_file = save_rules(rules, tmp_path / "rules.jsonl")
    out = tmp_path / "verdicts.jsonl"
    argv = ["match", "--inputs", str(_inputs_file(tmp_path)), "--rules", str(rule_file), "-o", str(out)]
    argv += ["--verdicts", str(tmp_path / "v.sqlite"), "--all-pairs"]
    assert main(argv) == 0
    first = out.read_bytes()
    records = [json.loads(line) for line in first.decode().splitlines()]
    assert [r["id"] for r in records] == ["a", "2", "4"]  # ids kept, the others numbered by line
    assert all(len(r["pairs"]) == len(rules) and r["failed"] == [] for r in records)
    err = capsys.readouterr().err
    assert f"3 inputs, {sum(len(r['matched']) for r in records)} matched rules; wrote {out}" in err
    assert main(argv) == 0 and judges[-1].calls == 0 and out.read_bytes() == first
    assert judges[0].calls == len(BULK_TEXTS) * len(rules)
    assert main(argv[:-1]) == 0 and "pairs" not in json.loads(out.read_text().splitlines()[0])


def test_match_inputs_to_stdout_and_exit_3_on_failed_judgments(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.testing import judged_rule_id

    def respond(text: str) -> Any:
        return "Hard to say." if judged_rule_id(text) == "R-005" else "NO"

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: FakeChatModel(respond=respond))
    rule_file = save_rules(rules, tmp_path / "rules.jsonl")
    code = main(["match", "--inputs", str(_inputs_file(tmp_path)), "--rules", str(rule_file), "--no-cache"])
    assert code == EXIT_JUDGMENTS_FAILED
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines()]
    assert [[f["rule_id"] for f in r["failed"]] for r in records] == [["R-005"]] * 3
    assert "3 failed judgments on 3 inputs; wrote stdout" in captured.err


def test_match_inputs_refuses_a_bad_line_before_any_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    made: list[Any] = []
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: made.append(kw))
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text('"fine"\n{"id": "b", "text": \n')
    out = tmp_path / "out.jsonl"
    out.write_text("earlier results\n")
    argv = ["match", "--inputs", str(inputs), "--rules", str(save_rules(rules, tmp_path / "r.jsonl")), "-o", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("langchain-tag: error:") and f"{inputs}:2: not JSON" in err and err.count("\n") == 1
    assert made == [] and out.read_text() == "earlier results\n"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["match", "--rules", "r.jsonl"], "or --inputs FILE"),
        (["match", "x", "--inputs", "in.jsonl", "--rules", "r.jsonl"], "not both"),
        (["match", "x", "--rules", "r.jsonl", "-o", "out.jsonl"], "go with --inputs"),
        (["match", "x", "--rules", "r.jsonl", "--all-pairs"], "go with --inputs"),
        (["match", "--inputs", "in.jsonl", "--rules", "r.jsonl", "--k", "2"], "--k applies to a single input"),
        (["batch", "export", "--inputs", "in.jsonl", "--rules", "r.jsonl", "--out", "d"], "--model"),
        (["batch", "import", "--inputs", "in.jsonl", "--rules", "r.jsonl", "--model", "m"], "RESULTS"),
        (["batch"], "STEP"),
    ],
)
def test_bulk_and_batch_usage_errors_are_one_line(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and expected in err and "--help" in err


def test_batch_export_then_import_gives_what_match_inputs_gives(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from tests.helpers.judge_fakes import answer, batch_lines, scored_judge

    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    inputs = str(_inputs_file(tmp_path))
    common = ["--inputs", inputs, "--rules", rule_file, "--model", "gpt-4o-mini", "--raw"]
    verdicts = ["--verdicts", str(tmp_path / "batch.sqlite")]
    out_dir = tmp_path / "batch"
    assert main(["batch", "export", *common, *verdicts, "--out", str(out_dir), "--max-requests", "4"]) == 0
    files = sorted(out_dir.glob("batch-*.jsonl"))
    assert len(files) == 4 and len(batch_lines(files)) == len(BULK_TEXTS) * len(rules)
    assert "wrote 15 requests for 3 inputs in 4 file(s)" in capsys.readouterr().err

    results = answer(files, tmp_path / "results.jsonl")
    out = tmp_path / "from-batch.jsonl"
    assert main(["batch", "import", str(results), *common, *verdicts, "-o", str(out)]) == 0
    assert "recorded 15 of 15 batch replies" in capsys.readouterr().err

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: scored_judge())
    direct = tmp_path / "direct.jsonl"
    assert main(["match", "--inputs", inputs, "--rules", rule_file, "--raw", "--no-cache", "-o", str(direct)]) == 0
    assert out.read_bytes() == direct.read_bytes()

    # Everything is in the verdict cache now: a second export has nothing to send.
    assert main(["batch", "export", *common, *verdicts, "--out", str(tmp_path / "again")]) == 0
    assert "nothing to export" in capsys.readouterr().err


def test_batch_import_reports_missing_replies_and_exits_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from tests.helpers.judge_fakes import answer

    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    common = ["--inputs", str(_inputs_file(tmp_path)), "--rules", rule_file, "--model", "gpt-4o-mini"]
    common += ["--verdicts", str(tmp_path / "v.sqlite")]
    out_dir = tmp_path / "batch"
    assert main(["batch", "export", *common, "--out", str(out_dir)]) == 0
    results = answer(sorted(out_dir.glob("batch-*.jsonl")), tmp_path / "results.jsonl")
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[2:]) + "\n")  # two replies lost
    out = tmp_path / "out.jsonl"
    argv = ["batch", "import", str(results), *common, "--mapping", str(out_dir / "mapping.jsonl"), "-o", str(out)]
    assert main(argv) == EXIT_JUDGMENTS_FAILED
    err = capsys.readouterr().err
    assert "recorded 13 of 15 batch replies (2 missing)" in err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum(len(r["failed"]) for r in records) == 2


def test_match_inputs_interrupted_then_rerun_judges_only_the_rest(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from tests.helpers.judge_fakes import pair_of, scored_judge, scored_reply

    answered: set[Any] = set()

    def interrupting(text: str) -> Any:
        if pair_of(text)[:2] == (BULK_TEXTS[1], "R-003"):
            return KeyboardInterrupt()
        answered.add(pair_of(text))
        return scored_reply(text)

    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    inputs = str(_inputs_file(tmp_path))
    out = tmp_path / "out.jsonl"
    argv = ["match", "--inputs", inputs, "--rules", rule_file, "-o", str(out), "--max-concurrency", "1"]
    argv += ["--verdicts", str(tmp_path / "v.sqlite")]
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: FakeChatModel(respond=interrupting, with_logprobs=True))
    assert main(argv) == 130 and not out.exists()
    assert "interrupted" in capsys.readouterr().err

    rerun = scored_judge()
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: rerun)
    assert main(argv) == 0
    assert rerun.calls == len(BULK_TEXTS) * len(rules) - len(answered)
    assert {pair_of(p) for p in rerun.prompts}.isdisjoint(answered)
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: scored_judge())
    fresh = tmp_path / "fresh.jsonl"
    assert main([*argv[:5], "-o", str(fresh), "--no-cache"]) == 0
    assert out.read_bytes() == fresh.read_bytes()


# ------------------------------------------------------------------ match --inputs: pipes, signals, file errors

REPO = Path(__file__).resolve().parents[3]

FAKE_CLI = """
import sys

import langchain_tag.local.models as models
from tests.helpers.judge_fakes import scored_judge

delay = float(sys.argv[1])
models.get_chat_model = lambda **kw: scored_judge(delay=delay)

from langchain_tag.cli.main import main

sys.exit(main(sys.argv[2:]))
"""
"""The CLI in a process of its own, its judge a fake taking DELAY seconds a call: ``python -c FAKE_CLI DELAY ARGS...``."""


def _fake_cli(delay: float, *argv: str) -> list[str]:
    import sys

    return [sys.executable, "-c", FAKE_CLI, str(delay), *argv]


def _fake_cli_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def test_match_inputs_reads_stdin_as_utf8_like_a_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    import io

    from tests.helpers.judge_fakes import scored_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: scored_judge())
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    inputs = _inputs_file(tmp_path)
    inputs.write_bytes("\ufeff".encode() + inputs.read_bytes() + '{"id": "é", "text": "café = 1"}\n'.encode())
    assert main(["match", "--inputs", str(inputs), "--rules", rule_file, "--no-cache"]) == 0
    from_file = capsys.readouterr().out
    stdin = io.TextIOWrapper(io.BytesIO(inputs.read_bytes()), encoding="ascii")  # the bytes are read, not the locale
    monkeypatch.setattr("sys.stdin", stdin)
    assert main(["match", "--inputs", "-", "--rules", rule_file, "--no-cache", "-o", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out == from_file and [json.loads(line)["id"] for line in from_file.splitlines()][-1] == "é"
    assert "4 inputs" in captured.err and not Path("-").exists()


def test_match_inputs_names_stdin_and_its_line_in_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    import io

    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'"ok"\n{"text": \n')))
    assert main(["match", "--inputs", "-", "--rules", rule_file, "--no-cache"]) == 1
    assert capsys.readouterr().err.startswith("langchain-tag: error: stdin:2: not JSON")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\n \n")))
    assert main(["match", "--inputs", "-", "--rules", rule_file, "--no-cache"]) == 0  # no input: an empty result
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("0 inputs: stdin holds none")


def test_a_closed_stdout_ends_quietly_with_141(tmp_path: Path, rules: list[Rule]) -> None:
    import subprocess

    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    argv = _fake_cli(0, "match", "--inputs", str(_inputs_file(tmp_path)), "--rules", rule_file, "--no-cache", "-o", "-")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone, as "| head -1" goes after its line
    try:
        done = subprocess.run(argv, cwd=REPO, env=_fake_cli_env(), stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)
    err = done.stderr.decode()
    assert done.returncode == 141, err
    assert err == ""  # no traceback, no "Broken pipe", no "Exception ignored" at exit


def test_match_help_describes_the_records_the_exit_statuses_and_max_concurrency() -> None:
    from langchain_tag.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    text = sub.choices["match"].format_help()  # type: ignore[attr-defined]
    flat = " ".join(text.split())
    assert "--max-concurrency N most judgments (model calls) in flight at once (default: 4)" in flat
    for field in ('"id"', '"matched"', '"failed"', '"score"', '"p_yes"', '"error"', '"pairs"'):
        assert field in text
    for status in ("0 every judgment was made", "3 some judgments failed", "130", "141", "143"):
        assert status in flat
    assert '"-": stdin' in flat


def test_match_inputs_an_unencodable_input_fails_alone_naming_its_id_and_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from tests.helpers.judge_fakes import scored_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: scored_judge())
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    inputs = _inputs_file(tmp_path)
    good = inputs.read_text()
    inputs.write_text('{"id": "bad", "text": "x = \\ud800"}\n' + good)  # a JSON escape of a lone surrogate, line 1
    out = tmp_path / "out.jsonl"
    argv = ["match", "--inputs", str(inputs), "--rules", rule_file, "--no-cache", "-o", str(out), "--all-pairs"]
    assert main(argv) == EXIT_JUDGMENTS_FAILED
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["bad", "a", "3", "5"]
    bad = records[0]
    assert "input 'bad' (line 1)" in bad["error"] and "\\ud800" in bad["error"] and "cannot encode" in bad["error"]
    assert bad["matched"] == [] and [f["rule_id"] for f in bad["failed"]] == [r.rule_id for r in rules]
    assert len(bad["pairs"]) == len(rules)
    assert all(r["failed"] == [] for r in records[1:])
    assert f"{len(rules)} failed judgments on 1 inputs" in capsys.readouterr().err
    inputs.write_text(good)  # the others are judged as they are without it (the line numbers shift their ids)
    assert main([*argv[:6], "-o", str(tmp_path / "alone.jsonl"), "--all-pairs"]) == 0
    alone = [json.loads(line) for line in (tmp_path / "alone.jsonl").read_text().splitlines()]
    assert [r["pairs"] for r in alone] == [r["pairs"] for r in records[1:]]


def _no_locks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``flock`` failing as on NFS without a lock daemon."""
    import errno
    import fcntl

    def flock(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", flock)


@pytest.mark.parametrize("command", ["match", "batch import"])
def test_an_output_that_cannot_be_locked_is_refused_unless_unlocked_output(
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    rules: list[Rule],
) -> None:
    from tests.helpers.judge_fakes import answer

    judge = scored_judge()
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: judge)
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    inputs = str(_inputs_file(tmp_path))
    out = tmp_path / "out.jsonl"
    verdicts = ["--verdicts", str(tmp_path / "v.sqlite")]
    if command == "match":
        argv = ["match", "--inputs", inputs, "--rules", rule_file, *verdicts, "-o", str(out)]
    else:
        common = ["--inputs", inputs, "--rules", rule_file, "--model", "gpt-4o-mini", *verdicts]
        assert main(["batch", "export", *common, "--out", str(tmp_path / "batch")]) == 0
        results = answer(sorted((tmp_path / "batch").glob("batch-*.jsonl")), tmp_path / "results.jsonl")
        argv = ["batch", "import", str(results), *common, "-o", str(out)]
    capsys.readouterr()
    _no_locks(monkeypatch)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("langchain-tag: error: ") == 1 and "wrote" not in err
    assert f"cannot write {out}: it cannot be locked" in err and "--unlocked-output" in err
    assert not out.exists() and judge.calls == 0  # refused before any judgment
    assert main([*argv, "--unlocked-output"]) == 0
    assert f"wrote {out}" in capsys.readouterr().err
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and f"{out} is not locked" in r.message]
    assert len(out.read_text().splitlines()) == len(BULK_TEXTS)


def test_match_help_documents_unlocked_output() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    flat = " ".join(sub.choices["match"].format_help().split())  # type: ignore[attr-defined]
    assert "--unlocked-output" in flat and "cannot be locked" in flat


@pytest.mark.parametrize("where", ["directory", "under a file", "named pipe"])
def test_match_inputs_refuses_an_output_it_cannot_write_before_any_judgment(
    where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from tests.helpers.judge_fakes import scored_judge

    judge = scored_judge()
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: judge)
    rule_file = save_rules(rules, tmp_path / "rules.jsonl")
    fifo = tmp_path / "fifo"  # a file that is not a regular one (as /dev/null is, which must not be renamed over)
    os.mkfifo(fifo)
    output, expected = {
        "directory": (tmp_path, f"cannot write {tmp_path}: it is a directory"),
        "under a file": (rule_file / "out.jsonl", f"{rule_file} is a file, not a directory"),
        "named pipe": (fifo, f"cannot write {fifo}: it is not a regular file"),
    }[where]
    argv = ["match", "--inputs", str(_inputs_file(tmp_path)), "--rules", str(rule_file), "-o", str(output)]
    assert main([*argv, "--verdicts", str(tmp_path / "v.sqlite")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("langchain-tag: error:") and expected in err and err.count("\n") == 1
    assert judge.calls == 0 and "Errno" not in err
    assert not list(tmp_path.glob(".*.partial")) and fifo.exists() and not fifo.is_file()


def _malformed_database(path: Path) -> Path:
    """A verdict cache whose header is sound and whose table pages are not: the damage shows on the first read."""
    import sqlite3

    from langchain_tag.judging.results import Reading
    from langchain_tag.judging.verdict_cache import SQLiteVerdictCache

    cache = SQLiteVerdictCache(path)
    for i in range(2000):
        cache.put(f"key-{i:05d}" * 4, Reading(word=True, p_yes=0.5, reply="YES" * 10))
    cache.close()
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").connection.close()
    data = bytearray(path.read_bytes())
    for offset in range(2 * 4096, len(data), 4096):
        data[offset : offset + 100] = b"\xff" * 100
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("damage", ["not a database", "malformed"])
def test_match_names_a_verdicts_file_sqlite_cannot_use(
    damage: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from tests.helpers.judge_fakes import scored_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: scored_judge())
    verdicts = tmp_path / "v.sqlite"
    if damage == "not a database":
        verdicts.write_text("these are not verdicts\n" * 100)
        expected = f"{verdicts}: file is not a database"
    else:
        _malformed_database(verdicts)
        expected = f"{verdicts}: database disk image is malformed"
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    out = tmp_path / "out.jsonl"
    argv = ["match", "--inputs", str(_inputs_file(tmp_path)), "--rules", rule_file, "--verdicts", str(verdicts)]
    assert main([*argv, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("langchain-tag: error:") and expected in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            b'{"rule_id": "a", "rule_name": "n", "condition": "c", "action": "x"}\n{"rule_id": "b", "caf\xe9',
            ":2: not UTF-8",
        ),
        (None, ": cannot read rules (No such file or directory)"),
        (
            b'{"rule_id": "a", "rule_name": "n", "condition": "c", "action": "x"}\n\n'
            b'{"rule_id": "a", "rule_name": "m", "condition": "d", "action": "y"}\n',
            ":3: duplicate rule_id 'a' (first on line 1)",
        ),
    ],
    ids=["bad byte", "missing", "duplicate"],
)
def test_match_names_the_rules_file_and_line_at_fault(
    content: bytes | None, expected: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    if content is not None:
        path.write_bytes(content)
    assert main(["match", "--inputs", str(_inputs_file(tmp_path)), "--rules", str(path), "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"langchain-tag: error: {path}{expected}") and err.count("\n") == 1


def test_match_accepts_a_bom_in_the_rules_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.testing import fake_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: fake_judge({"R-003"}))
    path = save_rules(rules, tmp_path / "rules.jsonl")
    path.write_bytes("\ufeff".encode() + path.read_bytes())
    assert main(["match", "x", "--rules", str(path), "--json", "--no-cache"]) == 0
    assert [m["rule_id"] for m in json.loads(capsys.readouterr().out)] == ["R-003"]


def test_sigterm_stops_match_inputs_as_ctrl_c_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rules: list[Rule]
) -> None:
    import subprocess

    from tests.helpers.judge_fakes import scored_judge
    from tests.helpers.signals import judged, terminate_when

    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(json.dumps(f"x = {i}") + "\n" for i in range(20)))
    out, verdicts = tmp_path / "out.jsonl", tmp_path / "v.sqlite"
    argv = ["match", "--inputs", str(inputs), "--rules", rule_file, "-o", str(out), "--verdicts", str(verdicts)]
    argv += ["--max-concurrency", "1"]
    child = subprocess.Popen(
        _fake_cli(0.05, *argv), cwd=REPO, env=_fake_cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )

    def partials() -> list[Path]:  # the job's own partial file, and its lock on out.jsonl
        return [*tmp_path.glob(".out.jsonl.*.partial"), *tmp_path.glob(".out.jsonl.lock")]

    # until a few judgments are made (all 20 inputs x 5 rules take 5 s)
    err = terminate_when(child, lambda: len(partials()) == 2 and judged(verdicts) >= 3, wait=30)
    assert child.returncode == 143, err
    assert "terminated" in err and f"kept in {verdicts}" in err and "Traceback" not in err
    assert not out.exists() and partials() == []
    assert not verdicts.with_name("v.sqlite-wal").exists()  # the cache was closed, not cut off

    rerun = scored_judge()
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: rerun)
    assert main(argv) == 0
    assert 0 < rerun.calls < 20 * len(rules)  # what was judged before the signal was kept
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: scored_judge())
    fresh = tmp_path / "fresh.jsonl"
    assert main([*argv[:5], "-o", str(fresh), "--no-cache"]) == 0
    assert out.read_bytes() == fresh.read_bytes()


def test_match_stdin_that_is_not_utf8_is_named_like_a_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    import io

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: scored_judge())
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x = 1\n\xff\xfe y\n"), encoding="utf-8"))
    assert main(["match", "-", "--rules", rule_file, "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert "stdin:2: not UTF-8" in err and "surrogate" not in err and err.count("\n") == 1


def test_match_k_0_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]) -> None:
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    with pytest.raises(SystemExit) as exited:
        main(["match", "x", "--rules", rule_file, "--k", "0"])
    assert exited.value.code == 2 and "--k" in capsys.readouterr().err


def test_match_given_a_file_name_as_its_input_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    monkeypatch.setattr(models, "get_chat_model", lambda **kw: scored_judge())
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    snippet = tmp_path / "snippet.py"
    snippet.write_text("def f(x=[]): pass\n", encoding="utf-8")
    main(["match", str(snippet), "--rules", rule_file, "--no-cache"])
    err = capsys.readouterr().err
    assert f"{snippet} names a file" in err and f"- < {snippet}" in err


def test_the_warning_after_failed_calls_does_not_repeat_the_summary(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.testing import judged_rule_id

    def respond(text: str) -> object:
        if judged_rule_id(text) == "R-002":
            return RuntimeError("HTTP 500: upstream failed")
        return "NO"

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: FakeChatModel(respond=respond))
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    main(["match", "x = 1", "--rules", rule_file, "--no-cache"])
    err = capsys.readouterr().err
    summary = [line for line in err.splitlines() if "counted" in line]
    assert len(summary) == 1 and "R-002" in summary[0] and "HTTP 500" in summary[0], err
