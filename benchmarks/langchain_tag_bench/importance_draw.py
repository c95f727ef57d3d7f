"""A candidate label draw: SUPG's importance sampling, with a bound that holds at any sample size.

SUPG (Kang et al., VLDB 2020) draws its labels with replacement, each pair with a chance proportional to the
square root of its proxy score mixed with a uniform share (here 10 %), and reweights each label by
``1 / (N * q)``, so the positives a recall estimate needs come from fewer labels when they are rare. SUPG's own
bound is a normal approximation; this one keeps the job's stated guarantee at any size instead.

For a threshold ``t``, with ``B`` the judge YES below it, ``A`` those at or above it and ``c = (1 - target) /
target``, recall holds when ``B <= c * A``. Each label ``j`` gives ``Z = w_j * y_j * ([s_j < t] - c * [s_j >= t])``,
whose mean over the draw is ``(B - c * A) / N``. The null ``H_t: B > c * A`` (mean of ``Z`` above 0) is tested by
betting (:func:`~langchain_tag_bench.betting.rejects_mean_at_least` on ``Z`` scaled into ``[0, 1]`` by the
weights' bounds). The nulls are nested in ``t``, so they are tested in ascending order, each at ``delta``, and
the threshold is the last rejected (fixed-sequence testing): the pairs below it that were not labelled are
decided NO, the others judged.

``bound="normal"`` replaces the test with SUPG's own: the largest threshold whose recall estimate, from a lower
normal bound on ``A`` and an upper one on ``B`` (``delta / 2`` each), reaches the target. Its guarantee is
asymptotic: the benchmark runs it to show how often it misses the target on few YES, not as a candidate.

>>> scores = [i / 1000 for i in range(1000)]
>>> truth = [i >= 950 for i in range(1000)]
>>> rule = importance_cascade(scores, lambda picked: {i: truth[i] for i in picked}, budget=200, seed=0)
>>> rule.strong_calls <= 1000
True
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

from langchain_tag.judging._label_draw import _rule
from langchain_tag.judging.guarantee import GuaranteedThresholds, _finite_scores
from langchain_tag_bench.betting import rejects_mean_at_least

__all__ = ["importance_cascade"]

Bound = Literal["betting", "normal"]
"""``"betting"``: valid at any sample size (the default); ``"normal"``: SUPG's published normal approximation."""

_UNIFORM_SHARE = 0.1
"""The uniform share of each pair's chance to be drawn (SUPG's defensive mixture)."""
_CANDIDATES = tuple(q / 100 for q in range(2, 100, 2))
"""Candidate thresholds: the job's scores at these quantiles."""


def importance_cascade(
    scores: Iterable[Any],
    oracle: Callable[[list[int]], Mapping[int, bool]],
    *,
    budget: int,
    target_recall: float = 0.9,
    delta: float = 0.1,
    seed: int | None = None,
    bound: Bound = "betting",
) -> GuaranteedThresholds:
    """The importance draw run end to end on fixed scores, asking ``oracle`` for the strong verdicts it needs.

    Args:
        scores: Every pair's proxy score (higher: likelier a judge YES; not fitted on any label).
        oracle: The strong verdicts of the pairs given.
        budget: Draws with replacement (the labels paid for are the distinct pairs drawn).
        target_recall: The recall to guarantee.
        delta: The failure probability.
        seed: Seed of the draw.
        bound: The certificate (see the module docstring).

    Returns:
        The rule: unlabelled pairs below ``t_low`` decided NO, the rest judged.
    """
    values = _finite_scores(scores)
    n = len(values)
    if n == 0:
        return _rule(values, {}, None, target_recall, delta, 0)
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    roots = [math.sqrt((s - low) / span) for s in values]
    total = sum(roots) or 1.0
    chance = [(1 - _UNIFORM_SHARE) * r / total + _UNIFORM_SHARE / n for r in roots]
    drawn = random.Random(seed).choices(range(n), weights=chance, k=budget)
    labels = {i: bool(v) for i, v in oracle(sorted(set(drawn))).items()}
    drawn = [j for j in drawn if j in labels]  # a failed label is left out
    weight = [1 / (n * q) for q in chance]
    ordered = sorted(values)
    candidates = sorted({ordered[int(q * n)] for q in _CANDIDATES})
    certify = _betting if bound == "betting" else _normal
    sample = _Sample(values, weight, drawn, labels)
    t_low: float | None = None
    for t in candidates:
        if not certify(t, sample, target_recall, delta):
            break
        t_low = t
    if t_low is not None and t_low <= low:
        t_low = None
    return _rule(values, labels, t_low, target_recall, delta, len(labels))


@dataclass(frozen=True)
class _Sample:
    """The job's scores, each pair's weight ``1 / (N * q)``, the draws (with repeats) and their labels."""

    values: list[float]
    weight: list[float]
    drawn: list[int]
    labels: Mapping[int, bool]


def _betting(t: float, sample: _Sample, target: float, delta: float) -> bool:
    """Whether the betting test rejects ``B > c * A`` at ``t``."""
    values, weight = sample.values, sample.weight
    c = (1 - target) / target
    below = max((weight[i] for i in range(len(values)) if values[i] < t), default=0.0)
    above = c * max((weight[i] for i in range(len(values)) if values[i] >= t), default=0.0)
    if below + above <= 0:
        return False
    z = [weight[j] * (1.0 if values[j] < t else -c) if sample.labels[j] else 0.0 for j in sample.drawn]
    return rejects_mean_at_least([(v + above) / (below + above) for v in z], above / (below + above), delta)


def _normal(t: float, sample: _Sample, target: float, delta: float) -> bool:
    """SUPG's test: the recall from a lower normal bound on ``A`` and an upper one on ``B`` reaches the target."""
    if not sample.drawn:
        return False
    z = NormalDist().inv_cdf(1 - delta / 2)
    yes = [sample.labels[j] for j in sample.drawn]
    ups = [sample.weight[j] if y and sample.values[j] >= t else 0.0 for j, y in zip(sample.drawn, yes, strict=True)]
    downs = [sample.weight[j] if y and sample.values[j] < t else 0.0 for j, y in zip(sample.drawn, yes, strict=True)]
    a_low = _mean(ups) - z * _error(ups)
    b_high = _mean(downs) + z * _error(downs)
    return a_low > 0 and a_low / (a_low + b_high) >= target


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _error(xs: list[float]) -> float:
    if len(xs) < 2:
        return float("inf")
    mean = _mean(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs))
