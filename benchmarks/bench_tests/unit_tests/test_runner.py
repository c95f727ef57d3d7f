"""The benchmark runner on a toy task: unit selection per method, records, scores, resume."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from langchain_tag.integrations.similarity import chunk_documents
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, HashingEmbeddings, judged_rule_id
from langchain_tag_bench.methods import parse_methods
from langchain_tag_bench.report import render_threshold_sweep, write_report
from langchain_tag_bench.runner import ITEMS_FILE, chunk_rules, run_benchmark
from langchain_tag_bench.task import BenchItem, BenchTask, Metric

# Which rules hold for which input: the fake judge answers from this table.
HOLDS = {
    "def f(x=[]):\n    return x": {"R-004"},
    "try:\n    g()\nexcept:\n    pass": {"R-005"},
    "from os import *\nimport a, b": {"R-001", "R-002"},
}
GOLD = {
    "def f(x=[]):\n    return x": ("R-004",),
    "try:\n    g()\nexcept:\n    pass": ("R-005", "R-003"),
    "from os import *\nimport a, b": ("R-001", "R-002"),
}
SOURCE = (
    "Imports. Never import with a wildcard; name what you import. Put each import on its own line.\n\n"
    "Defaults. A default argument value is evaluated once, so never use a list or a dict as a default.\n\n"
    "Exceptions. Always name the exception class you catch; a bare except hides real errors."
)


def _input(prompt: str) -> str:
    found = re.search(r"INPUT:\n<<<\n(.*?)\n>>>", prompt, re.S)
    assert found, prompt
    return found.group(1)


def _judge() -> FakeChatModel:
    def respond(prompt: str) -> str:
        rule_id = judged_rule_id(prompt)
        if rule_id is None:
            return "unreadable"
        if rule_id.startswith("C"):  # chunks: YES for the passage about exceptions
            return "YES" if "except" in _input(prompt) and "exception class" in prompt else "NO"
        return "YES" if rule_id in HOLDS[_input(prompt)] else "NO"

    return FakeChatModel(respond=respond, with_logprobs=True)


def _executor() -> FakeChatModel:
    # The executor echoes the ids it was given, so the test can check them.
    def respond(prompt: str) -> str:
        return "GIVEN " + " ".join(sorted(set(re.findall(r"\[((?:R|C)-?\d+)\]", prompt))))

    return FakeChatModel(respond=respond)


def _task(rules: list[Rule], calls: list[str] | None = None, fail_on: str | None = None) -> BenchTask:
    def score(item: BenchItem, output: str) -> dict[str, Any]:
        if calls is not None:
            calls.append(item.key)
        if item.key == fail_on:
            raise RuntimeError("scorer crashed")
        return {"ok": bool(set(output.split()[1:]) & set(item.gold_rules or ()))}

    items = [
        BenchItem(key=f"k{i}", text=t, group="A" if i < 2 else "B", gold_rules=GOLD[t]) for i, t in enumerate(HOLDS)
    ]
    return BenchTask(
        name="toy",
        items=items,
        load_rules=lambda skip: rules,
        sources=[Document(page_content=SOURCE, metadata={"source": "style.md"})],
        executor_domain="code_review",
        score=score,
        metrics=(Metric("ok", "ok %", percent=True),),
        groups=("A", "B"),
    )


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / ITEMS_FILE).read_text().splitlines()]


def test_each_method_gives_the_executor_what_it_should(rules: list[Rule], tmp_path: Path) -> None:
    judge, executor = _judge(), _executor()
    methods = parse_methods("none,all_rules,tag,rules_similarity@2,similarity@1,chunks_applicability")
    run = run_benchmark(
        _task(rules),
        methods,
        tmp_path,
        llm=executor,
        judge_llm=judge,
        embeddings=HashingEmbeddings(),
        show_progress=False,
    )
    by = {(r["method"], r["key"]): r for r in _records(tmp_path)}
    assert run.new_items == 6 * 3 == len(by)
    assert by[("none", "k0")]["units"] == [] and by[("none", "k0")]["output"] == "GIVEN "
    assert by[("all_rules", "k1")]["units"] == [r.rule_id for r in rules]
    # TAG gives exactly the rules the judge said YES to, and scores them against gold.
    assert sorted(by[("tag", "k2")]["units"]) == ["R-001", "R-002"]
    assert by[("tag", "k2")]["output"] == "GIVEN R-001 R-002"
    assert by[("tag", "k1")]["retrieval_scores"] == {
        "recall": 0.5,
        "precision": 1.0,
        "f1": pytest.approx(2 / 3),
        "n_retrieved": 1,
        "n_gold": 2,
        "n_hits": 1,
    }
    assert by[("tag", "k0")]["retrieval"]["calls"] == len(rules)
    assert by[("tag", "k0")]["scores"] == {"ok": True}
    assert len(by[("rules_similarity@2", "k0")]["units"]) == 2
    # Chunk methods give chunk ids, are judged with the passage prompt, and have no rule scores.
    assert by[("similarity@1", "k0")]["units"][0].startswith("C")
    assert "retrieval_scores" not in by[("similarity@1", "k0")]
    chunk_units = by[("chunks_applicability", "k1")]["units"]
    assert chunk_units and all(u.startswith("C") for u in chunk_units)
    # The executor is handed the matched chunks themselves, under their chunk ids.
    assert by[("chunks_applicability", "k1")]["output"] == "GIVEN " + " ".join(sorted(chunk_units))
    assert by[("chunks_applicability", "k0")]["units"] == []
    assert any("Passage (C" in p for p in judge.prompts)
    # Every pair is judged once: the graph's retrieval reads the verdicts match() recorded from the cache.
    n_chunks = len(chunk_documents(_task(rules).sources))
    assert judge.calls == len(HOLDS) * (len(rules) + n_chunks)
    assert all("graph_judge_calls" not in r["retrieval"] for r in by.values())
    # Executor tokens and timing are recorded.
    assert by[("tag", "k0")]["executor_tokens"]["prompt_tokens"] > 0
    assert by[("tag", "k0")]["seconds"] >= 0


def test_execution_runs_through_the_tag_graph(
    rules: list[Rule], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langchain_tag.graph as graph_module

    built: list[dict[str, Any]] = []
    real = graph_module.build_tag_graph

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(graph_module, "build_tag_graph", spy)
    run = run_benchmark(
        _task(rules), parse_methods("none,tag"), tmp_path, llm=_executor(), judge_llm=_judge(), show_progress=False
    )
    assert run.new_items == 2 * len(HOLDS)
    # One graph per method, reused for every item, with the method's retriever and the task's executor prompt.
    assert [(k["mode"], k["unit_kind"]) for k in built] == [("none", "none"), ("tag", "rules")]
    assert built[0]["retriever"] is None and built[1]["retriever"] is not None
    assert all(k["executor"] == "code_review" for k in built)


def test_rerun_resumes_without_redoing_finished_items(rules: list[Rule], tmp_path: Path) -> None:
    calls: list[str] = []
    judge, executor = _judge(), _executor()
    methods = parse_methods("tag")
    with pytest.raises(RuntimeError, match="scorer crashed"):
        run_benchmark(
            _task(rules, calls, fail_on="k1"), methods, tmp_path, llm=executor, judge_llm=judge, show_progress=False
        )
    assert [r["key"] for r in _records(tmp_path)] == ["k0"]
    judged = judge.calls
    run = run_benchmark(_task(rules, calls), methods, tmp_path, llm=executor, judge_llm=judge, show_progress=False)
    assert run.new_items == 2
    assert calls == ["k0", "k1", "k1", "k2"]  # k0 was not scored again
    assert judge.calls == judged + 2 * len(rules)  # and not judged again
    again = run_benchmark(_task(rules, calls), methods, tmp_path, llm=executor, judge_llm=judge, show_progress=False)
    assert again.new_items == 0 and len(again.records(methods[0])) == 3


def test_retrieval_only_maps_and_drops_methods(rules: list[Rule], tmp_path: Path) -> None:
    judge = _judge()
    run = run_benchmark(
        _task(rules),
        parse_methods("none,similarity@2,tag,chunks_applicability"),
        tmp_path,
        judge_llm=judge,
        embeddings=HashingEmbeddings(),
        retrieval_only=True,
        show_progress=False,
    )
    assert [m.name for m in run.methods] == ["rules_similarity@2", "tag"]
    assert any("none: left out" in n for n in run.notes)
    records = _records(tmp_path)
    assert all("output" not in r and "retrieval_scores" in r for r in records)
    markdown = write_report(run)
    # TAG: k0 1/1, k1 1/2, k2 2/2 -> recall A (1 + 0.5) / 2, B 1.0, overall 2.5 / 3.
    tag_row = next(line for line in markdown.splitlines() if line.startswith("| M3 TAG"))
    assert "| 0.75 / 1.00 / 0.83 |" in tag_row
    assert (tmp_path / "retrieval.md").read_text() == markdown
    # The fake judge gives P(YES) 0.9 for YES and 0.1 for NO: at 0.05 all 5 rules are taken,
    # precision (1/5 + 2/5 + 2/5) / 3, F1 (1/3 + 4/7 + 4/7) / 3.
    assert "| M3 TAG | 0.50 | 0.83 | 1.00 | 0.89 | 1.3 |" in markdown
    assert "| M3 TAG | 0.05 | 1.00 | 0.33 | 0.49 | 5.0 |" in render_threshold_sweep(run.methods, run.records, (0.05,))
    assert (tmp_path / "retrieval.png").stat().st_size > 1000


def test_results_report_lists_metric_per_group(rules: list[Rule], tmp_path: Path) -> None:
    run = run_benchmark(
        _task(rules), parse_methods("none,tag"), tmp_path, llm=_executor(), judge_llm=_judge(), show_progress=False
    )
    markdown = write_report(run)
    rows: dict[str, str] = {}
    for line in markdown.splitlines():  # the results table comes first, then the retrieval table
        if line.startswith("| M"):
            rows.setdefault(line.split(" | ")[0], line)
    assert rows["| M0 no retrieval"].startswith("| M0 no retrieval | 3 | 0.0 | 0.0 | 0.0 | 0.0 |")
    assert rows["| M3 TAG"].startswith("| M3 TAG | 3 | 100.0 | 100.0 | 100.0 | 1.3 |")
    assert "Retrieval against gold rule ids" in markdown
    assert (tmp_path / "results.png").exists()


def test_clear_errors(rules: list[Rule], tmp_path: Path) -> None:
    task = _task(rules)
    with pytest.raises(ValueError, match="judge model is needed"):
        run_benchmark(task, parse_methods("tag"), tmp_path, llm=_executor(), show_progress=False)
    with pytest.raises(ValueError, match="executor model is needed"):
        run_benchmark(task, parse_methods("none"), tmp_path, show_progress=False)
    no_gold = BenchTask(name="plain", items=[BenchItem("a", "x")], load_rules=lambda s: rules)
    with pytest.raises(ValueError, match="no gold rule ids"):
        run_benchmark(no_gold, parse_methods("tag"), tmp_path, judge_llm=_judge(), retrieval_only=True)
    retrieval_task = BenchTask(name="pep8", items=[BenchItem("a", "x", gold_rules=())], load_rules=lambda s: rules)
    with pytest.raises(ValueError, match="retrieval-only benchmark"):
        run_benchmark(retrieval_task, parse_methods("none"), tmp_path, llm=_executor())
    empty = BenchTask(
        name="empty",
        items=[BenchItem("a", "x", gold_rules=())],
        load_rules=lambda s: [],
        executor_domain="generic",
        score=lambda i, o: {},
    )
    with pytest.raises(ValueError, match="rule set is empty"):
        run_benchmark(empty, parse_methods("all_rules"), tmp_path, llm=_executor())


def test_chunk_rules_carry_chunk_text_and_id() -> None:
    chunk = Document(page_content="Name the exception class.", metadata={"chunk_id": "C3", "source": "s.md"})
    (rule,) = chunk_rules([chunk])
    assert (rule.rule_id, rule.condition, rule.document_id) == ("C3", "Name the exception class.", "s.md")
