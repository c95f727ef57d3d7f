"""Thresholds with a stated guarantee: over many label draws the target holds in at least 1 - delta of them."""

from __future__ import annotations

import random
import time

import pytest

from langchain_tag.judging.guarantee import (
    GuaranteedThresholds,
    guaranteed_thresholds,
    label_sample,
    min_positive_labels,
)


def _job(seed: int, *, n: int = 2000, rate: float = 0.15, gap: float = 1.5) -> tuple[list[float], list[bool]]:
    """A synthetic job: the fake strong judge's verdicts and a noisy proxy score that leans towards them."""
    rng = random.Random(10_000 + seed)
    strong = [rng.random() < rate for _ in range(n)]
    return [rng.gauss(gap if y else 0.0, 1.0) for y in strong], strong


def _run(
    scores: list[float], strong: list[bool], labels: dict[int, bool], rule: GuaranteedThresholds
) -> tuple[list[bool], int]:
    """The cascade over every pair: labelled pairs keep their label, sent pairs ask the fake strong judge."""
    calls = len(labels)
    decisions = []
    for i, score in enumerate(scores):
        if i in labels:
            decisions.append(labels[i])
            continue
        route = rule.route(score)
        if route == "strong":
            calls += 1
            decisions.append(strong[i])
        else:
            decisions.append(route == "yes")
    return decisions, calls


def test_recall_target_holds_in_at_least_1_minus_delta_of_200_seeds() -> None:
    started = time.perf_counter()
    held = 0
    for seed in range(200):
        scores, strong = _job(seed)
        labels = {i: strong[i] for i in label_sample(len(scores), 400, seed=seed)}
        rule = guaranteed_thresholds(scores, labels, target_recall=0.9, delta=0.1)
        decisions, calls = _run(scores, strong, labels, rule)
        kept = sum(d and y for d, y in zip(decisions, strong, strict=True))
        held += kept / sum(strong) >= 0.9
        assert calls == rule.strong_calls == rule.labels_used + rule.sent <= 400 + rule.sent
        assert rule.labels_used == 400 and rule.t_high is None
        assert rule.strong_share == rule.sent / len(scores)
    assert held >= 180, held
    assert time.perf_counter() - started < 5


def test_recall_rule_saves_strong_calls_when_the_proxy_separates() -> None:
    scores, strong = _job(0, gap=3.0)
    labels = {i: strong[i] for i in label_sample(len(scores), 400, seed=0)}
    rule = guaranteed_thresholds(scores, labels, target_recall=0.9, delta=0.1)
    assert rule.t_low is not None
    assert rule.strong_share < 0.5
    assert rule.observed_recall is not None and rule.observed_recall >= 0.9
    assert rule.observed_precision == 1.0  # no pair decided YES without the strong judge


def test_precision_target_holds_in_at_least_1_minus_delta_of_200_seeds() -> None:
    held = decided_yes = 0
    for seed in range(200):
        scores, strong = _job(seed, gap=3.0)
        labels = {i: strong[i] for i in label_sample(len(scores), 400, seed=seed)}
        rule = guaranteed_thresholds(scores, labels, target_recall=None, target_precision=0.8, delta=0.1)
        decisions, calls = _run(scores, strong, labels, rule)
        true_yes = sum(d and y for d, y in zip(decisions, strong, strict=True))
        held += true_yes / sum(decisions) >= 0.8
        decided_yes += rule.t_high is not None
        assert rule.t_low is None
        assert calls == rule.strong_calls <= 400 + rule.sent
    assert held >= 180, held
    assert decided_yes >= 150  # the rule does decide YES without the strong judge, most of the time


def test_both_targets_split_delta_and_both_hold() -> None:
    held = 0
    for seed in range(100):
        scores, strong = _job(seed, gap=3.0)
        labels = {i: strong[i] for i in label_sample(len(scores), 400, seed=seed)}
        rule = guaranteed_thresholds(scores, labels, target_recall=0.9, target_precision=0.8, delta=0.1)
        decisions, _ = _run(scores, strong, labels, rule)
        true_yes = sum(d and y for d, y in zip(decisions, strong, strict=True))
        held += true_yes / sum(strong) >= 0.9 and true_yes / sum(decisions) >= 0.8
    assert held >= 90


def test_no_positive_label_sends_every_unlabelled_pair() -> None:
    scores = [i / 100 for i in range(100)]
    labels = dict.fromkeys(range(0, 100, 5), False)
    rule = guaranteed_thresholds(scores, labels, target_recall=0.9, delta=0.1)
    assert (rule.t_low, rule.t_high) == (None, None)
    assert rule.sent == 80 and rule.strong_calls == 100 and rule.positive_labels == 0
    assert rule.observed_recall is None and rule.observed_precision is None


def test_too_few_positive_labels_clear_nothing() -> None:
    need = min_positive_labels(0.9, 0.1)
    assert need == 22
    scores = [float(i) for i in range(200)]
    labels = {i: True for i in range(100, 100 + need - 1)}
    assert guaranteed_thresholds(scores, labels).t_low is None
    labels[199] = True
    assert guaranteed_thresholds(scores, labels).t_low == 100.0  # every YES label at or above it


def test_budget_larger_than_the_job_labels_every_pair() -> None:
    scores, strong = _job(1, n=50)
    picked = label_sample(50, 400, seed=1)
    assert picked == list(range(50))
    rule = guaranteed_thresholds(scores, {i: strong[i] for i in picked})
    assert rule.sent == 0 and rule.strong_calls == 50 and rule.strong_share == 0.0
    assert rule.observed_recall == 1.0


def test_label_sample_is_uniform_without_replacement_and_leaves_the_global_rng_alone() -> None:
    random.seed(7)
    before = random.random()
    random.seed(7)
    picked = label_sample(1000, 100, seed=3)
    assert random.random() == before
    assert len(set(picked)) == 100 and picked == sorted(picked) and picked == label_sample(1000, 100, seed=3)
    with pytest.raises(ValueError, match="budget"):
        label_sample(10, -1)


def test_accepts_numpy_arrays_and_pandas_series() -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    scores, strong = _job(2)
    labels = {i: strong[i] for i in label_sample(len(scores), 400, seed=2)}
    expected = guaranteed_thresholds(scores, labels)
    assert guaranteed_thresholds(np.asarray(scores), labels) == expected
    assert guaranteed_thresholds(pd.Series(scores), labels) == expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"delta": 0.0}, "delta must be within"),
        ({"delta": 1.0}, "delta must be within"),
        ({"delta": -0.1}, "delta must be within"),
        ({"target_recall": 0.0}, "target_recall must be within"),
        ({"target_recall": 1.5}, "target_recall must be within"),
        ({"target_precision": -1.0}, "target_precision must be within"),
        ({"target_recall": None}, "give target_recall, target_precision or both"),
    ],
)
def test_out_of_range_arguments_are_refused(kwargs: dict[str, float | None], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        guaranteed_thresholds([0.1, 0.2], {0: True}, **kwargs)  # type: ignore[arg-type]


def test_bad_scores_and_label_indices_are_refused() -> None:
    with pytest.raises(ValueError, match="finite score"):
        guaranteed_thresholds([0.1, float("nan")], {0: True})
    with pytest.raises(ValueError, match="outside the job"):
        guaranteed_thresholds([0.1, 0.2], {2: True})


def test_target_recall_one_clears_nothing() -> None:
    scores = [float(i) for i in range(100)]
    labels = {i: True for i in range(50, 100)}
    rule = guaranteed_thresholds(scores, labels, target_recall=1.0)
    assert rule.t_low is None and rule.sent == 50
