from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import langchain_tag.local.models as models
from langchain_tag.cli.main import EXIT_JUDGMENTS_FAILED, main
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.judging.logodds import logit
from langchain_tag.rules import Rule, save_rules
from langchain_tag.testing import FakeChatModel


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
    argv = ["run", "x", "--rules", str(path), "--json", "--verdicts", str(tmp_path / "v.sqlite")]
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
    assert main(["match", "x", "--rules", str(path), "--threshold", "2"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "threshold" in err and "less than or equal to 1" in err
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


def test_match_inputs_of_an_empty_file_writes_an_empty_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, rules: list[Rule]
) -> None:
    from langchain_tag.testing import fake_judge

    monkeypatch.setattr(models, "get_chat_model", lambda **kw: fake_judge(set()))
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("")
    out = tmp_path / "out.jsonl"
    argv = ["match", "--inputs", str(inputs), "--rules", str(save_rules(rules, tmp_path / "r.jsonl")), "-o", str(out)]
    assert main(argv) == 0 and out.read_text() == ""
    assert "holds no inputs" in capsys.readouterr().err


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
