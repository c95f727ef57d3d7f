"""The one best-F1 threshold search: the cut of labelled scores that gives the highest F1.

The review page's suggested threshold (:func:`~langchain_tag.review._gold.score_gold`) and the ``"threshold"``
calibration (:func:`~langchain_tag.judging.calibration.model.fit_calibration`) both search here, so the same
scores and labels give them the same cut.

Example:
    >>> best = best_f1_cut([0.9, 0.6, 0.4, 0.2], [True, False, True, False])
    >>> best.threshold, best.f1, best.below
    (0.4, 0.8, 0.2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BestCut", "best_f1_cut"]


@dataclass(frozen=True)
class BestCut:
    """The cut with the highest F1.

    Attributes:
        threshold: The lowest score taken as YES (a pair matches when its score is at least this).
        f1: The F1 the cut gives.
        below: The highest score under the cut (``None``: no score is under it).
    """

    threshold: float
    f1: float
    below: float | None

    @property
    def midpoint(self) -> float:
        """A cut-off strictly between :attr:`threshold` and :attr:`below` (one under the threshold without one)."""
        return (self.threshold + (self.threshold - 1.0 if self.below is None else self.below)) / 2


def best_f1_cut(
    scores: Sequence[float],
    labels: Sequence[bool],
    *,
    unscored_positives: int = 0,
    floor: float | None = None,
) -> BestCut | None:
    """The cut (a score) whose ``score >= cut`` gives the highest F1 over the labelled scores.

    Each distinct score is tried as the cut, from the highest down; equal scores are never split. Ties keep the
    higher cut. F1s are compared exactly (as fractions), so the result does not hang on rounding.

    Args:
        scores: One score per pair.
        labels: Whether each pair really is a YES.
        unscored_positives: More YES pairs with no score (failed, or never scored): missed at every cut.
        floor: The lowest cut to try (``None``: every score).

    Returns:
        The best cut, or ``None`` when no score is at or above ``floor``.

    Raises:
        ValueError: When ``scores`` and ``labels`` differ in length.
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    ranked = sorted(zip(scores, labels, strict=True), key=lambda pair: -pair[0])
    positives = sum(1 for label in labels if label) + unscored_positives
    best: tuple[int, int, int] | None = None  # F1 = 2 * tp / total, at the index of the first score under the cut
    taken = tp = 0
    while taken < len(ranked):
        cut = ranked[taken][0]
        if floor is not None and cut < floor:
            break
        while taken < len(ranked) and ranked[taken][0] == cut:
            tp += ranked[taken][1]
            taken += 1
        total = taken + positives  # predicted + actual = 2 * tp + fp + fn
        if best is None or 2 * tp * max(best[1], 1) > best[0] * max(total, 1):
            best = (2 * tp, total, taken)
    if best is None:
        return None
    numerator, total, under = best
    return BestCut(
        threshold=ranked[under - 1][0],
        f1=numerator / total if total else 0.0,
        below=ranked[under][0] if under < len(ranked) else None,
    )
