"""Retrieval scores and NBA strict accuracy, checked against hand-computed numbers."""

from __future__ import annotations

import pytest

from langchain_tag_bench.metrics import (
    OVERALL,
    NbaVerdict,
    RetrievalScore,
    parse_nba_verdict,
    score_retrieval,
    strict_accuracy,
    strict_correct,
    summarize,
    summarize_by_group,
)


# ---------------------------------------------------------------- retrieval
def test_score_partial_overlap() -> None:
    # gold {a,b,c,d}, retrieved {a,b,x}: 2 hits -> R = 2/4, P = 2/3, F1 = 2*(1/2)(2/3)/(1/2+2/3) = 4/7.
    s = score_retrieval(["a", "b", "x"], ["a", "b", "c", "d"])
    assert s.recall == pytest.approx(0.5)
    assert s.precision == pytest.approx(2 / 3)
    assert s.f1 == pytest.approx(4 / 7)
    assert (s.n_retrieved, s.n_gold, s.n_hits) == (3, 4, 2)


def test_score_perfect_and_disjoint() -> None:
    assert score_retrieval(["a", "b"], ["b", "a"]) == RetrievalScore(1.0, 1.0, 1.0, 2, 2, 2)
    assert score_retrieval(["x"], ["a"]) == RetrievalScore(0.0, 0.0, 0.0, 1, 1, 0)


def test_score_ignores_repeats_and_order() -> None:
    s = score_retrieval(["a", "a", "x", "a"], ["a", "a", "b"])
    assert (s.n_retrieved, s.n_gold, s.n_hits) == (2, 2, 1)
    assert s.recall == pytest.approx(0.5)
    assert s.precision == pytest.approx(0.5)


def test_empty_retrieved_with_gold_scores_zero() -> None:
    assert score_retrieval([], ["a", "b"]) == RetrievalScore(0.0, 0.0, 0.0, 0, 2, 0)


def test_empty_gold_leaves_recall_and_f1_undefined() -> None:
    s = score_retrieval(["a"], [])
    assert s.recall is None and s.f1 is None
    assert s.precision == 0.0  # every retrieved id is a false positive
    both_empty = score_retrieval([], [])
    assert (both_empty.recall, both_empty.precision, both_empty.f1) == (None, None, None)


def test_summarize_is_a_macro_mean_that_skips_undefined_values() -> None:
    scores = [
        score_retrieval(["a", "b", "x"], ["a", "b", "c", "d"]),  # R 1/2, P 2/3, F1 4/7
        score_retrieval(["a"], ["a"]),  # R 1, P 1, F1 1
        score_retrieval(["z"], []),  # R -, P 0, F1 -
    ]
    s = summarize(scores)
    assert (s.n, s.n_scored) == (3, 2)
    assert s.recall == pytest.approx((0.5 + 1.0) / 2)
    assert s.precision == pytest.approx((2 / 3 + 1.0 + 0.0) / 3)
    assert s.f1 == pytest.approx((4 / 7 + 1.0) / 2)
    assert s.mean_retrieved == pytest.approx((3 + 1 + 1) / 3)
    assert s.mean_gold == pytest.approx((4 + 1 + 0) / 3)


def test_summarize_nothing() -> None:
    s = summarize([])
    assert (s.n, s.n_scored, s.recall, s.precision, s.f1, s.mean_retrieved) == (0, 0, None, None, None, 0.0)


def test_summarize_by_group_reports_each_level_and_all_items() -> None:
    items = [
        (0, score_retrieval(["a"], ["a", "b"])),  # R 0.5
        (0, score_retrieval(["a", "b"], ["a", "b"])),  # R 1.0
        (2, score_retrieval([], ["a"])),  # R 0.0
    ]
    out = summarize_by_group(items)
    assert list(out) == [0, 2, OVERALL]
    assert out[0].recall == pytest.approx(0.75)
    assert out[2].recall == 0.0
    # Overall averages items (0.5 + 1 + 0) / 3, not levels (0.75 + 0) / 2.
    assert out[OVERALL].recall == pytest.approx(0.5)
    assert out[OVERALL].n == 3
    assert out[OVERALL].mean_retrieved == pytest.approx(1.0)


