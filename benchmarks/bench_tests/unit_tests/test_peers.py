"""LangChain's LLMChainFilter and LLMListwiseRerank as rows of the quality benchmark, on deterministic fakes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage

from langchain_tag.cli import main as cli
from langchain_tag.local import models
from langchain_tag.rules import save_rules
from langchain_tag.testing import FakeChatModel, HashingEmbeddings
from langchain_tag_bench.peers import (
    UsageCounter,
    fake_peer_model,
    filter_rules,
    listwise_rank,
    rule_documents,
    word_overlap,
)
from langchain_tag_bench.quality import parse_quality_methods, quality_table, run_quality

from .test_quality import CASES, RULES, quality_set, word_judge

DOCS = [
    Document("Never call eval on user input.", metadata={"rule_id": "R1"}),
    Document("Always close files you open.", metadata={"rule_id": "R2"}),
    Document("Do not print in library code.", metadata={"rule_id": "R3"}),
]


def test_word_overlap_ignores_common_words() -> None:
    assert word_overlap("x = eval(data)", "Never call eval on user input.") == 1
    assert word_overlap("the code must use it", "The code must use the rules") == 0


def test_usage_counter_counts_calls_and_tokens_through_callbacks() -> None:
    model = FakeChatModel(respond=lambda prompt: "YES")
    counter = UsageCounter()
    model.batch(["one two three", "four five"], config={"callbacks": [counter]})
    model.invoke("six", config={"callbacks": [counter]})
    assert counter.calls == 3 == model.calls
    assert counter.prompt_tokens == 3 + 2 + 1 and counter.completion_tokens == 3


def test_llm_chain_filter_runs_langchains_prompt_one_call_per_rule() -> None:
    model = fake_peer_model()
    outcome = filter_rules(model, DOCS, "print(eval(s))")
    assert outcome.rule_ids == ["R1", "R3"]
    assert outcome.calls == 3 == model.calls and outcome.error is None
    assert outcome.prompt_tokens == sum(len(p.split()) for p in model.prompts) and outcome.completion_tokens == 3
    # LangChain's own default prompt reached the model.
    assert all(p.startswith("Given the following question and context, return YES") for p in model.prompts)
    assert all(p.endswith("> Relevant (YES / NO):") for p in model.prompts)


def test_listwise_rerank_makes_one_structured_call_and_returns_the_whole_ranking() -> None:
    model = fake_peer_model()
    outcome = listwise_rank(model, DOCS, "print(x)  # library code")
    assert outcome.rule_ids == ["R3", "R1", "R2"]  # R3 shares "print", "library"; then document order
    assert outcome.calls == 1 == model.calls and outcome.error is None
    assert outcome.prompt_tokens == len(model.prompts[0].split())
    assert "Sort the Documents by their relevance to the Query." in model.prompts[0]
    assert "Document ID: 2\n```Do not print in library code.```" in model.prompts[0]


def test_peer_failures_are_recorded_not_raised() -> None:
    # A model without tool binding: BaseChatModel.with_structured_output needs bind_tools.
    plain = FakeChatModel(respond=lambda prompt: "NO")
    outcome = listwise_rank(plain, DOCS, "x = 1")
    assert outcome.rule_ids == [] and outcome.error is not None and outcome.error.startswith("NotImplementedError")
    # A reply the boolean parser cannot read fails the whole filter call for the input.
    ambiguous = FakeChatModel(respond=lambda prompt: "YES, or maybe NO")
    outcome = filter_rules(ambiguous, DOCS, "x = 1")
    assert outcome.rule_ids == [] and "Ambiguous response" in (outcome.error or "")
    assert outcome.calls == 3
    # A ranking with an id out of range.
    wild = fake_peer_model()
    wild.respond = lambda prompt: AIMessage(
        content="", tool_calls=[{"name": "RankDocuments", "args": {"ranked_document_ids": [7]}, "id": "c"}]
    )
    outcome = listwise_rank(wild, DOCS, "x = 1")
    assert outcome.error is not None and outcome.error.startswith("IndexError") and outcome.calls == 1


def test_rule_documents_carry_condition_and_id() -> None:
    docs = rule_documents(RULES)
    assert [d.metadata["rule_id"] for d in docs] == ["R1", "R2", "R3", "R4"]
    assert "the code calls eval" in docs[0].page_content


def test_parse_peer_methods() -> None:
    methods = parse_quality_methods("llm_filter,listwise,listwise@2")
    assert [m.name for m in methods] == ["llm_filter", "listwise@1", "listwise@3", "listwise@5", "listwise@2"]
    assert all(m.peer and not m.judged for m in methods)
    assert {m.record_method for m in methods} == {"llm_filter", "listwise"}
    assert not any(m.peer for m in parse_quality_methods("all"))  # the default rows stay free of them
    with pytest.raises(ValueError, match="K must be a positive integer"):
        parse_quality_methods("listwise@0")


def _run(tmp_path: Path, peer: Any, methods: str = "tag,llm_filter,listwise,all_rules", **kw: Any) -> Any:
    return run_quality(
        quality_set(),
        judge=word_judge(),
        peer_llm=peer,
        rules=RULES,
        embeddings=HashingEmbeddings(),
        out_dir=tmp_path / "run",
        methods=methods,
        show_progress=False,
        **kw,
    )


def test_quality_run_records_peer_cost_per_case_and_resumes(tmp_path: Path) -> None:
    peer = fake_peer_model()
    run = _run(tmp_path, peer)
    # The filter asks once per (case, rule); the reranker once per case, whatever K.
    assert peer.calls == len(CASES) * len(RULES) + len(CASES)
    rows = {(r.method.name, r.split): r for r in run.rows()}
    assert rows[("llm_filter", "dev")].calls == 4.0 and rows[("llm_filter", "dev")].judge_calls == 12
    for k in (1, 3, 5):
        row = rows[(f"listwise@{k}", "test")]
        assert row.calls == 1.0 and row.units == min(k, len(RULES)) and row.failures == 0
        assert row.prompt_tokens is not None and row.prompt_tokens > 0
    assert rows[("tag", "dev")].prompt_tokens is not None and rows[("all_rules", "dev")].prompt_tokens is None
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert {r["method"] for r in records} == {"tag", "llm_filter", "listwise"}  # one ranking record per case
    t1 = next(r for r in records if r["method"] == "listwise" and r["key"] == "t1")
    assert len(t1["units"]) == len(RULES) and t1["calls"] == 1 and t1["prompt_tokens"] > 0
    table = quality_table(run)
    assert "LangChain rows on FakePeerModel" in table
    assert "| LangChain `LLMChainFilter` (`llm_filter`) | dev | 3 |" in table
    assert "| LangChain `LLMListwiseRerank` top-3 (`listwise@3`) | test | 2 |" in table
    # A rerun makes no call: every record is there.
    again = fake_peer_model()
    rerun = _run(tmp_path, again)
    assert again.calls == 0 and rerun.new_records == 0
    assert [r.f1 for r in rerun.rows()] == [r.f1 for r in run.rows()]


def test_failed_peer_cases_are_counted_and_select_nothing(tmp_path: Path) -> None:
    plain = FakeChatModel(respond=lambda prompt: "YES")  # the filter works; the reranker cannot get a schema
    run = _run(tmp_path, plain, methods="llm_filter,listwise@3")
    rows = {(r.method.name, r.split): r for r in run.rows()}
    assert rows[("listwise@3", "dev")].failures == 3 and rows[("listwise@3", "dev")].units == 0
    assert rows[("listwise@3", "dev")].f1 == 0.0
    assert rows[("llm_filter", "dev")].failures == 0 and rows[("llm_filter", "dev")].units == len(RULES)
    row = next(line for line in quality_table(run).splitlines() if line.startswith("| LangChain `LLMListwise"))
    assert row.endswith("| 0 | 0.0 | 0.0 | 0 | 3 |")  # judge calls, s, calls per case, prompt tokens, failed
    record = run.record("listwise", "d1")
    assert record is not None and record["error"].startswith("NotImplementedError")


def test_peer_rows_need_a_peer_model(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="peer_llm is needed"):
        run_quality(quality_set(), rules=RULES, out_dir=tmp_path / "x", methods="llm_filter", show_progress=False)


def test_cli_runs_the_peers_on_the_judges_model_as_a_chat_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    made: dict[str, Any] = {}

    def get_chat_model(config: Any = None, *, role: str = "executor", **kw: Any) -> Any:
        made[role] = word_judge() if role == "judge" else fake_peer_model()
        return made[role]

    monkeypatch.setattr(models, "get_chat_model", get_chat_model)
    monkeypatch.setattr(models, "get_embeddings", lambda: HashingEmbeddings())
    rules = save_rules(RULES, tmp_path / "rules.jsonl")
    data = tmp_path / "tiny"
    data.mkdir()
    from .test_quality import POLICY, STATEMENTS

    (data / "tiny_policy.md").write_text(POLICY, encoding="utf-8")
    (data / "tiny_statements.json").write_text(json.dumps(STATEMENTS), encoding="utf-8")
    (data / "tiny_cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    argv = ["bench", "quality", "--set", str(data), "--rules", str(rules), "--out", str(tmp_path / "out")]
    assert cli.main([*argv, "--methods", "llm_filter,listwise@1"]) == 0
    printed = capsys.readouterr().out
    assert "| LangChain `LLMListwiseRerank` top-1 (`listwise@1`) | test | 2 |" in printed
    assert set(made) == {"executor"} and made["executor"].calls == len(CASES) * len(RULES) + len(CASES)
