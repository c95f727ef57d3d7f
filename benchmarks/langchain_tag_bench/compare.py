"""TAG next to LangChain's LLM compressors: the tables and plots of ``notebooks/tag_vs_langchain.ipynb``.

The notebook runs (or resumes) :func:`~langchain_tag_bench.quality.run_quality` with :data:`COMPARISON_METHODS`
on a quality set and reads the :class:`~langchain_tag_bench.quality.QualityRun` back through these helpers:

* :func:`comparison_frame`: one row per (set, method): P, R, F1, units handed to the executor per input, and the
  cost per input (model calls, prompt tokens, seconds), failures;
* :func:`plot_comparison`: F1 and the cost per method as bar charts;
* :func:`outcome_grid` / :func:`plot_outcomes`: per input and policy statement, what each method retrieved against
  the gold (hit, false alarm, miss);
* :func:`fake_models`: deterministic stand-ins for every model, for the notebooks' fake mode (tests).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_tag_bench.peers import fake_peer_model, word_overlap
from langchain_tag_bench.quality import QualityRun

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = [
    "COMPARISON_METHODS",
    "OUTCOME_COLOURS",
    "comparison_frame",
    "fake_models",
    "frame_html",
    "outcome_grid",
    "plot_comparison",
    "plot_outcomes",
    "short_label",
]

COMPARISON_METHODS = "tag,all_rules,rules_similarity,chunks_similarity,llm_filter,listwise"
"""The rows of the comparison: TAG, every rule, similarity over rules and chunks, LangChain's two compressors."""

OUTCOME_COLOURS = ("#ffffff", "#2e7d32", "#e53935", "#ffb300")
"""Colours of :func:`outcome_grid` values 0-3: nothing, hit (retrieved and gold), false alarm, miss."""


def short_label(name: str) -> str:
    """A short row label for a method name (``rules_similarity@3`` -> ``rules sim@3``)."""
    return (
        name.replace("rules_similarity", "rules sim")
        .replace("chunks_similarity", "chunks sim")
        .replace("all_rules", "all rules")
        .replace("llm_filter", "LLMChainFilter")
        .replace("listwise", "listwise rerank")
    )


def comparison_frame(runs: Mapping[str, QualityRun], split: str = "test") -> pd.DataFrame:
    """One row per (set, method) on ``split``: scores, units per input and cost per input.

    Args:
        runs: Set name -> its run.
        split: The split to read.

    Returns:
        Columns ``set, method, inputs, P, R, F1, units per input, calls per input, prompt tokens per input,
        s per input, failed``; cost columns are empty (NaN) for rows with no model call of their own.
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for name, run in runs.items():
        for row in run.rows():
            if row.split != split:
                continue
            rows.append(
                {
                    "set": name,
                    "method": short_label(row.method.name),
                    "inputs": row.n,
                    "P": round(row.precision, 2),
                    "R": round(row.recall, 2),
                    "F1": round(row.f1, 2),
                    "units per input": round(row.units, 1),
                    "calls per input": None if row.calls is None else round(row.calls, 1),
                    "prompt tokens per input": None if row.prompt_tokens is None else round(row.prompt_tokens),
                    "s per input": None if row.seconds is None or row.calls is None else round(row.seconds, 1),
                    "failed": row.failures,
                }
            )
    return pd.DataFrame(rows)


def plot_comparison(frame: pd.DataFrame, *, width: float = 11.0) -> Figure:
    """F1, model calls, prompt tokens and seconds per input, one bar per method, grouped by set.

    Similarity and ``all_rules`` rows make no model call: their call and token bars are empty (similarity pays
    for embeddings only). Each bar is labelled with its value.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    methods = list(dict.fromkeys(frame["method"]))
    sets = list(dict.fromkeys(frame["set"]))
    panels = (
        ("F1", "F1 (test)", "{:.2f}"),
        ("calls per input", "model calls per input", "{:.0f}"),
        ("prompt tokens per input", "prompt tokens per input", "{:,.0f}"),
        ("s per input", "seconds per input", "{:.1f}"),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 0.32 * len(methods) * len(sets) / 2 + 1.6))
    bar = 0.8 / len(sets)
    positions = np.arange(len(methods))
    colours = ("#1565c0", "#ef6c00", "#6a1b9a", "#00838f")
    for ax, (column, title, form) in zip(axes, panels, strict=True):
        top = 0.0
        for s_index, set_name in enumerate(sets):
            part = frame[frame["set"] == set_name].set_index("method")
            values = [part[column].get(m, np.nan) if m in part.index else np.nan for m in methods]
            values = [np.nan if v is None else float(v) for v in values]
            where = positions + s_index * bar
            ax.barh(where, values, height=bar, label=set_name, color=colours[s_index % 4])
            for y, value in zip(where, values, strict=True):
                if not np.isnan(value) and (value > 0 or column == "F1"):
                    ax.text(value, y, " " + form.format(value), va="center", fontsize=6.5)
                    top = max(top, value)
        ax.set_title(title, fontsize=10)
        ax.set_yticks(positions + bar * (len(sets) - 1) / 2, methods if ax is axes[0] else [""] * len(methods))
        ax.invert_yaxis()
        ax.tick_params(labelsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlim(0, 1.0 if column == "F1" else (top * 1.35 or 1.0))
    axes[0].legend(fontsize=8, loc="lower right", framealpha=0.9)
    fig.tight_layout()
    return fig


def outcome_grid(run: QualityRun, method: str, split: str = "test") -> tuple[list[str], list[str], np.ndarray]:
    """Per input and statement: 0 nothing, 1 hit (retrieved and gold), 2 false alarm, 3 miss (gold, not retrieved).

    Args:
        run: The run.
        method: A method name of the run (``tag``, ``listwise@3``, ...).
        split: The split.

    Returns:
        The case ids (rows), the statement ids (columns) and the grid.
    """
    import numpy as np

    chosen = next(m for m in run.methods if m.name == method)
    cases = [c for c in run.cases if c["split"] == split]
    statements = list(dict.fromkeys(str(s["id"]) for s in run.quality_set.statements))
    grid = np.zeros((len(cases), len(statements)), dtype=int)
    for i, case in enumerate(cases):
        found = run.predicted(chosen, case["id"]) or set()
        gold = set(case.get("violates") or ())
        for j, sid in enumerate(statements):
            grid[i, j] = 1 if sid in found and sid in gold else 2 if sid in found else 3 if sid in gold else 0
    return [str(c["id"]) for c in cases], statements, grid


def plot_outcomes(
    run: QualityRun, methods: Sequence[str], *, split: str = "test", width: float = 11.0, title: str = ""
) -> Figure:
    """One panel per method: inputs (rows) by policy statements (columns), coloured by :func:`outcome_grid`.

    Up to five panels side by side for a short policy; three per row when the policy has more than 12
    statements, so the statement ids stay readable.
    """
    import math

    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    grids = [outcome_grid(run, m, split) for m in methods]
    cases, statements, _ = grids[0]
    columns = min(len(methods), 5 if len(statements) <= 12 else 3)
    rows = math.ceil(len(methods) / columns)
    panel_height = max(1.8, 0.6 + 0.16 * len(cases))
    fig, axes = plt.subplots(rows, columns, figsize=(width, rows * panel_height + 0.9), sharey=True, squeeze=False)
    cmap = ListedColormap(OUTCOME_COLOURS)
    flat = list(axes.flat)
    for ax, method, (_, _, grid) in zip(flat, methods, grids, strict=False):
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=3, aspect="auto", interpolation="nearest")
        ax.set_title(short_label(method), fontsize=9)
        ax.set_xticks(range(len(statements)), [_short_id(s) for s in statements], rotation=90, fontsize=7)
        ax.set_xticks([x - 0.5 for x in range(1, len(statements))], minor=True)
        ax.set_yticks([y - 0.5 for y in range(1, len(cases))], minor=True)
        ax.grid(which="minor", color="#dddddd", linewidth=0.4)
        ax.tick_params(which="minor", length=0)
    for ax in flat[len(methods) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_yticks(range(len(cases)), [_short_id(c) for c in cases], fontsize=7)
    legend = [
        Patch(facecolor=c, edgecolor="#999999", label=t) for c, t in zip(OUTCOME_COLOURS[1:], _OUTCOMES, strict=True)
    ]
    fig.legend(handles=legend, loc="lower center", ncol=3, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0.45 / (rows * panel_height + 0.9), 1, 1))
    return fig


