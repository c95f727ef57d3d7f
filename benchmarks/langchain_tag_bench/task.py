"""What a benchmark domain hands the runner: items, a rule set, source documents and a scorer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.documents import Document

from langchain_tag.executors import ExecutorPrompt
from langchain_tag.judging.prompts import JudgePrompt
from langchain_tag.rules import Rule

__all__ = ["BenchItem", "BenchTask", "Metric"]


@dataclass(frozen=True)
class BenchItem:
    """One benchmark input.

    Attributes:
        key: Stable id, unique within the task (run records are keyed by it).
        text: What the retrievers and the executor see.
        group: Reporting group, e.g. ``"L0"``; ``""`` for none.
        gold_rules: Ids of the rules that govern the item, where known
            (retrieval is scored against them).
        payload: The domain's own record (problem, case), for the scorer.
        search_text: What the similarity methods search with, when it
            differs from ``text`` (the judge and the executor always see
            ``text``).
    """

    key: str
    text: str
    group: str = ""
    gold_rules: tuple[str, ...] | None = None
    payload: Any = field(default=None, compare=False, repr=False)
    search_text: str | None = None


@dataclass(frozen=True)
class Metric:
    """A per-item score averaged into the results table.

    Attributes:
        key: Key in each record's ``scores``.
        label: Column header.
        percent: Booleans and 0/1 values shown as a percentage.
    """

    key: str
    label: str
    percent: bool = False


Scorer = Callable[[BenchItem, str], Mapping[str, Any]]
RuleLoader = Callable[[int | None], Sequence[Rule]]


@dataclass
class BenchTask:
    """A benchmark domain, ready to run.

    Attributes:
        name: ``"nba"``, ``"code"``, ``"npov"`` or ``"pep8"``.
        items: The inputs, in order.
        load_rules: Returns the rule set; called with ``None`` for the full
            rule set or a phase number for the set extracted without that
            phase. Called lazily, so methods that need no rules never
            trigger an extraction.
        sources: Source documents (standard RAG chunks them).
        executor_domain: The executor prompt (an
            :class:`~langchain_tag.executors.ExecutorPrompt`, such as the
            benchmark's own in :data:`~langchain_tag_bench.prompts.BENCH_EXECUTOR_PROMPTS`,
            or a core domain name), or ``None`` for a retrieval-only task.
        score: Scores one executor output; ``None`` for a retrieval-only task.
        metrics: Per-item scores shown in the results table, headline first.
        groups: Reporting groups in display order (besides the overall row).
        judge_predicate: Judge prompt of the TAG rows: a core predicate name
            or a :class:`~langchain_tag.judging.prompts.JudgePrompt`.
        rule_set: One line saying where the rules come from, for the report.
        rule_text: What the rules + similarity rows embed per rule: the rule
            document's text (``"document"``: name, condition, action) or the
            condition alone (``"condition"``).
    """

    name: str
    items: list[BenchItem]
    load_rules: RuleLoader
    sources: list[Document] = field(default_factory=list)
    executor_domain: str | ExecutorPrompt | None = None
    score: Scorer | None = None
    metrics: tuple[Metric, ...] = ()
    groups: tuple[str, ...] = ()
    judge_predicate: str | JudgePrompt = "applicability"
    rule_set: str = ""
    rule_text: Literal["document", "condition"] = "document"

    @property
    def has_gold_rules(self) -> bool:
        """Whether any item carries gold rule ids."""
        return any(item.gold_rules is not None for item in self.items)
