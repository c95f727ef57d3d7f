"""The stratified label draw: it certifies recall with few labels when the judge's YES are rare, and keeps its word.

A synthetic job, no model: 400 inputs x 20 rules (8,000 pairs), the judge says YES to about 3 % of them, and an
informative proxy (a YES pair's score is the logistic of N(1.5, 1), a NO pair's of N(-1.5, 1)). Each trial
replays the cascade from the recorded verdicts with another seed: no judge call per trial.
"""

from __future__ import annotations

import math
import random
import statistics

import pytest

from langchain_tag.judging._label_draw import StratifiedDraw, hypergeometric_cdf, run_draw, stratified_cascade
from langchain_tag.scale.cascade_job import CascadeTargets

TRIALS = 200


def synthetic_job(seed: int = 0, pairs: int = 8000, rate: float = 0.03) -> tuple[list[float], list[bool]]:
    rng = random.Random(seed)
    truth = [rng.random() < rate for _ in range(pairs)]
    scores = [1 / (1 + math.exp(-rng.gauss(1.5 if yes else -1.5, 1.0))) for yes in truth]
    return scores, truth


def trial(draw: str, scores: list[float], truth: list[bool], seed: int) -> tuple[float, float]:
    """One seeded run: the share of the judge's calls saved, and the recall of its YES."""
    asked: set[int] = set()

    def oracle(picked: list[int]) -> dict[int, bool]:
        asked.update(picked)
        return {i: truth[i] for i in picked}

    rule = run_draw(draw, scores, oracle, budget=600, target_recall=0.9, delta=0.1, seed=seed)  # type: ignore[arg-type]
    kept = sum(1 for i, yes in enumerate(truth) if yes and (i in asked or rule.route(scores[i]) == "strong"))
    assert rule.strong_calls == len(asked | {i for i, s in enumerate(scores) if rule.route(s) == "strong"})
    return 1 - rule.strong_calls / len(scores), kept / sum(truth)


def test_the_default_draw_saves_half_the_calls_where_the_uniform_one_saves_almost_nothing() -> None:
    scores, truth = synthetic_job()
    assert 0.025 <= sum(truth) / len(truth) <= 0.035
    assert CascadeTargets().draw == "stratified"

    default = [trial(CascadeTargets().draw, scores, truth, seed) for seed in range(TRIALS)]
    uniform = [trial("uniform", scores, truth, seed) for seed in range(TRIALS)]

    assert statistics.median(saved for saved, _ in default) >= 0.5
    assert statistics.median(saved for saved, _ in uniform) < 0.1
    assert sum(recall >= 0.9 for _, recall in default) >= 0.9 * TRIALS
    assert sum(recall >= 0.9 for _, recall in uniform) >= 0.9 * TRIALS


def test_rare_yes_with_an_uninformative_proxy_still_keeps_the_target() -> None:
    rng = random.Random(5)
    truth = [rng.random() < 0.05 for _ in range(3000)]
    scores = [rng.random() for _ in truth]  # no information at all
    recalls = [trial("stratified", scores, truth, seed)[1] for seed in range(100)]
    assert sum(r >= 0.9 for r in recalls) >= 90


def test_a_budget_covering_the_job_labels_every_pair_and_sends_none() -> None:
    scores, truth = synthetic_job(pairs=300)
    rule = stratified_cascade(scores, lambda picked: {i: truth[i] for i in picked}, budget=400, seed=0)
    assert rule.labels_used == 300 and rule.sent == 0 and rule.t_low is None


def test_the_hypergeometric_tail_is_exact() -> None:
    assert hypergeometric_cdf(0, 10, 3, 2) == pytest.approx(7 / 10 * 6 / 9)
    assert hypergeometric_cdf(2, 10, 3, 2) == 1.0
    assert hypergeometric_cdf(-1, 10, 3, 2) == 0.0


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="delta must be within"):
        StratifiedDraw(10, 5, delta=1.0)
    with pytest.raises(ValueError, match="unknown draw"):
        run_draw("supg", [0.1], lambda picked: {}, budget=1)  # type: ignore[arg-type]
    draw = StratifiedDraw(10, 5, seed=0)
    draw.pilot()
    with pytest.raises(ValueError, match="3 scores for a job of 10 pairs"):
        draw.second([0.1, 0.2, 0.3], {})
