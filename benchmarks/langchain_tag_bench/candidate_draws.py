"""Every label draw the benchmark compares, by name: the two the package ships and the candidates tried.

``stratified`` and ``uniform`` are :func:`langchain_tag.judging._label_draw.run_draw`; ``importance`` is SUPG's
(:mod:`langchain_tag_bench.importance_draw`) and ``adaptive`` BARGAIN's (:mod:`langchain_tag_bench.adaptive_draw`),
each with a bound that keeps the stated guarantee; ``importance-normal`` is SUPG's draw with its published,
asymptotic bound (a reference).

>>> run_candidate("importance", [0.1, 0.9], lambda picked: {i: i == 1 for i in picked}, budget=2).pairs
2
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from langchain_tag.judging._label_draw import DRAWS, run_draw
from langchain_tag.judging.guarantee import GuaranteedThresholds
from langchain_tag_bench.adaptive_draw import adaptive_cascade
from langchain_tag_bench.importance_draw import importance_cascade

__all__ = ["CANDIDATES", "run_candidate"]

_RUNNERS: dict[str, Callable[..., GuaranteedThresholds]] = {
    **{name: partial(run_draw, name) for name in DRAWS},
    "importance": importance_cascade,
    "adaptive": adaptive_cascade,
    "importance-normal": partial(importance_cascade, bound="normal"),
}
CANDIDATES: tuple[str, ...] = tuple(_RUNNERS)


def run_candidate(draw: str, *args: Any, **options: Any) -> GuaranteedThresholds:
    """The recall-only cascade of the draw named, called as :func:`~langchain_tag.judging._label_draw.run_draw`.

    Raises:
        ValueError: On an unknown draw.
    """
    if draw not in _RUNNERS:
        raise ValueError(f"unknown draw {draw!r}: use one of {', '.join(CANDIDATES)}")
    return _RUNNERS[draw](*args, **options)
