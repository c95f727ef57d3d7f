"""The one best-F1 threshold search: the review's suggested threshold and the threshold calibration both use it."""

from __future__ import annotations

import random

import pytest

from langchain_tag.judging._logodds import logit
from langchain_tag.judging.calibration._best_f1 import BestCut, best_f1_cut
from langchain_tag.judging.calibration.model import fit_calibration
from langchain_tag.review._files import Pair, VerdictRecord
from langchain_tag.review._gold import score_gold


def test_the_cut_is_the_lowest_score_taken_and_ties_keep_the_higher() -> None:
    best = best_f1_cut([0.9, 0.6, 0.4, 0.2], [True, False, True, False])
    assert best == BestCut(threshold=0.4, f1=pytest.approx(0.8), below=0.2)
    # Every cut gives F1 0 without a positive: the highest is kept.
    assert best_f1_cut([0.3, 0.7], [False, False]) == BestCut(threshold=0.7, f1=0.0, below=0.3)
    # Equal scores are never split.
    assert best_f1_cut([0.5, 0.5, 0.1], [True, False, False]) == BestCut(
        threshold=0.5, f1=pytest.approx(2 / 3), below=0.1
    )


def test_positives_without_a_score_are_missed_at_every_cut_and_a_floor_bounds_the_search() -> None:
    assert best_f1_cut([0.9, 0.6], [True, False], unscored_positives=1) == BestCut(0.9, pytest.approx(2 / 3), 0.6)
    assert best_f1_cut([0.9, 0.4], [False, True], floor=0.5) == BestCut(0.9, 0.0, 0.4)
    assert best_f1_cut([0.3], [True], floor=0.5) is None
    assert best_f1_cut([], []) is None
    with pytest.raises(ValueError, match="2 scores but 1 labels"):
        best_f1_cut([0.1, 0.2], [True])


def test_the_midpoint_lies_between_the_cut_and_the_next_score_down() -> None:
    assert BestCut(0.4, 0.8, 0.2).midpoint == pytest.approx(0.3)
    assert BestCut(0.4, 0.8, None).midpoint == pytest.approx(-0.1)  # nothing below: one below the cut, halved


def _gold_threshold(scores: list[float], labels: list[bool]) -> float | None:
    """The review's suggested threshold for one input per (score, label), every pair written."""
    pairs = [Pair("R1", s >= 0.5, s, s) for s in scores]
    records = [
        VerdictRecord(f"in-{i}", i + 1, matched=[p] if p.applies else [], pairs=[p]) for i, p in enumerate(pairs)
    ]
    gold = {f"in-{i}": ({"R1"} if label else set()) for i, label in enumerate(labels)}
    return score_gold(records, gold, ["R1"], 0.5).best_threshold


def test_review_and_threshold_calibration_split_the_same_scores_at_the_same_place() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(2, 12)
        scores = [rng.choice([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) for _ in range(n)]
        labels = [rng.random() < 0.5 for _ in range(n)]
        if len(set(labels)) < 2:
            continue
        threshold = _gold_threshold(scores, labels)
        best = best_f1_cut(scores, labels)
        assert best is not None and threshold == best.threshold
        calibration = fit_calibration([logit(s) for s in scores], labels, method="threshold")
        assert [calibration.score(s) >= 0.5 for s in scores] == [s >= threshold for s in scores]