def test_summarize_by_group_refuses_a_group_named_like_the_total() -> None:
    with pytest.raises(ValueError, match="collides"):
        summarize_by_group([(OVERALL, score_retrieval(["a"], ["a"]))])


# ------------------------------------------------------------ NBA verdicts
def test_parse_json_reply() -> None:
    reply = '{"answer": true, "illegal_operation": "B", "problematic_team": "A", "rationale": "over the cap"}'
    assert parse_nba_verdict(reply) == NbaVerdict(True, "B", "A")


def test_parse_json_in_fence_with_bold_and_loose_values() -> None:
    reply = 'Here it is:\n```json\n{"answer": "True", "illegal_operation": "Operation c", "problematic_team": "**Team D**"}\n```'
    assert parse_nba_verdict(reply) == NbaVerdict(True, "C", "D")


def test_parse_json_false_with_nulls() -> None:
    assert parse_nba_verdict('{"answer": false, "illegal_operation": null, "problematic_team": "none"}') == NbaVerdict(
        False, None, None
    )


def test_parse_truncated_json_is_repaired() -> None:
    assert parse_nba_verdict(
        '{"answer": true, "illegal_operation": "A", "problematic_team": "B", "rationale": "Team B'
    ) == (NbaVerdict(True, "A", "B"))


def test_parse_falls_back_to_rulearena_text() -> None:
    reply = "Reasoning...\n**Answer: True. Illegal Operation: C. Problematic Team: B.**"
    assert parse_nba_verdict(reply) == NbaVerdict(True, "C", "B")
    assert parse_nba_verdict("so the final **Answer:** False") == NbaVerdict(False, None, None)


def test_parse_unreadable_reply() -> None:
    assert parse_nba_verdict("I am not sure.") == NbaVerdict(None)
    assert parse_nba_verdict('{"verdict": "illegal"}') == NbaVerdict(None)


def test_gold_from_record() -> None:
    record = {"answer": True, "illegal_operation": "A", "problematic_team": "K", "relevant_rules": []}
    assert NbaVerdict.from_record(record) == NbaVerdict(True, "A", "K")


def test_strict_correct_needs_all_three_parts_when_illegal() -> None:
    gold = NbaVerdict(True, "B", "A")
    assert strict_correct(NbaVerdict(True, "B", "A"), gold)
    assert not strict_correct(NbaVerdict(True, "B", "C"), gold)  # wrong team
    assert not strict_correct(NbaVerdict(True, "A", "A"), gold)  # wrong operation
    assert not strict_correct(NbaVerdict(False), gold)
    assert not strict_correct(NbaVerdict(None), gold)


def test_strict_correct_when_everything_is_legal_ignores_operation_and_team() -> None:
    # RuleArena has a legal record that still names an operation and a team.
    gold = {"answer": False, "illegal_operation": "C", "problematic_team": "C"}
    assert strict_correct('{"answer": false, "illegal_operation": null, "problematic_team": null}', gold)
    assert not strict_correct('{"answer": true, "illegal_operation": "C", "problematic_team": "C"}', gold)
    assert not strict_correct("no idea", gold)


def test_strict_correct_rejects_unreadable_gold() -> None:
    with pytest.raises(ValueError, match="no readable answer"):
        strict_correct(NbaVerdict(True, "A", "A"), {"answer": None})


def test_strict_accuracy_hand_checked() -> None:
    golds = [
        NbaVerdict(True, "A", "A"),
        NbaVerdict(True, "B", "E"),
        NbaVerdict(False),
        NbaVerdict(False),
    ]
    predictions: list[NbaVerdict | str] = [
        '{"answer": true, "illegal_operation": "A", "problematic_team": "A"}',  # right
        '{"answer": true, "illegal_operation": "B", "problematic_team": "A"}',  # wrong team
        "Answer: False",  # right
        '{"answer": true, "illegal_operation": "A", "problematic_team": "A"}',  # wrong answer
    ]
    assert strict_accuracy(predictions, golds) == pytest.approx(2 / 4)


def test_strict_accuracy_checks_lengths() -> None:
    with pytest.raises(ValueError, match="1 predictions for 2"):
        strict_accuracy(["Answer: False"], [NbaVerdict(False), NbaVerdict(False)])
    with pytest.raises(ValueError, match="undefined"):
        strict_accuracy([], [])
