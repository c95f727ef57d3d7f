"""The batch round trip: a bulk job's verdicts, exported, answered from its cache and imported, give its file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_tag.calls._identity import IDENTITY_METADATA_KEY
from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule, save_rules
from langchain_tag.scale.bulk import match_corpus, read_inputs, write_results
from langchain_tag.testing import FakeChatModel
from langchain_tag_bench.batch_roundtrip import compare_results, main

MODEL = "fake-judge-q4"


def _p_yes(prompt: str) -> tuple[str, float]:
    p = 0.9 if "import *" in prompt and "wildcard" in prompt else 0.2
    return ("YES" if p >= 0.5 else "NO"), p


def _rules() -> list[Rule]:
    return [
        Rule(rule_id=rid, rule_name=name, condition=condition, action="fix it", source_text=condition)
        for rid, name, condition in [
            ("W1", "wildcard import", "the code has a wildcard import"),
            ("D1", "mutable default", "a function has a mutable default argument"),
            ("T1", "tabs", "a line is indented with tabs"),
        ]
    ]


def test_round_trip_writes_the_bulk_jobs_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "inputs.jsonl"
    texts = ["from os import *", "def f(x=[]):\n    return x", "x = 1"]
    inputs.write_text("".join(json.dumps({"id": f"i{n}", "text": t}) + "\n" for n, t in enumerate(texts)))
    rules = save_rules(_rules(), tmp_path / "rules.jsonl")
    judge = FakeChatModel(respond=_p_yes, with_logprobs=True, metadata={IDENTITY_METADATA_KEY: MODEL})
    retriever = ApplicabilityRetriever(llm=judge, rules=_rules(), cache=SQLiteVerdictCache(tmp_path / "bulk.sqlite"))
    write_results(match_corpus(read_inputs(inputs), retriever), tmp_path / "bulk.jsonl")

    argv = ["--inputs", str(inputs), "--rules", str(rules), "--verdicts", str(tmp_path / "bulk.sqlite")]
    argv += ["--expected", str(tmp_path / "bulk.jsonl"), "--model", MODEL, "--out", str(tmp_path / "rt")]
    assert main([*argv, "--max-requests", "4"]) == 0

    report = json.loads(capsys.readouterr().out)
    assert report["exit_code"] == 0 and report["requests_per_file"] == [4, 4, 1]
    assert report["answered_from_the_bulk_cache"] == 9
    assert (report["inputs"], report["same_ids"], report["inputs_with_same_matches"]) == (3, True, 3)
    assert report["matched_rules"] == 1 and report["largest_p_yes_gap"] < 1e-12
    assert report["byte_identical"] is True
    assert sorted(p.name for p in (tmp_path / "rt" / "export").glob("batch-*.jsonl")) == [
        "batch-0001.jsonl",
        "batch-0002.jsonl",
        "batch-0003.jsonl",
    ]


def test_compare_results_sees_a_different_match(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(
        json.dumps({"id": "x", "matched": [{"rule_id": "W1", "score": 0.9, "p_yes": 0.9}], "failed": []}) + "\n"
    )
    b.write_text(json.dumps({"id": "x", "matched": [], "failed": []}) + "\n")
    got = compare_results(b, a)
    assert (got["inputs_with_same_matches"], got["byte_identical"], got["matched_rules"]) == (0, False, 1)
