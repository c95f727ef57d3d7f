"""Log-odds helpers shared by the judging core and calibration."""

from __future__ import annotations

import math

__all__ = ["logit", "sigmoid"]

_EPS = 1e-4


def logit(p: float) -> float:
    """Log-odds of ``p``, clipped away from 0 and 1."""
    p = min(max(p, _EPS), 1 - _EPS)
    return math.log(p / (1 - p))


def sigmoid(x: float) -> float:
    """The inverse of :func:`logit`."""
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    z = math.exp(x)
    return z / (1 + z)