_OUTCOMES = ("retrieved, violated (hit)", "retrieved, not violated (false alarm)", "violated, not retrieved (miss)")


def frame_html(frame: pd.DataFrame, set_name: str) -> str:
    """One set's rows of :func:`comparison_frame` as an HTML table, numbers formatted per column."""
    part = frame[frame["set"] == set_name].drop(columns=["set"])
    formats = {
        "P": "{:.2f}",
        "R": "{:.2f}",
        "F1": "{:.2f}",
        "units per input": "{:.1f}",
        "calls per input": "{:,.1f}",
        "prompt tokens per input": "{:,.0f}",
        "s per input": "{:.1f}",
    }
    formatters = {
        column: (lambda value, form=form: "-" if value != value or value is None else form.format(value))
        for column, form in formats.items()
    }
    return part.to_html(index=False, formatters=formatters, na_rep="-", border=0, justify="right")


def _short_id(text: str, size: int = 14) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


# --------------------------------------------------------------------------
# Fakes.
# --------------------------------------------------------------------------
_JUDGE_INPUT = re.compile(r"INPUT:\n<<<\n(.*)\n>>>\n\nRULE:\n(.*)", re.DOTALL)


def fake_models() -> dict[str, Any]:
    """Deterministic models for a fake quality run: ``judge``, ``peer_llm``, ``extractor`` and ``embeddings``.

    The judge says YES (P 0.9, with logprobs) when the input and the rule share a word (:func:`word_overlap`),
    else NO (P 0.1); the peer model answers LangChain's filter and reranker prompts the same way
    (:func:`~langchain_tag_bench.peers.fake_peer_model`); the extractor turns the policy's normative sentences
    into rules (:func:`~langchain_tag.testing.fake_extractor`); the embeddings are
    :class:`~langchain_tag.testing.HashingEmbeddings`.
    """
    from langchain_tag.testing import FakeChatModel, HashingEmbeddings, fake_extractor

    def judge(prompt: str) -> Any:
        found = _JUDGE_INPUT.search(prompt)
        if not found:
            return ("NO", 0.1)
        return ("YES", 0.9) if word_overlap(found.group(1), found.group(2)) > 0 else ("NO", 0.1)

    return {
        "judge": FakeChatModel(respond=judge, with_logprobs=True),
        "peer_llm": fake_peer_model(),
        "extractor": fake_extractor(),
        "embeddings": HashingEmbeddings(),
    }
