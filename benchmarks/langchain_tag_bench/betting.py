"""A test by betting that a mean lies below a bound: valid at any sample size and under optional stopping.

The candidate label draws of :mod:`langchain_tag_bench.importance_draw` and :mod:`langchain_tag_bench.adaptive_draw`
certify with it (Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting", 2023; the
without-replacement form from their "Confidence sequences for sampling without replacement", 2020). To reject
``H0: mean >= m`` for values in ``[0, 1]``, a gambler starts with 1 and, before each value ``x``, stakes a
fraction ``lam`` (chosen from the values before it only) on ``x`` being small: the capital becomes
``capital * (1 + lam * (m_t - x))``, with ``m_t`` the mean the next value has under the boundary null (``m`` when
values are drawn with replacement; for a draw without replacement of a population of ``N``, what is left of
``N * m`` over what is left of ``N``). Under the null the capital is a nonnegative supermartingale, so by Ville's
inequality it ever reaches ``1 / delta`` with probability at most ``delta``: the test rejects when it does.

>>> rejects_mean_at_least([0.0] * 40, 0.1, 0.1)
True
>>> rejects_mean_at_least([0.0] * 10, 0.1, 0.1)
False
>>> rejects_mean_at_least([0.0] * 10, 0.25, 0.1, population=20)  # 5 YES hidden among 20 pairs would show by now
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["rejects_mean_at_least"]

_CAP = 0.9
"""The largest share of the capital staked: one adverse value never ruins the gambler."""


def rejects_mean_at_least(values: Iterable[float], m: float, delta: float, *, population: int | None = None) -> bool:
    """Whether ``values`` (in ``[0, 1]``, in the order drawn) reject ``mean >= m`` at level ``delta``.

    Args:
        values: The values observed, in draw order.
        m: The bound on the mean the null claims is reached.
        delta: The test's level.
        population: For a draw without replacement, the population's size (the mean is the population's);
            ``None`` for independent draws with replacement.

    Returns:
        True when the capital reached ``1 / delta`` at some point (the null is rejected).
    """
    if m <= 0.0:
        return False
    if m >= 1.0 and population is None:
        return any(x < 1.0 for x in values)  # the null needs every value to be 1
    goal = math.log(1 / delta)
    log_capital = 0.0
    total = seen = 0.0
    square = 0.0
    left = None if population is None else population * m
    for x in values:
        if population is None:
            target = m
        else:
            remaining = population - seen
            if remaining <= 0 or left is None:
                return False
            target = (left - total) / remaining
            if target <= 0.0:
                return False  # under the boundary null no mass is left: the values so far already exceed it
            if target >= 1.0:
                if x < 1.0:
                    return True  # the null needs every value left to be 1
                seen += 1
                total += x
                continue
        # A plug-in of the values so far, shrunk toward m / 2 by a prior worth 1 / m values.
        prior = 1 / max(target, 1e-9)
        mean = (total + 0.5 * target * prior) / (seen + prior)
        variance = (square + 0.5 * target * prior) / (seen + prior) - mean**2
        gap = target - mean
        lam = 0.0 if gap <= 0 else min(gap / (max(variance, 0.0) + gap**2), _CAP / (1 - target))
        factor = 1 + lam * (target - x)
        if factor <= 0.0:
            return False
        log_capital += math.log(factor)
        if log_capital >= goal:
            return True
        seen += 1
        total += x
        square += x * x
    return False
