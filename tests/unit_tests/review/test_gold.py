"""Precision, recall, F1 and the F1-maximising threshold, checked against hand counts."""

from __future__ import annotations

import pytest

from langchain_tag.review._files import Pair, VerdictRecord
from langchain_tag.review._gold import score_gold


def _record(input_id: str, scores: dict[str, float], threshold: float = 0.5, *, pairs: bool = True) -> VerdictRecord:
    all_pairs = [Pair(r, s >= threshold, s, s) for r, s in scores.items()]
    matched = sorted((p for p in all_pairs if p.applies), key=lambda p: -(p.score or 0))
    return VerdictRecord(input_id, 1, matched=matched, pairs=all_pairs if pairs else None)


def test_counts_per_rule_and_overall() -> None:
    records = [
        _record("a", {"R1": 0.9, "R2": 0.6}),  # R1 TP, R2 FP
        _record("b", {"R1": 0.4, "R2": 0.7}),  # R1 FN, R2 TP
        _record("c", {"R1": 0.2, "R2": 0.1}),  # nothing either side
        _record("d", {"R1": 0.8, "R2": 0.3}),  # no gold line: not scored
    ]
    gold = {"a": {"R1"}, "b": {"R1", "R2"}, "c": set(), "z": {"R1"}}
    scores = score_gold(records, gold, ["R1", "R2"], 0.5)
    r1, r2 = scores.per_rule["R1"], scores.per_rule["R2"]
    assert (r1.tp, r1.fp, r1.fn) == (1, 0, 1) and r1.precision == 1.0 and r1.recall == 0.5
    assert (r2.tp, r2.fp, r2.fn) == (1, 1, 0) and r2.precision == 0.5 and r2.recall == 1.0
    assert (scores.overall.tp, scores.overall.fp, scores.overall.fn) == (2, 1, 1)
    assert scores.overall.f1 == pytest.approx(4 / 6)
    assert (scores.scored_inputs, scores.verdicts_only, scores.gold_only) == (3, 1, 1)
    # Lowering the threshold to 0.4 takes b's R1 in: TP 3, FP 1, FN 0 -> F1 6/7, the best any cut gives.
    assert scores.best_threshold == 0.4 and scores.best_f1 == pytest.approx(6 / 7)
    assert scores.notes == []


def test_without_every_pair_only_higher_thresholds_are_tried() -> None:
    records = [_record("a", {"R1": 0.9, "R2": 0.6}, pairs=False), _record("b", {"R1": 0.4, "R2": 0.7}, pairs=False)]
    scores = score_gold(records, {"a": {"R1"}, "b": {"R1", "R2"}}, ["R1", "R2"], 0.5)
    # Known scores: a/R1 0.9 (gold), a/R2 0.6 (not), b/R2 0.7 (gold); b/R1 is a gold pair with no score.
    # At 0.7: TP 2, FP 0, FN 1 -> 0.8; at 0.6: TP 2, FP 1, FN 1 -> 2/3.
    assert scores.searched_from == 0.5
    assert scores.best_threshold == 0.7 and scores.best_f1 == pytest.approx(0.8)
    assert "--all-pairs" in scores.notes[0]


def test_no_prediction_and_no_gold_give_no_ratio() -> None:
    scores = score_gold([_record("a", {"R1": 0.1})], {"a": set()}, ["R1"], 0.5)
    assert scores.per_rule["R1"].precision is None and scores.per_rule["R1"].recall is None
    assert scores.overall.f1 is None


def test_each_input_lists_the_gold_rules_missed_and_wrongly_matched() -> None:
    records = [
        _record("a", {"R1": 0.9, "R2": 0.6}),  # R2 wrongly matched
        _record("b", {"R1": 0.4, "R2": 0.7}),  # R1 missed
        _record("c", {"R1": 0.2, "R2": 0.1}),  # agrees
        _record("d", {"R1": 0.8, "R2": 0.3}),  # no gold line: no diff
    ]
    scores = score_gold(records, {"a": {"R1"}, "b": {"R2", "R1"}, "c": set()}, ["R1", "R2"], 0.5)
    assert {i: (d.missed, d.wrong) for i, d in scores.per_input.items()} == {
        "a": ([], ["R2"]),
        "b": (["R1"], []),
        "c": ([], []),
    }
    assert scores.per_input["c"].agrees and not scores.per_input["a"].agrees
