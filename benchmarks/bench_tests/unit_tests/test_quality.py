"""The end-to-end quality benchmark with fakes: mapping, scores, shared judgments, resume, CLI, polarity proxy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from langchain_tag.cli import main as cli
from langchain_tag.judging.calibration.defaults import TYPICAL_INPUTS
from langchain_tag.judging.calibration.model import Calibration
from langchain_tag.local import models
from langchain_tag.rules import Rule, save_rules
from langchain_tag.testing import FakeChatModel, HashingEmbeddings, fake_extractor, judged_rule_id
from langchain_tag_bench.data import BenchDataError
from langchain_tag_bench.quality import (
    FITTED_FILE,
    QualitySet,
    chunk_statements,
    load_quality_set,
    parse_quality_methods,
    polarity_proxy,
    quality_table,
    rule_span,
    rule_statements,
    run_quality,
    score_pairs,
    spread,
    statement_spans,
)

POLICY = """# Tiny policy

This policy was written in 2024 by the platform team.

## Rules

Never call eval on user input. Always close files you open.

Do not print in library code.
"""
STATEMENTS = [
    {"id": "S1", "text": "Never call eval on user input."},
    {"id": "S2", "text": "Always close files you open."},
    {"id": "S3", "text": "Do not print in library code.", "note": "print"},
    {"id": "S4", "text": "Do not print in library code.", "note": "same text, another reading"},
]
CASES = [
    {"id": "d1", "code": "x = eval(data)", "violates": ["S1"], "split": "dev"},
    {"id": "d2", "code": "print(x)", "violates": ["S3"], "split": "dev"},
    {"id": "d3", "code": "y = 1", "violates": [], "split": "dev"},
    {"id": "t1", "code": "f = open(p)\nprint(eval(s))", "violates": ["S1", "S2", "S3"], "split": "test"},
    {"id": "t2", "code": "z = 2", "violates": [], "split": "test"},
]


def _rule(rule_id: str, source: str, *, offsets: bool = True, condition: str = "c") -> Rule:
    start = POLICY.find(source)
    return Rule(
        rule_id=rule_id,
        rule_name=f"rule {rule_id}",
        condition=condition,
        action="a",
        source_text=source,
        source_start=start if offsets and start >= 0 else None,
        source_end=start + len(source) if offsets and start >= 0 else None,
    )


RULES = [
    _rule("R1", "Never call eval on user input.", condition="the code calls eval"),
    _rule("R2", "Always close files you open.", offsets=False, condition="the code does not close a file"),
    _rule("R3", "Do not print in library code.", condition="the code calls print"),
    _rule("R4", "This policy was written in 2024 by the platform team.", condition="background"),
]
# A word in the rule's text -> the word in the input that makes the fake judge say YES.
WORDS = {"eval": "eval", "close": "open", "print": "print"}


def quality_set() -> QualitySet:
    return QualitySet(
        name="tiny",
        policy_path=None,
        policy_text=POLICY,
        policy_id="tiny.md",
        statements=[dict(s) for s in STATEMENTS],
        cases=[dict(c) for c in CASES],
    )


def word_judge(**kwargs: Any) -> FakeChatModel:
    """P(YES) 0.9 when the input holds the word the rule is about (:data:`WORDS`), else 0.2 (with logprobs)."""

    def respond(prompt: str) -> Any:
        if judged_rule_id(prompt) is None:
            return "NO"
        text, _, rule = prompt.rpartition("RULE:")
        hit = any(about in rule.lower() and word in text for about, word in WORDS.items())
        return ("YES", 0.9) if hit else ("NO", 0.2)

    return FakeChatModel(respond=respond, with_logprobs=True, **kwargs)


# ------------------------------------------------------------------ mapping
def test_rule_mapping_offsets_text_whitespace_and_non_rules() -> None:
    qs = quality_set()
    spans = statement_spans(qs)
    assert spans["S3"] == spans["S4"]  # a shared text maps to both entries
    loose = _rule("R5", "Never  call eval\non user input.", offsets=False)
    both = _rule("R6", "Never call eval on user input. Always close files you open.")
    sliver = _rule("R7", "input. Always", offsets=False)  # 6 of 30 characters of S1, 6 of 28 of S2: too little
    mapped = rule_statements([*RULES, loose, both, sliver], spans, POLICY)
    assert mapped == {
        "R1": {"S1"},
        "R2": {"S2"},  # no offsets: found by its text
        "R3": {"S3", "S4"},
        "R4": set(),  # background: a non-rule
        "R5": {"S1"},  # whitespace differs
        "R6": {"S1", "S2"},
        "R7": set(),
    }
    assert rule_span(_rule("R8", "not in the policy at all", offsets=False), POLICY) is None


def test_rule_mapping_half_of_the_rule_source_is_enough() -> None:
    spans = {"S1": (0, 100)}
    # A short source wholly inside a long statement: 20 of 100 statement characters, but all of the source.
    inner = Rule(rule_id="R", rule_name="r", condition="c", action="a", source_start=10, source_end=30)
    assert rule_statements([inner], spans, "x" * 200) == {"R": {"S1"}}


def test_chunk_mapping_needs_half_the_statement_inside() -> None:
    spans = {"A": (0, 10), "B": (10, 30), "C": (50, 60)}
    chunks = [
        Document(page_content="x" * 20, metadata={"start_index": 0, "chunk_id": "C1"}),  # A whole, B half
        Document(page_content="x" * 15, metadata={"start_index": 16, "chunk_id": "C2"}),  # B 14/20, not C
        Document(page_content="x" * 8, metadata={"start_index": 54, "chunk_id": "C3"}),  # C 6/10
    ]
    assert chunk_statements(chunks, spans) == {"C1": {"A", "B"}, "C2": {"B"}, "C3": {"C"}}


def test_score_pairs_micro() -> None:
    gold = {"a": {"S1", "S2"}, "b": set(), "c": {"S3"}}
    predicted = {"a": {"S1", "S9"}, "b": {"S2"}}
    # tp 1 (a:S1); fp 2 (a:S9, b:S2); fn 2 (a:S2, c:S3)
    precision, recall, f1 = score_pairs(predicted, gold)
    assert (precision, recall) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert f1 == pytest.approx(1 / 3)
    assert score_pairs({}, {"a": set()}) == (0.0, 0.0, 0.0)


def test_parse_methods() -> None:
    names = [m.name for m in parse_quality_methods("tag,rules_similarity,chunks_similarity@2,all_rules")]
    assert names == [
        "tag",
        "rules_similarity@1",
        "rules_similarity@3",
        "rules_similarity@5",
        "chunks_similarity@2",
        "all_rules",
    ]
    assert len(parse_quality_methods("all")) == 4 + 3 + 4  # tag-domain, tag, tag-raw, all rules; 3 + 4 similarity
    with pytest.raises(ValueError, match="unknown method 'bogus'"):
        parse_quality_methods("bogus")
    with pytest.raises(ValueError, match="calibration file"):
        parse_quality_methods("tag-calibrated:/nowhere/cal.json")


def test_statement_not_in_policy_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "policy.md").write_text(POLICY, encoding="utf-8")
    (tmp_path / "statements.json").write_text(json.dumps([{"id": "S1", "text": "Not there."}]), encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASES[2]) + "\n", encoding="utf-8")
    with pytest.raises(BenchDataError, match="S1 is not verbatim"):
        load_quality_set(tmp_path)
    with pytest.raises(BenchDataError, match="not demo, ruff, pep8, nba, wnc or a directory"):
        load_quality_set(tmp_path / "nowhere")


def test_demo_set_loads() -> None:
    qs = load_quality_set("demo")
    assert len(qs.statements) == 11 and len(qs.cases) == 52
    assert {c["split"] for c in qs.cases} == {"dev", "test"}
    assert qs.demo_settings and qs.policy.page_content == qs.policy_text


# ------------------------------------------------------------------ the run
def _run(tmp_path: Path, judge: FakeChatModel, methods: str = "all", **kw: Any) -> Any:
    return run_quality(
        quality_set(),
        judge=judge,
        rules=RULES,
        embeddings=HashingEmbeddings(),
        out_dir=tmp_path / "run",
        methods=methods,
        show_progress=False,
        **kw,
    )


def test_tag_and_tag_raw_share_one_set_of_judgments(tmp_path: Path) -> None:
    judge = word_judge()
    run = _run(tmp_path, judge)
    assert judge.calls == len(CASES) * len(RULES)  # every pair once; tag-raw made no call of its own
    assert run.judge_calls == judge.calls
    rows = {(r.method.name, r.split): r for r in run.rows()}
    # The fake judge has no shipped calibration: tag's score is the raw P(YES), so both rows agree.
    for split in ("dev", "test"):
        assert rows[("tag", split)].f1 == rows[("tag-raw", split)].f1
    assert rows[("tag-raw", "dev")].judge_calls is None and rows[("tag", "dev")].judge_calls == 3 * 4
    # dev: d1 -> R1 {S1} (tp), d2 -> R3 {S3, S4} (tp S3, fp S4), d3 -> nothing: P 2/3, R 2/2.
    dev = rows[("tag-raw", "dev")]
    assert (dev.precision, dev.recall) == (pytest.approx(2 / 3), 1.0)
    # test: t1 -> R1, R2, R3 -> S1, S2, S3, S4: tp 3, fp 1; t2 nothing.
    test = rows[("tag-raw", "test")]
    assert (test.precision, test.recall, test.units) == (pytest.approx(3 / 4), 1.0, 1.5)
    # all rules: every case gets S1-S4 (R4 maps to none): dev tp 2 of 12 predicted, recall 1.
    everything = rows[("all_rules", "dev")]
    assert (everything.precision, everything.recall, everything.units) == (pytest.approx(2 / 12), 1.0, 4.0)
    assert rows[("rules_similarity@1", "dev")].units == 1.0
    assert rows[("chunks_similarity@1", "test")].units == 1.0
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    tag = next(r for r in records if r["method"] == "tag" and r["key"] == "d1")
    assert {j["rule_id"]: round(j["p_yes"], 3) for j in tag["judgments"]} == {
        "R1": 0.9,
        "R2": 0.2,
        "R3": 0.2,
        "R4": 0.2,
    }
    assert all(j["score"] is not None for j in tag["judgments"]) and tag["units"] == ["R1"]
    assert not any(r["method"] == "tag-raw" for r in records)
    table = quality_table(run)
    assert "| TAG, raw P(YES) >= 0.5 (`tag-raw`) | dev | 3 | 0.67 | 1.00 | 0.80 |" in table
    assert "| 4 | 1 | 5.0 | 4/4 |" in table  # rules, non-rules, per 20, covered
    assert "Non-rules (map to no statement): R4." in table


def test_tag_uses_the_calibrated_score_and_a_calibration_file_makes_no_new_pair_calls(tmp_path: Path) -> None:
    cal = Calibration(method="threshold", slope=1.0, intercept=3.0)  # lifts P(YES) 0.2 to about 0.83
    path = cal.save(tmp_path / "cal.json")
    judge = word_judge()
    run = _run(tmp_path, judge, methods=f"tag,tag-calibrated:{path}")
    assert judge.calls == len(CASES) * len(RULES)  # the calibrated row read every pair from the verdict cache
    rows = {(r.method.name, r.split): r for r in run.rows()}
    calibrated = rows[(f"tag-calibrated:{path}", "dev")]
    assert calibrated.units == 4.0 and calibrated.judge_calls == 0
    assert rows[("tag", "dev")].units == pytest.approx(2 / 3)
    # ECE of the lifted scores on mostly negative pairs is large; of the raw ones small.
    assert calibrated.ece is not None and rows[("tag", "dev")].ece is not None
    assert calibrated.ece > rows[("tag", "dev")].ece


def test_tag_fitted_fits_on_dev_applies_to_test_and_saves_a_loadable_calibration(tmp_path: Path) -> None:
    judge = word_judge()
    run = _run(tmp_path, judge, methods="tag-fitted")
    # Every pair once, plus every rule once on each typical input (its reference).
    assert judge.calls == len(CASES) * len(RULES) + len(TYPICAL_INPUTS) * len(RULES)
    rows = {(r.method.name, r.split): r for r in run.rows()}
    # The judge separates perfectly, so the dev fit keeps every hit and drops every miss; on test t1 gets
    # R1, R2, R3 (S1-S4, S4 a false positive) and t2 nothing.
    test = rows[("tag-fitted", "test")]
    assert (test.precision, test.recall, test.units) == (pytest.approx(3 / 4), 1.0, 1.5)
    assert test.ece is not None and test.judge_calls == 2 * 4
    saved = Calibration.load(tmp_path / "run" / FITTED_FILE)
    assert saved.method == "platt" and saved.slope > 0 and saved.reference_inputs == TYPICAL_INPUTS
    assert saved.threshold is not None and 0.0 < saved.threshold <= 1.0
    assert saved.prompt_version == "judge-applicability-v5" and run.judge_prompt == saved.prompt_version
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    d1 = next(r for r in records if r["method"] == "tag-fitted" and r["key"] == "d1")
    features = {j["rule_id"]: j["feature"] for j in d1["judgments"]}
    # R2's reference is higher (one typical input opens a file), so its miss sits lower than R3's.
    assert features["R1"] > features["R3"] == 0.0 > features["R2"]
    table = quality_table(run)
    assert "| TAG, fitted on dev (`tag-fitted`) | test | 2 | 0.75 | 1.00 |" in table
    assert "`tag-fitted`: Platt slope" in table
    # The saved file is a method of its own and reproduces the test row from the verdict cache.
    again = word_judge()
    rerun = _run(tmp_path, again, methods=f"tag-calibrated:{tmp_path / 'run' / FITTED_FILE}")
    assert again.calls == 0
    replay = {(r.method.kind, r.split): r for r in rerun.rows()}[("tag-calibrated", "test")]
    assert (replay.precision, replay.recall) == (test.precision, test.recall)


def test_the_judge_prompt_option_reaches_every_judgment(tmp_path: Path) -> None:
    seen: list[str] = []

    def respond(prompt: str) -> Any:
        seen.append(prompt)
        return ("NO", 0.2)

    run = _run(
        tmp_path,
        FakeChatModel(respond=respond, with_logprobs=True),
        methods="tag",
        judge_prompt="applicability-fewshot",
    )
    assert run.judge_prompt == "judge-applicability-fewshot-v3"
    assert len(seen) == len(CASES) * len(RULES) and all("Examples (each is a separate case)" in p for p in seen)


def test_tag_fitted_without_both_labels_on_dev_is_noted_not_fitted(tmp_path: Path) -> None:
    def never(prompt: str) -> Any:
        return ("NO", 0.1)

    qs = quality_set()
    qs.cases = [dict(c, violates=[]) if c["split"] == "dev" else dict(c) for c in CASES]
    run = run_quality(
        qs,
        judge=FakeChatModel(respond=never, with_logprobs=True),
        rules=RULES,
        out_dir=tmp_path / "run",
        methods="tag-fitted",
        show_progress=False,
    )
    assert run.fitted() is None and [r.method.name for r in run.rows()] == []
    assert not (tmp_path / "run" / FITTED_FILE).exists()
    assert any("`tag-fitted` not fitted" in note for note in run.notes)


def test_resume_after_a_partial_records_file(tmp_path: Path) -> None:
    first = word_judge()
    _run(tmp_path, first, methods="tag", splits=("dev",))
    assert first.calls == 3 * 4
    path = tmp_path / "run" / "records.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[1][:40], encoding="utf-8")  # one record, then a torn line
    (tmp_path / "run" / "verdicts.sqlite").unlink()  # no verdict cache: only the records file resumes
    again = word_judge()
    run = _run(tmp_path, again, methods="tag", splits=("dev",))
    assert again.calls == 2 * 4 and run.new_records == 2
    assert [r.n for r in run.rows()] == [3]
    third = word_judge()
    assert _run(tmp_path, third, methods="tag", splits=("dev",)).new_records == 0 and third.calls == 0


def test_other_rules_redo_the_records(tmp_path: Path) -> None:
    _run(tmp_path, word_judge(), methods="tag", splits=("test",))
    judge = word_judge()
    run = run_quality(
        quality_set(),
        judge=judge,
        rules=RULES[:2],
        out_dir=tmp_path / "run",
        methods="tag",
        splits=("test",),
        show_progress=False,
    )
    assert run.new_records == 2 and judge.calls == 0  # redone records; the pairs came from the verdict cache
    assert {j["rule_id"] for j in run.record("tag", "t1")["judgments"]} == {"R1", "R2"}
    assert any("redone" in note for note in run.notes)


def test_limit_per_split(tmp_path: Path) -> None:
    judge = word_judge()
    run = _run(tmp_path, judge, methods="tag-raw", limit=1)
    assert [c["id"] for c in run.cases] == ["d1", "t1"] and judge.calls == 2 * 4
    assert [c["id"] for c in _run(tmp_path, word_judge(), methods="tag-raw", limit=2).cases] == ["d1", "d2", "t1", "t2"]


def test_spread_takes_evenly_spaced_items_in_order() -> None:
    assert spread(list(range(10)), 3) == [0, 3, 6]
    assert spread(list(range(10)), 5) == [0, 2, 4, 6, 8]
    assert spread([1, 2], 5) == [1, 2] and spread([1, 2], None) == [1, 2]


def test_polarity_proxy() -> None:
    rule_map = {"R1": {"S1"}, "R2": {"S2"}, "R3": set()}
    p_yes = {
        "a": {"R1": 0.9, "R2": 0.9, "R3": 0.9},
        "b": {"R1": 0.1, "R2": 0.1, "R3": 0.1},
        "c": {"R1": 0.2, "R2": 0.8, "R3": 0.1},
    }
    gold = {"a": {"S1"}, "b": {"S2"}, "c": set()}
    # R1: violating cases {a} 0.9 > others 0.15. R2: violating {b} 0.1 < others 0.85 (reversed polarity).
    assert polarity_proxy(rule_map, p_yes, gold) == ["S1"]
    assert polarity_proxy(rule_map, {"a": p_yes["a"]}, gold) == []  # no negative case: not counted


def test_extraction_metrics_use_dev_judgments(tmp_path: Path) -> None:
    run = _run(tmp_path, word_judge(), methods="tag")
    ext = run.extraction()
    assert ext.covered == ["S1", "S2", "S3", "S4"] and ext.non_rules == ["R4"]
    # On dev: R1 is high on d1 (violates S1), R3 on d2 (violates S3). No dev case violates S2 or S4 (S4 shares
    # S3's text but d2 is labelled S3 only), so those cannot be told.
    assert ext.correct_polarity == ["S1", "S3"]
    assert _run(tmp_path / "t", word_judge(), methods="tag", splits=("test",)).extraction().correct_polarity is None


def test_rules_from_the_extractor_and_a_rule_file(tmp_path: Path) -> None:
    run = run_quality(
        quality_set(),
        judge=word_judge(),
        extractor=fake_extractor(),
        out_dir=tmp_path / "ex",
        methods="tag",
        cache_dir=tmp_path / "cache",
        show_progress=False,
    )
    assert run.rules and (tmp_path / "cache" / "extraction-store.sqlite").exists()
    assert (tmp_path / "ex" / "rules.jsonl").exists()
    assert {"S1", "S2", "S3"} <= {s for mapped in run.rule_map.values() for s in mapped}
    save_rules(RULES, tmp_path / "rules.jsonl")
    from_file = run_quality(
        quality_set(), rules=tmp_path / "rules.jsonl", out_dir=tmp_path / "f", methods="all_rules", show_progress=False
    )
    assert [r.rule_id for r in from_file.rules] == ["R1", "R2", "R3", "R4"]
    with pytest.raises(ValueError, match="judge model is needed"):
        run_quality(quality_set(), rules=RULES, out_dir=tmp_path / "g", methods="tag")
    with pytest.raises(ValueError, match="rules="):
        run_quality(quality_set(), judge=word_judge(), out_dir=tmp_path / "h", methods="tag")


# ------------------------------------------------------------------ CLI
@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    made: dict[str, Any] = {}

    def get_chat_model(config: Any = None, *, role: str = "executor", **kw: Any) -> Any:
        made[role] = word_judge() if role == "judge" else fake_extractor()
        return made[role]

    monkeypatch.setattr(models, "get_chat_model", get_chat_model)
    monkeypatch.setattr(models, "get_embeddings", lambda: HashingEmbeddings())
    return made


def _write_set(directory: Path) -> Path:
    directory.mkdir()
    (directory / "tiny_policy.md").write_text(POLICY, encoding="utf-8")
    (directory / "tiny_statements.json").write_text(json.dumps(STATEMENTS), encoding="utf-8")
    (directory / "tiny_cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (directory / "set.json").write_text(json.dumps({"domain": "tiny policy", "task_input": "code"}), encoding="utf-8")
    return directory


def test_cli_quality_end_to_end(tmp_path: Path, fake_models: dict, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write_set(tmp_path / "tiny")
    out = tmp_path / "out"
    argv = ["bench", "quality", "--set", str(data), "--out", str(out), "--cache-dir", str(tmp_path / "cache")]
    assert cli.main(argv) == 0
    printed = capsys.readouterr()
    assert "Quality set `tiny`: 4 statements, 5 cases scored (3 dev, 2 test)" in printed.out
    assert "| TAG, shipped default, typical references (`tag`) | dev | 3 |" in printed.out
    assert "`tag-domain` left out: it takes its references from the dev inputs" in printed.out  # 3 dev inputs
    assert "| chunks + similarity top-5 | test | 2 |" in printed.out
    assert (out / "quality.md").read_text(encoding="utf-8") in printed.out + "\n"
    assert "tag d1 (dev)  units=" in printed.err  # one progress line per record without a terminal
    calls = fake_models["judge"].calls
    assert calls > 0 and "extractor" in fake_models
    # A rerun resumes: no judge call, no new record.
    assert cli.main([*argv, "--split", "dev"]) == 0
    assert fake_models["judge"].calls == 0 and "0 new records" in capsys.readouterr().err


def test_cli_quality_demo_with_a_rule_file(tmp_path: Path, fake_models: dict, capsys: pytest.CaptureFixture) -> None:
    rules = tmp_path / "rules.jsonl"
    save_rules([_rule("R1", "Never write a bare `except:` clause.", offsets=False, condition="bare except")], rules)
    argv = ["bench", "quality", "--set", "demo", "--rules", str(rules), "--split", "test", "--limit", "2"]
    assert cli.main([*argv, "--methods", "tag-raw,all_rules", "--out", str(tmp_path / "o")]) == 0
    printed = capsys.readouterr().out
    assert "| all rules | test | 2 |" in printed and "| TAG, raw P(YES) >= 0.5 (`tag-raw`) | test | 2 |" in printed
    assert "extractor" not in fake_models  # the rule file was used
    assert cli.main([*argv, "--methods", "bogus"]) == 1
    assert "unknown method 'bogus'" in capsys.readouterr().err


def test_cli_quality_fits_with_another_judge_prompt(
    tmp_path: Path, fake_models: dict, capsys: pytest.CaptureFixture
) -> None:
    data = _write_set(tmp_path / "tiny")
    out = tmp_path / "out"
    argv = ["bench", "quality", "--set", str(data), "--out", str(out), "--cache-dir", str(tmp_path / "cache")]
    assert cli.main([*argv, "--methods", "tag-fitted", "--judge-prompt", "applicability-named"]) == 0
    assert "| TAG, fitted on dev (`tag-fitted`) | test | 2 |" in capsys.readouterr().out
    assert Calibration.load(out / FITTED_FILE).prompt_version == "judge-applicability-named-v4"


MORE_DEV = [
    {"id": "d4", "code": "fh = open(p)", "violates": ["S2"], "split": "dev"},
    {"id": "d5", "code": "total = a + b", "violates": [], "split": "dev"},
    {"id": "d6", "code": "name = input()", "violates": [], "split": "dev"},
]


def test_tag_domain_uses_dev_inputs_as_references_and_fit_default_pools_runs(
    tmp_path: Path, fake_models: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_tag.judging.calibration import defaults as module

    domain = {"method": "identity", "standardise": True, "min_spread": 0.5, "threshold": 0.5}
    monkeypatch.setitem(
        module.DOMAIN_REFERENCE_CALIBRATIONS, "fakechatmodel", {**domain, "prompt_version": "judge-applicability-v5"}
    )
    data = _write_set(tmp_path / "tiny")
    with (data / "tiny_cases.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(c) + "\n" for c in MORE_DEV))
    rules = save_rules(RULES, tmp_path / "rules.jsonl")
    out = tmp_path / "out"
    argv = ["bench", "quality", "--set", str(data), "--rules", str(rules), "--out", str(out), "--methods", "tag-domain"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "| TAG, shipped default, dev inputs as references (`tag-domain`) | test | 2 |" in printed
    # The references are the six dev inputs, judged as the dev cases are: every pair costs one call, once.
    assert fake_models["judge"].calls == (len(CASES) + len(MORE_DEV)) * len(RULES)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    t1 = next(r for r in records if r["key"] == "t1")
    features = {j["rule_id"]: j["feature"] for j in t1["judgments"]}
    assert features["R1"] > 0 == features["R4"]  # eval stands out from R1's level on the dev inputs; R4 never does
    assert cli.main(["bench", "fit-default", "--runs", f"{data}={out}"]) == 0
    report = capsys.readouterr().out
    assert report.startswith("Pooled fit of `tag-domain` on 18 dev pairs: Platt slope")  # 6 dev cases x R1-R3
    # The judge separates the pairs; the only misses come from R3 mapping to S3 and S4 (same text): dev F1 6/7,
    # test P 3/4. With one run, nothing is left out.
    assert f"| {data} | 6 | 2 | 0.86 | 0.75 | 1.00 | 0.86 | - | - |" in report
    assert cli.main(["bench", "fit-default", "--runs", f"{data}={tmp_path / 'nowhere'}"]) == 1
    assert "no records.jsonl" in capsys.readouterr().err


def test_fit_default_can_centre_each_cases_features_on_its_median(tmp_path: Path) -> None:
    from langchain_tag_bench.fit_default import load_run

    data = _write_set(tmp_path / "tiny")
    extra = [_rule(f"R{i}", "Never call eval on user input.", condition=f"extra {i}") for i in range(5, 8)]
    out = tmp_path / "run"
    out.mkdir()
    save_rules([*RULES, *extra], out / "rules.jsonl")
    values = {"R1": 3.0, "R2": -1.0, "R3": 0.5, "R4": 0.0, "R5": 1.0, "R6": 2.0, "R7": -2.0}  # median 0.5
    record = {
        "method": "tag-fitted",
        "key": "d1",
        "judgments": [{"rule_id": r, "feature": x} for r, x in values.items()],
    }
    (out / "records.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    plain = dict(load_run(str(data), out, "tag-fitted").features["d1"])
    centred = dict(load_run(str(data), out, "tag-fitted", centre_inputs=True).features["d1"])
    assert plain == values
    assert centred == {r: pytest.approx(x - 0.5) for r, x in values.items()}
