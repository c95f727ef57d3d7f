"""The two candidate label draws (SUPG's importance sampling, BARGAIN's adaptive draw) keep the stated recall."""

from __future__ import annotations

import pytest

from langchain_tag_bench.candidate_draws import CANDIDATES, run_candidate
from langchain_tag_bench.cascade_draws import synthetic_job, trial


@pytest.mark.parametrize("draw", ["importance", "adaptive"])
def test_a_candidate_keeps_the_target_in_at_least_1_minus_delta_of_the_trials(draw: str) -> None:
    scores, truth = synthetic_job(0, 3.0, pairs=3000)
    runs = [trial(draw, scores, truth, seed, budget=400) for seed in range(60)]
    assert sum(recall >= 0.9 for _, recall in runs) >= 54
    assert all(0.0 <= saved < 1.0 for saved, _ in runs)


def test_the_adaptive_draw_stops_labelling_once_the_cut_is_certified() -> None:
    scores = [i / 2000 for i in range(2000)]
    truth = [i >= 1900 for i in range(2000)]  # every YES above the region: the cut certifies early
    asked: list[int] = []

    def oracle(picked: list[int]) -> dict[int, bool]:
        asked.extend(picked)
        return {i: truth[i] for i in picked}

    rule = run_candidate("adaptive", scores, oracle, budget=1500, seed=0)
    assert rule.t_low is not None and rule.labels_used < 1500
    assert rule.strong_calls == len(set(asked)) + sum(
        1 for i, s in enumerate(scores) if i not in set(asked) and rule.route(s) == "strong"
    )


def test_an_unknown_draw_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown draw 'supg': use one of " + ", ".join(CANDIDATES)):
        run_candidate("supg", [0.1], lambda picked: {}, budget=1)
