"""Benchmark helpers: data loaders and scoring against gold labels.

:mod:`langchain_tag.bench.metrics` scores retrieval against gold rule ids and
NBA answers by strict accuracy; :mod:`langchain_tag.bench.nba` loads the
RuleArena NBA problems and rule catalog from a directory you pass and runs
similarity and pairwise-judge retrieval over them.
"""

from __future__ import annotations

from langchain_tag.bench.metrics import (
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

__all__ = [
    "NbaVerdict",
    "RetrievalScore",
    "RetrievalSummary",
    "parse_nba_verdict",
    "score_retrieval",
    "strict_accuracy",
    "strict_correct",
    "summarize",
    "summarize_by_group",
]
