"""Benchmarks: the paper's experiments as tasks, run over methods, scored against gold.

* :mod:`~langchain_tag_bench.tasks` builds the tasks (``nba``, ``code``,
  ``npov``, ``pep8``) from data paths you pass; nothing is downloaded.
* :mod:`~langchain_tag_bench.methods` names the rows (M0 ... M3, the
  relevance reranker, the 2x2 cells, the phase ablation).
* :func:`run_benchmark` runs them, one resumable JSONL record per item, and
  :func:`write_report` writes the markdown table and PNG plot.
* Scoring: :mod:`~langchain_tag_bench.metrics` (retrieval against gold ids,
  NBA strict accuracy), :mod:`~langchain_tag_bench.code` (Pass@1, pylint,
  radon, bandit), :mod:`~langchain_tag_bench.npov` (VFR and the 1-5 scores),
  :mod:`~langchain_tag_bench.pep8` (the mechanical PEP 8 gold set).

Example:
    .. code-block:: python

        from langchain_tag_bench import nba_task, parse_methods, run_benchmark, write_report
        from langchain_tag.local.models import get_chat_model

        task = nba_task("../shared/data/rulearena-nba", limit=10)
        run = run_benchmark(
            task, parse_methods("similarity,tag"), "runs/nba",
            judge_llm=get_chat_model(role="judge"), retrieval_only=True,
        )
        print(write_report(run))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_tag.lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_tag_bench.data import BenchDataError, default_data_path
    from langchain_tag_bench.methods import DEFAULT_KS, Method, parse_methods
    from langchain_tag_bench.metrics import (
        NbaVerdict,
        RetrievalScore,
        RetrievalSummary,
        parse_nba_verdict,
        score_retrieval,
        strict_accuracy,
        strict_correct,
        summarize,
        summarize_by_group,
    )
    from langchain_tag_bench.report import write_report
    from langchain_tag_bench.runlog import RunLog
    from langchain_tag_bench.runner import BenchRun, run_benchmark
    from langchain_tag_bench.task import BenchItem, BenchTask, Metric
    from langchain_tag_bench.tasks import TASKS, cached_extraction, code_task, nba_task, npov_task, pep8_task

__all__ = [
    "DEFAULT_KS",
    "TASKS",
    "BenchDataError",
    "BenchItem",
    "BenchRun",
    "BenchTask",
    "Method",
    "Metric",
    "NbaVerdict",
    "RetrievalScore",
    "RetrievalSummary",
    "RunLog",
    "cached_extraction",
    "code_task",
    "default_data_path",
    "nba_task",
    "npov_task",
    "parse_methods",
    "parse_nba_verdict",
    "pep8_task",
    "run_benchmark",
    "score_retrieval",
    "strict_accuracy",
    "strict_correct",
    "summarize",
    "summarize_by_group",
    "write_report",
]

_MODULES = {
    "BenchDataError": "data",
    "BenchItem": "task",
    "BenchRun": "runner",
    "BenchTask": "task",
    "DEFAULT_KS": "methods",
    "Method": "methods",
    "Metric": "task",
    "NbaVerdict": "metrics",
    "RetrievalScore": "metrics",
    "RetrievalSummary": "metrics",
    "RunLog": "runlog",
    "TASKS": "tasks",
    "cached_extraction": "tasks",
    "code_task": "tasks",
    "default_data_path": "data",
    "nba_task": "tasks",
    "npov_task": "tasks",
    "parse_methods": "methods",
    "parse_nba_verdict": "metrics",
    "pep8_task": "tasks",
    "run_benchmark": "runner",
    "score_retrieval": "metrics",
    "strict_accuracy": "metrics",
    "strict_correct": "metrics",
    "summarize": "metrics",
    "summarize_by_group": "metrics",
    "write_report": "report",
}
"""Where each public name lives: imported on first use, so the ``bench`` command's parser (built by every
``langchain-tag`` start) imports no task, model or report code."""

__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())
