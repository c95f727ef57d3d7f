"""The comparison notebook's helpers: the per-method frame, the outcome grid, the plots and the fake models."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from langchain_tag.testing import HashingEmbeddings
from langchain_tag_bench.compare import (
    COMPARISON_METHODS,
    comparison_frame,
    fake_models,
    frame_html,
    outcome_grid,
    plot_comparison,
    plot_outcomes,
    short_label,
)
from langchain_tag_bench.peers import fake_peer_model
from langchain_tag_bench.quality import run_quality

from .test_quality import RULES, quality_set, word_judge


@pytest.fixture
def run(tmp_path: Path):  # type: ignore[no-untyped-def]
    return run_quality(
        quality_set(),
        judge=word_judge(),
        peer_llm=fake_peer_model(),
        rules=RULES,
        embeddings=HashingEmbeddings(),
        out_dir=tmp_path / "run",
        methods=COMPARISON_METHODS,
        show_progress=False,
    )


def test_comparison_frame_has_scores_units_and_cost_per_method(run) -> None:  # type: ignore[no-untyped-def]
    frame = comparison_frame({"tiny": run})
    assert list(frame["method"])[:2] == ["tag", "all rules"] and set(frame["set"]) == {"tiny"}
    assert "LLMChainFilter" in set(frame["method"]) and "listwise rerank@3" in set(frame["method"])
    tag = frame[frame["method"] == "tag"].iloc[0]
    # test: t1 -> R1, R2, R3 (S1-S4, S4 a false positive), t2 nothing.
    assert (tag["inputs"], tag["P"], tag["R"], tag["calls per input"]) == (2, 0.75, 1.0, 4.0)
    everything = frame[frame["method"] == "all rules"].iloc[0]
    assert everything["units per input"] == 4.0 and pd.isna(everything["calls per input"])
    listwise = frame[frame["method"] == "listwise rerank@1"].iloc[0]
    assert listwise["calls per input"] == 1.0 and listwise["prompt tokens per input"] > 0
    html = frame_html(frame, "tiny")
    assert "<table" in html and ">0.75<" in html and ">-<" in html  # all rules has no cost of its own


def test_outcome_grid_marks_hits_false_alarms_and_misses(run) -> None:  # type: ignore[no-untyped-def]
    cases, statements, grid = outcome_grid(run, "tag")
    assert cases == ["t1", "t2"] and statements == ["S1", "S2", "S3", "S4"]
    assert grid.tolist() == [[1, 1, 1, 2], [0, 0, 0, 0]]
    _, _, top1 = outcome_grid(run, "rules_similarity@1")
    assert {int(v) for v in top1[0]} <= {0, 1, 2, 3} and (top1[0] == 3).sum() >= 2  # one rule cannot cover three


def test_plots_draw(run) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    fig = plot_comparison(comparison_frame({"a": run, "b": run}))
    assert len(fig.axes) == 4
    fig = plot_outcomes(run, ["tag", "llm_filter", "listwise@3"], title="tiny")
    assert len(fig.axes) == 3


def test_short_labels_and_fake_models() -> None:
    assert short_label("rules_similarity@3") == "rules sim@3" and short_label("listwise@1") == "listwise rerank@1"
    models = fake_models()
    assert set(models) == {"judge", "peer_llm", "extractor", "embeddings"}
    judged = models["judge"].invoke("INPUT:\n<<<\nx = eval(data)\n>>>\n\nRULE:\nStatement: the code calls eval")
    assert judged.content == "YES"
