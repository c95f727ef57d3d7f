"""The benchmark runner on the real local model: executor output scored for real, judge verdicts with P(YES)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from langchain_tag.local.models import ModelConfig, get_chat_model
from langchain_tag_bench.methods import parse_methods
from langchain_tag_bench.pep8 import pep8_rules
from langchain_tag_bench.runner import run_benchmark
from langchain_tag_bench.task import BenchItem, BenchTask
from langchain_tag_bench.tasks import code_task

pytestmark = pytest.mark.integration

PROBLEM = {
    "task_id": "Toy/0",
    "prompt": 'def add(a: int, b: int) -> int:\n    """Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    """\n',
    "entry_point": "add",
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
}


def test_code_task_scores_a_real_completion(local_config: ModelConfig, tmp_path: Path) -> None:
    data = tmp_path / "HumanEval.jsonl.gz"
    with gzip.open(data, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(PROBLEM) + "\n")
    pep8 = tmp_path / "style.md"
    pep8.write_text("# Names\n\nFunction names should be lowercase, with words separated by underscores.\n")
    task = code_task(data, pep8)
    run = run_benchmark(
        task,
        parse_methods("none"),
        tmp_path / "run",
        llm=get_chat_model(local_config, role="executor", max_tokens=256),
        show_progress=False,
    )
    (record,) = run.records(run.methods[0])
    scores = record["scores"]
    assert scores["status"] in {"passed", "failed", "error", "timeout"}
    assert isinstance(scores["pylint"], float) and -10.0 <= scores["pylint"] <= 10.0
    assert record["executor_tokens"]["completion_tokens"] > 0
    assert record["output"].strip()


def test_judged_retrieval_records_p_yes_for_every_rule(local_config: ModelConfig, tmp_path: Path) -> None:
    keep = {"E225", "E501", "W291", "E711", "E722"}
    rules = [r for r in pep8_rules() if r.rule_id in keep]
    task = BenchTask(
        name="pep8-mini",
        items=[BenchItem(key="x", text="x=1\nprint(x)\n", gold_rules=("E225",))],
        load_rules=lambda skip: rules,
    )
    run = run_benchmark(
        task,
        parse_methods("tag"),
        tmp_path / "run",
        judge_llm=get_chat_model(local_config, role="judge"),
        retrieval_only=True,
        show_progress=False,
    )
    (record,) = run.records(run.methods[0])
    assert record["retrieval"]["calls"] == len(rules) == 5
    assert set(record["retrieval"]["p_yes"]) == keep
    assert all(p is not None and 0.0 <= p <= 1.0 for p in record["retrieval"]["p_yes"].values())
    assert record["retrieval"]["completion_tokens"] == len(rules)  # one-token verdicts
    assert record["retrieval_scores"]["n_gold"] == 1
