"""The betting test: at the boundary of its null it rejects at most ``delta`` of the time, and it has power."""

from __future__ import annotations

import random

from langchain_tag_bench.betting import rejects_mean_at_least


def test_with_replacement_it_rejects_a_true_null_at_most_delta_of_the_time() -> None:
    rng = random.Random(0)
    rejected = sum(
        rejects_mean_at_least([float(rng.random() < 0.05) for _ in range(400)], 0.05, 0.1) for _ in range(400)
    )
    assert rejected <= 0.1 * 400


def test_without_replacement_it_rejects_a_true_null_at_most_delta_of_the_time() -> None:
    population = [1.0] * 11 + [0.0] * 989  # 11 YES among 1,000: the null "at least 11" holds with equality
    rejected = 0
    for seed in range(400):
        order = population[:]
        random.Random(seed).shuffle(order)
        rejected += rejects_mean_at_least(order[:600], 11 / 1000, 0.1, population=1000)
    assert rejected <= 0.1 * 400


def test_it_rejects_a_false_null_given_enough_values() -> None:
    population = [1.0] * 2 + [0.0] * 998  # 2 YES: "at least 11" is false
    order = population[:]
    random.Random(1).shuffle(order)
    assert rejects_mean_at_least(order[:600], 11 / 1000, 0.1, population=1000)
    assert not rejects_mean_at_least(order[:20], 11 / 1000, 0.1, population=1000)


def test_a_null_the_values_already_break_is_never_rejected_and_an_impossible_one_always_is() -> None:
    assert not rejects_mean_at_least([1.0] * 5 + [0.0] * 500, 3 / 1000, 0.1, population=1000)
    assert rejects_mean_at_least([0.0], 1.0, 0.1, population=10)
    assert rejects_mean_at_least([0.5], 1.0, 0.1)
    assert not rejects_mean_at_least([0.0] * 100, 0.0, 0.1)
