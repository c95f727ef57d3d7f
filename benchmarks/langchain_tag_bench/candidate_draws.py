"""Every label draw the benchmark compares, by name: the two the package ships and the two candidates tried.

``stratified`` and ``uniform`` are :func:`langchain_tag.judging._label_draw.run_draw`; ``importance`` is SUPG's
(:mod:`langchain_tag_bench.importance_draw`) and ``adaptive`` BARGAIN's (:mod:`langchain_tag_bench.adaptive_draw`),
each with a bound that keeps the stated guarantee.

>>> run_candidate("importance", [0.1, 0.9], lambda picked: {i: i == 1 for i in picked}, budget=2).pairs
2
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_tag.judging._label_draw import DRAWS, run_draw
from langchain_tag.judging.guarantee import GuaranteedThresholds
from langchain_tag_bench.adaptive_draw import adaptive_cascade
from langchain_tag_bench.importance_draw import importance_cascade

__all__ = ["CANDIDATES", "run_candidate"]

CANDIDATES: tuple[str, ...] = (*DRAWS, "importance", "adaptive", "importance-normal")
"""The draws by name; ``importance-normal`` is SUPG's draw with its published, asymptotic bound (a reference)."""


def run_candidate(
    draw: str,
    scores: Iterable[Any],
    oracle: Callable[[list[int]], Mapping[int, bool]],
    *,
    budget: int,
    target_recall: float = 0.9,
    delta: float = 0.1,
    seed: int | None = None,
) -> GuaranteedThresholds:
    """A recall-only cascade over fixed scores with the draw named (see the module docstring).

    Raises:
        ValueError: On an unknown draw.
    """
    options = {"budget": budget, "target_recall": target_recall, "delta": delta, "seed": seed}
    if draw in ("importance", "importance-normal"):
        bound = "normal" if draw == "importance-normal" else "betting"
        return importance_cascade(scores, oracle, bound=bound, **options)  # type: ignore[arg-type]
    if draw == "adaptive":
        return adaptive_cascade(scores, oracle, **options)  # type: ignore[arg-type]
    if draw not in DRAWS:
        raise ValueError(f"unknown draw {draw!r}: use one of {', '.join(CANDIDATES)}")
    return run_draw(draw, scores, oracle, **options)  # type: ignore[arg-type]
