"""A label draw that certifies recall with few labels when the judge's YES are rare: a pilot, then the low scores.

The uniform draw of :mod:`langchain_tag.judging.guarantee` certifies recall from the judge-YES pairs among its
labels, so it needs about ``22 / p`` labels at a YES rate ``p`` (recall 0.9, ``delta = 0.1``): most of a job
whose judge says YES to a few per cent of its pairs. Yet to skip the lowest-scoring pairs the labels only have
to show that *those* pairs hide few judge YES, and that needs labels there, not YES. This draw puts them there:

1. **Pilot.** A uniform sample (15 % of the budget; half for a learned proxy, which is fitted on it) is
   labelled. From it the draw picks a *region*: the lowest-scoring share of the job whose cut the pilot
   suggests the test below will pass at (:meth:`StratifiedDraw.second`). A learned proxy is fitted on the
   pilot before the region is picked.
2. **Second stage.** Every unlabelled pair above the region's cut goes to the strong judge (it would in any
   outcome), and the rest of the budget is a uniform sample without replacement of the region's pairs
   outside the pilot.
3. **Certificate.** Let ``kept`` be the judge-YES pairs above the cut and the pilot's judge YES in the region
   (all judged, so ``kept`` is known, and it is fixed once the pilot is: the second stage cannot move it), and
   ``c = (1 - target) / target * kept``. For each candidate threshold ``t`` (the job's distinct scores in the
   region, ascending), the null ``H_t``: *the region's non-pilot pairs scoring below t hold more than c judge
   YES*. Given how many second-stage labels fall below ``t``, those labels are a uniform sample without
   replacement of those pairs, so the exact hypergeometric test rejects ``H_t`` when seeing so few YES has
   probability at most ``delta`` under ``c + 1`` YES (fewer pairs than ``c + 1`` reject it outright). The
   nulls are nested (a higher ``t`` holds more YES), so testing them in ascending order, each at ``delta``,
   and stopping at the first not rejected (*fixed-sequence* testing) rejects a true null with probability at
   most ``delta``. The threshold is the last ``t`` rejected; every unlabelled pair scoring at or above it is
   judged, the others are decided NO.

The guarantee: with probability at least ``1 - delta`` over the second-stage draw (whatever the pilot), the
pairs decided NO without the judge hold at most ``c`` judge YES, so the job keeps at least ``target`` of the
pairs the strong judge alone would answer YES (``kept / (kept + c) = target``). As with the uniform draw it is
agreement with the strong judge that is guaranteed, and the proxy scores must not have been fitted on the
second-stage labels (a learned proxy is fitted on the pilot's). It holds at any sample size; with no saving
possible it sends every unlabelled pair.

A recall target only: a precision target (deciding YES without the judge) needs the uniform draw.

Example:
    >>> scores = [i / 1000 for i in range(1000)]
    >>> truth = [i >= 950 for i in range(1000)]  # the judge says YES to the 50 highest-scoring pairs
    >>> rule = stratified_cascade(scores, lambda picked: {i: truth[i] for i in picked}, budget=200, seed=0)
    >>> rule.t_low, rule.labels_used, rule.strong_calls  # 268 of the 1,000 pairs decided NO without the judge
    (0.45, 200, 732)
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_tag.judging.guarantee import (
    GuaranteedThresholds,
    _check_unit,
    _finite_scores,
    guaranteed_thresholds,
    label_sample,
    settled_thresholds,
)
from langchain_tag.judging.proxy import fit_logistic

__all__ = ["DRAWS", "Draw", "StratifiedDraw", "hypergeometric_cdf", "run_draw", "stratified_cascade"]

Draw = Literal["stratified", "uniform"]
"""How a cascade job draws its labels: a pilot then the low scores (:class:`StratifiedDraw`), or uniformly."""
DRAWS: tuple[str, ...] = ("stratified", "uniform")

_CUTS = tuple(q / 20 for q in range(1, 17))
"""Shares of the job (lowest scores) a region may cover: 5 %, 10 %, ..., 80 %."""
_STEPS = (0.9,)
"""Where in the region, besides its cut, the test may stop (a share of the region's pairs)."""
_RISK = 2.0
"""The planner weighs a cut by its chance to pass raised to this power: a sure saving before a large one."""


def hypergeometric_cdf(x: int, population: int, successes: int, draws: int) -> float:
    """``P(X <= x)`` for ``X`` the successes in ``draws`` draws without replacement from ``population``.

    >>> round(hypergeometric_cdf(0, 10, 1, 5), 3)
    0.5
    """
    low = max(0, draws - (population - successes))
    high = min(draws, successes)
    if x < low:
        return 0.0
    if x >= high:
        return 1.0
    total = _log_comb(population, draws)
    return min(
        1.0,
        sum(
            math.exp(_log_comb(successes, k) + _log_comb(population - successes, draws - k) - total)
            for k in range(low, x + 1)
        ),
    )


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


@dataclass
class StratifiedDraw:
    """The draw's three steps over one job, each returning the pairs to judge next (see the module docstring).

    Attributes:
        pairs: Pairs of the job.
        budget: Labels to draw in all (pilot and second stage).
        target_recall: The recall of the strong judge's YES to guarantee, in ``(0, 1]``.
        delta: The chance, over the second-stage draw, that it does not hold, in ``(0, 1)``.
        seed: Seed of both draws (``None``: from the system).
        pilot_share: Share of the budget the pilot takes.
    """

    pairs: int
    budget: int
    target_recall: float = 0.9
    delta: float = 0.1
    seed: int | None = None
    pilot_share: float = 0.15
    _rng: random.Random = field(init=False, repr=False)
    _pilot: list[int] = field(init=False, default_factory=list)
    _second: list[int] = field(init=False, default_factory=list)
    _cut: float | None = field(init=False, default=None)
    _scores: list[float] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if self.pairs < 0 or self.budget < 0:
            raise ValueError(f"pairs and budget must be >= 0, got pairs={self.pairs}, budget={self.budget}")
        _check_unit("target_recall", self.target_recall, closed_top=True)
        _check_unit("delta", self.delta, closed_top=False)
        _check_unit("pilot_share", self.pilot_share, closed_top=True)
        self._rng = random.Random(self.seed)

    @property
    def cut(self) -> float | None:
        """The region's cut once :meth:`second` picked it: the pairs scoring below it are the region."""
        return self._cut

    def pilot(self) -> list[int]:
        """The pilot: a uniform sample without replacement, ascending (every pair when the budget covers the job)."""
        size = self.pairs if self.budget >= self.pairs else max(1, round(self.budget * self.pilot_share))
        self._pilot = sorted(self._rng.sample(range(self.pairs), min(size, self.pairs)))
        return list(self._pilot)

    def second(self, scores: Iterable[Any], pilot_labels: Mapping[int, bool]) -> tuple[list[int], list[int]]:
        """Pick the region from the pilot's labels; the second-stage labels, and the pairs above the region.

        Args:
            scores: Every pair's proxy score (a learned proxy fitted on the pilot's labels only).
            pilot_labels: The strong verdict of each pilot pair judged (a failed one left out).

        Returns:
            The second-stage labels and the unlabelled pairs above the region's cut (both ascending): the
            strong judge judges both.
        """
        self._scores = _finite_scores(scores)
        if len(self._scores) != self.pairs:
            raise ValueError(f"{len(self._scores)} scores for a job of {self.pairs} pairs")
        pilot = set(self._pilot)
        if len(pilot) >= self.pairs:
            return [], []
        self._cut = self._region(pilot_labels)
        region = [i for i, s in enumerate(self._scores) if s < self._cut and i not in pilot]
        above = [i for i, s in enumerate(self._scores) if s >= self._cut and i not in pilot]
        left = max(0, self.budget - len(pilot))
        self._second = sorted(self._rng.sample(region, min(left, len(region))))
        return list(self._second), above

    def _region(self, pilot_labels: Mapping[int, bool]) -> float:
        """The cut of the region whose expected saving is largest, from the pilot's labels.

        A logistic curve of the pilot's verdicts on the score estimates each pair's chance of a judge YES; for
        each cut (5 %, 10 %, ..., 80 % of the job), that gives the judge YES expected above it (hence ``c``) and
        below it, the chance the test passes on the second stage's labels, and the pairs it would then skip.
        """
        ordered = sorted(self._scores)
        left = max(0, self.budget - len(self._pilot))
        chance = _yes_chance(self._scores, pilot_labels)
        cumulative = [0.0]
        for s in ordered:
            cumulative.append(cumulative[-1] + chance(s))
        best, best_gain = ordered[len(ordered) // 2], -1.0
        for share in _CUTS:
            cut = ordered[min(len(ordered) - 1, int(share * len(ordered)))]
            size = bisect.bisect_left(ordered, cut)
            if size <= left:
                continue
            below = cumulative[size]
            bound = _bound(self.target_recall, cumulative[-1] - below)
            gain = _pass_chance(below / size, size, bound, left, self.delta) ** _RISK * (size - left)
            if gain > best_gain:
                best, best_gain = cut, gain
        return best

    def certify(self, labels: Mapping[int, bool], sent: Mapping[int, bool]) -> GuaranteedThresholds:
        """The threshold the test reaches, and what the rule costs.

        Args:
            labels: The strong verdict of each pilot and second-stage pair judged (a failed one left out).
            sent: The strong verdict of each unlabelled pair above the region's cut (a failed one counted NO).

        Returns:
            The rule (``t_low``; ``t_high`` is ``None``); ``sent`` counts every unlabelled pair at or above
            ``t_low``, those above the cut included, and ``strong_calls`` the labels and those.
        """
        scores = self._scores
        pilot = set(self._pilot)
        cut = self._cut
        t_low: float | None = None
        if cut is not None:
            # Fixed once the pilot is: the judge's YES above the cut and the pilot's YES (all kept).
            kept = sum(1 for v in sent.values() if v) + sum(1 for i in self._pilot if labels.get(i))
            second = {i: bool(labels[i]) for i in self._second if i in labels}
            t_low = _fixed_sequence(scores, pilot, cut, second, _bound(self.target_recall, kept), self.delta)
        return _rule(scores, labels, t_low, self.target_recall, self.delta, len(self._pilot) + len(self._second))


def _yes_chance(scores: Sequence[float], labels: Mapping[int, bool]) -> Callable[[float], float]:
    """A pair's chance of a judge YES by its score: a logistic curve fitted on the labels (flat with one class)."""
    verdicts = [bool(v) for v in labels.values()]
    rate = (sum(verdicts) + 0.5) / (len(verdicts) + 1)
    if len(set(verdicts)) < 2:
        return lambda _: rate
    curve = fit_logistic([[scores[i]] for i in labels], verdicts)
    return lambda s: curve.score([s])


def _pass_chance(rate: float, size: int, bound: float, draws: int, delta: float) -> float:
    """The chance the test passes on ``draws`` labels of ``size`` pairs holding judge YES at ``rate``."""
    draws = min(draws, size)
    most = -1
    while most < draws and _passes(most + 1, size, bound, draws, delta):
        most += 1
    if most < 0:
        return 0.0
    if most >= draws:
        return 1.0
    rate = min(max(rate, 0.0), 1.0)
    if rate <= 0.0:
        return 1.0
    if rate >= 1.0:
        return 0.0
    return sum(
        math.exp(_log_comb(draws, k) + k * math.log(rate) + (draws - k) * math.log1p(-rate)) for k in range(most + 1)
    )


def _bound(target: float, kept: float) -> float:
    """``c``: the most judge YES the pairs decided NO may hold for ``kept / (kept + c) >= target``."""
    return (1 - target) / target * kept


def _passes(yes: int, size: int, bound: float, draws: int, delta: float) -> bool:
    """Whether ``yes`` judge YES among ``draws`` labels of ``size`` pairs reject "more than ``bound`` YES"."""
    worst = math.floor(bound) + 1
    if size < worst:
        return True
    if yes > draws:
        return False
    return hypergeometric_cdf(yes, size, worst, min(draws, size)) <= delta


def _fixed_sequence(
    scores: list[float], pilot: set[int], cut: float, second: Mapping[int, bool], bound: float, delta: float
) -> float | None:
    """The last candidate threshold (ascending) whose null is rejected (``None``: the lowest is not)."""
    region = sorted((scores[i], i) for i in range(len(scores)) if scores[i] < cut and i not in pilot)
    chosen: float | None = None
    size = draws = yes = 0
    k = 0
    steps = [region[int(q * len(region))][0] for q in _STEPS if int(q * len(region)) < len(region)]
    candidates = sorted({*steps, cut})
    for t in candidates:
        while k < len(region) and region[k][0] < t:
            index = region[k][1]
            size += 1
            if index in second:
                draws += 1
                yes += second[index]
            k += 1
        if not _passes(yes, size, bound, draws, delta):
            break
        chosen = t
    return None if chosen is None or chosen <= min(scores) else chosen


def _rule(
    scores: Sequence[float], labels: Mapping[int, bool], t_low: float | None, target: float, delta: float, drawn: int
) -> GuaranteedThresholds:
    return settled_thresholds(
        scores, labels, t_low=t_low, t_high=None, target_recall=target, target_precision=None, delta=delta, drawn=drawn
    )


def stratified_cascade(
    scores: Iterable[Any],
    oracle: Callable[[list[int]], Mapping[int, bool]],
    *,
    budget: int,
    target_recall: float = 0.9,
    delta: float = 0.1,
    seed: int | None = None,
) -> GuaranteedThresholds:
    """The stratified draw run end to end on fixed scores, asking ``oracle`` for the strong verdicts it needs.

    Args:
        scores: Every pair's proxy score (not fitted on any label).
        oracle: The strong verdicts of the pairs given (the pilot, then the second stage and the pairs above
            the region's cut).
        budget: Labels to draw in all.
        target_recall: The recall to guarantee.
        delta: The failure probability.
        seed: Seed of the draws.

    Returns:
        The rule: unlabelled pairs below ``t_low`` decided NO, the rest judged (``sent``).
    """
    values = _finite_scores(scores)
    draw = StratifiedDraw(len(values), budget, target_recall=target_recall, delta=delta, seed=seed)
    labels = dict(oracle(draw.pilot()))
    second, above = draw.second(values, labels)
    judged = oracle(second + above)
    labels.update({i: judged[i] for i in second if i in judged})
    return draw.certify(labels, {i: judged[i] for i in above if i in judged})


def run_draw(
    draw: Draw,
    scores: Iterable[Any],
    oracle: Callable[[list[int]], Mapping[int, bool]],
    *,
    budget: int,
    target_recall: float = 0.9,
    delta: float = 0.1,
    seed: int | None = None,
) -> GuaranteedThresholds:
    """A recall-only cascade over fixed scores with the draw named, asking ``oracle`` for the labels it needs.

    ``"uniform"``: :func:`~langchain_tag.judging.guarantee.label_sample` and
    :func:`~langchain_tag.judging.guarantee.guaranteed_thresholds`; ``"stratified"``: :func:`stratified_cascade`.

    >>> run_draw("uniform", [0.1, 0.9], lambda picked: {i: i == 1 for i in picked}, budget=2).strong_calls
    2

    Raises:
        ValueError: On an unknown draw, or what the draw refuses.
    """
    if draw == "stratified":
        return stratified_cascade(scores, oracle, budget=budget, target_recall=target_recall, delta=delta, seed=seed)
    if draw != "uniform":
        raise ValueError(f"unknown draw {draw!r}: use one of {', '.join(DRAWS)}")
    values = _finite_scores(scores)
    labels = dict(oracle(label_sample(len(values), min(budget, len(values)), seed=seed)))
    return guaranteed_thresholds(values, labels, target_recall=target_recall, delta=delta)
