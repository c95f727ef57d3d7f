"""Tables and a plot from a benchmark run's records.

Two layouts: the results table (one row per method, the task's metrics
overall and per group, the mean number of units given to the executor, as
in the spec's tables) and the retrieval table (recall, precision and F1
against gold rule ids, per group and overall). Each is written as markdown
with a PNG bar chart beside it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_tag_bench.metrics import OVERALL, RetrievalScore, score_retrieval, summarize
from langchain_tag_bench.task import Metric

__all__ = [
    "MethodRow",
    "build_rows",
    "render_results_table",
    "render_retrieval_table",
    "render_threshold_sweep",
    "write_report",
]

logger = logging.getLogger(__name__)


def _mean(values: Iterable[Any]) -> float | None:
    numbers = [float(v) for v in values if v is not None]
    return sum(numbers) / len(numbers) if numbers else None


@dataclass(frozen=True)
class MethodRow:
    """Aggregates of one method's records.

    Attributes:
        name: Method name.
        label: Row label.
        n: Records.
        metrics: ``{metric key: {group: mean}}``, group ``"all"`` for every item.
        retrieval: ``{group: (recall, precision, f1)}`` for rule methods on
            items with gold ids.
        mean_units: Mean number of units given to the executor.
        judge_calls: Mean judge calls per item.
        tokens: Mean tokens per item (judge prompt + completion + executor).
        seconds: Mean wall time per item.
    """

    name: str
    label: str
    n: int
    metrics: dict[str, dict[str, float | None]]
    retrieval: dict[str, tuple[float | None, float | None, float | None]]
    mean_units: float
    judge_calls: float
    tokens: float
    seconds: float


def _tokens(record: dict[str, Any]) -> int:
    retrieval, executor = record.get("retrieval") or {}, record.get("executor_tokens") or {}
    return sum(
        int(part.get(k, 0) or 0) for part in (retrieval, executor) for k in ("prompt_tokens", "completion_tokens")
    )


def build_rows(
    methods: Sequence[Any], records_of: Any, metrics: Sequence[Metric], groups: Sequence[str]
) -> list[MethodRow]:
    """Aggregate each method's records.

    Args:
        methods: :class:`~langchain_tag_bench.methods.Method` objects, in row order.
        records_of: ``method -> list of records``.
        metrics: The task's metrics.
        groups: Reporting groups besides the overall one.
    """
    rows: list[MethodRow] = []
    for method in methods:
        records = records_of(method)
        if not records:
            continue
        by_group = {g: [r for r in records if r.get("group") == g] for g in groups}
        by_group[OVERALL] = records
        metric_means: dict[str, dict[str, float | None]] = {}
        for metric in metrics:
            metric_means[metric.key] = {
                g: _mean((r.get("scores") or {}).get(metric.key) for r in rs) for g, rs in by_group.items()
            }
        retrieval: dict[str, tuple[float | None, float | None, float | None]] = {}
        for g, rs in by_group.items():
            scored = [RetrievalScore(**r["retrieval_scores"]) for r in rs if r.get("retrieval_scores")]
            if scored:
                summary = summarize(scored)
                retrieval[g] = (summary.recall, summary.precision, summary.f1)
        rows.append(
            MethodRow(
                name=method.name,
                label=method.label,
                n=len(records),
                metrics=metric_means,
                retrieval=retrieval,
                mean_units=sum(r.get("n_units", 0) for r in records) / len(records),
                judge_calls=sum((r.get("retrieval") or {}).get("calls", 0) for r in records) / len(records),
                tokens=sum(_tokens(r) for r in records) / len(records),
                seconds=sum(float(r.get("seconds", 0.0)) for r in records) / len(records),
            )
        )
    return rows


def _fmt(value: float | None, percent: bool = False, digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value * 100:.1f}" if percent else f"{value:.{digits}f}"


def _costs(row: MethodRow) -> list[str]:
    return [f"{row.mean_units:.1f}", f"{row.judge_calls:.0f}", f"{row.tokens:,.0f}", f"{row.seconds:.1f}"]


def render_results_table(rows: Sequence[MethodRow], metrics: Sequence[Metric], groups: Sequence[str]) -> str:
    """Markdown results table: headline metric per group, other metrics overall, units given, costs."""
    if not metrics:
        raise ValueError("a results table needs at least one metric")
    head, rest = metrics[0], metrics[1:]
    headline = [f"{head.label} {g}" for g in groups] + [f"{head.label}" + (" all" if groups else "")]
    header = ["method", "n", *headline, *(m.label for m in rest), "#units", "judge calls", "tokens", "s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row.label, str(row.n)]
        cells += [_fmt(row.metrics[head.key].get(g), head.percent) for g in (*groups, OVERALL)]
        cells += [_fmt(row.metrics[m.key].get(OVERALL), m.percent) for m in rest]
        lines.append("| " + " | ".join(cells + _costs(row)) + " |")
    return "\n".join(lines)


def render_retrieval_table(rows: Sequence[MethodRow], groups: Sequence[str]) -> str:
    """Markdown retrieval table: recall, precision, F1 per group (``g1 / g2 / ... / all``)."""
    names = [*groups, OVERALL]
    span = " / ".join(names)
    header = [
        "method",
        "n",
        f"recall ({span})",
        f"precision ({span})",
        f"F1 ({span})",
        "#rules",
        "judge calls",
        "tokens",
        "s",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if not row.retrieval:
            continue
        triple = [row.retrieval.get(g, (None, None, None)) for g in names]
        cells = [row.label, str(row.n)] + [" / ".join(_fmt(t[i]) for t in triple) for i in range(3)]
        lines.append("| " + " | ".join(cells + _costs(row)) + " |")
    return "\n".join(lines)


SWEEP_THRESHOLDS: tuple[float, ...] = (0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7)
"""P(YES) thresholds of the sweep table."""


def render_threshold_sweep(
    methods: Sequence[Any], records_of: Any, thresholds: Sequence[float] = SWEEP_THRESHOLDS
) -> str:
    """Retrieval against gold at other P(YES) thresholds, from the recorded probabilities (no new calls).

    Only judged rule methods whose records carry P(YES) for every rule (a
    model with logprobs) and gold ids are included; returns ``""`` if none.
    """
    lines: list[str] = []
    for method in methods:
        records = [
            r for r in records_of(method) if r.get("gold_rules") is not None and (r.get("retrieval") or {}).get("p_yes")
        ]
        if not records or any(p is None for r in records for p in r["retrieval"]["p_yes"].values()):
            continue
        if not lines:
            lines = ["| method | P(YES) >= | recall | precision | F1 | #rules |", "|---|---|---|---|---|---|"]
        for threshold in thresholds:
            scores = [
                score_retrieval([k for k, p in r["retrieval"]["p_yes"].items() if p >= threshold], r["gold_rules"])
                for r in records
            ]
            summary = summarize(scores)
            lines.append(
                f"| {method.label} | {threshold:.2f} | {_fmt(summary.recall)} | {_fmt(summary.precision)} | "
                f"{_fmt(summary.f1)} | {summary.mean_retrieved:.1f} |"
            )
    return "\n".join(lines)


def _plot(path: Path, labels: list[str], series: dict[str, list[float]], xlabel: str, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.warning("matplotlib is not installed; no plot written (pip install langchain-tag-bench)")
        return False
    height = max(2.5, 0.45 * len(labels) * max(1, len(series)) ** 0.5 + 1)
    fig, ax = plt.subplots(figsize=(8, height))
    width = 0.8 / max(1, len(series))
    positions = range(len(labels))
    for i, (name, values) in enumerate(series.items()):
        ax.barh([p + i * width for p in positions], values, height=width, label=name)
    ax.set_yticks([p + width * (len(series) - 1) / 2 for p in positions])
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    if len(series) > 1:
        ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_report(run: Any) -> str:
    """Write the run's markdown table and PNG plot into its directory and return the markdown.

    A retrieval-only run writes ``retrieval.md`` and ``retrieval.png``; a
    full run writes ``results.md`` and ``results.png`` (with the retrieval
    table appended when rule methods have gold ids to score).
    """
    task = run.task
    rows = build_rows(run.methods, run.records, task.metrics, task.groups)
    n_items = len(task.items)
    title = f"{task.name}: {n_items} items" + (f"; rules: {task.rule_set}" if task.rule_set else "")
    parts = [f"## {title}", ""]
    stem = "retrieval" if run.retrieval_only else "results"
    if run.retrieval_only:
        parts.append(render_retrieval_table(rows, task.groups))
        scored = [r for r in rows if OVERALL in r.retrieval]
        _plot(
            run.out_dir / f"{stem}.png",
            [r.label for r in scored],
            {
                name: [r.retrieval[OVERALL][i] or 0.0 for r in scored]
                for i, name in enumerate(("recall", "precision", "F1"))
            },
            "score against gold rule ids (all items)",
            title,
        )
    else:
        parts.append(render_results_table(rows, task.metrics, task.groups))
        if any(r.retrieval for r in rows):
            parts += ["", "Retrieval against gold rule ids:", "", render_retrieval_table(rows, task.groups)]
        head = task.metrics[0]
        _plot(
            run.out_dir / f"{stem}.png",
            [r.label for r in rows],
            {head.label: [(r.metrics[head.key].get(OVERALL) or 0.0) * (100 if head.percent else 1) for r in rows]},
            head.label + (" (%)" if head.percent else ""),
            title,
        )
    sweep = render_threshold_sweep(run.methods, run.records)
    if sweep:
        parts += ["", "Threshold sweep from the recorded P(YES) (no new calls):", "", sweep]
    parts += [
        "",
        "#units: mean units given to the executor; judge calls, tokens (judge + executor) and s: means per item.",
    ]
    parts += [f"- {note}" for note in run.notes]
    markdown = "\n".join(parts) + "\n"
    (run.out_dir / f"{stem}.md").write_text(markdown, encoding="utf-8")
    return markdown
