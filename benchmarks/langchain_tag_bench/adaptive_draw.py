"""A candidate label draw: BARGAIN's adaptive sampling, labels drawn in batches until the certificate holds.

BARGAIN (Zeighami et al., 2025) samples adaptively and tests by betting, so it can stop as soon as its evidence
suffices. Its adaptive recall mode assumes the low-scoring pairs hold few YES (``beta > 0``, which its own code
says changes the guarantee); this draw keeps the job's stated guarantee instead, on the stratified draw's
structure (:mod:`langchain_tag.judging._label_draw`): the same pilot and region, every pair above the region's cut
judged (so ``kept`` and the bound ``c`` on the region's judge YES are known), and then the region's pairs are
labelled in a random order, 10 at a time, until the cut is certified or the budget is spent.

The certificate: for each candidate threshold ``t`` (the region's scores at 50 %, 75 % and 90 % of it, and the
cut), the null ``H_t``: *the region's non-pilot pairs below t hold more than c judge YES*, tested by betting
without replacement on the labels below ``t`` in draw order
(:func:`~langchain_tag_bench.betting.rejects_mean_at_least`). The test is valid at any stopping time, so looking
after every batch costs nothing; the nulls are nested, so the threshold is the last candidate (ascending) whose
null was rejected, with every lower one rejected too. With probability at least ``1 - delta`` the pairs decided
NO hold at most ``c`` judge YES, as for the stratified draw. What adaptivity buys: the labels not needed.

>>> scores = [i / 1000 for i in range(1000)]
>>> truth = [i >= 950 for i in range(1000)]
>>> rule = adaptive_cascade(scores, lambda picked: {i: truth[i] for i in picked}, budget=200, seed=0)
>>> rule.strong_calls <= 1000
True
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_tag.judging._label_draw import StratifiedDraw, _rule
from langchain_tag.judging.guarantee import GuaranteedThresholds, _finite_scores
from langchain_tag_bench.betting import rejects_mean_at_least

__all__ = ["adaptive_cascade"]

_BATCH = 10
"""Labels drawn between two looks."""
_STEPS = (0.5, 0.75, 0.9)
"""Where in the region, besides its cut, a threshold may fall (a share of the region's pairs)."""


def adaptive_cascade(
    scores: Iterable[Any],
    oracle: Callable[[list[int]], Mapping[int, bool]],
    *,
    budget: int,
    target_recall: float = 0.9,
    delta: float = 0.1,
    seed: int | None = None,
) -> GuaranteedThresholds:
    """The adaptive draw run end to end on fixed scores, asking ``oracle`` for the strong verdicts it needs.

    Args:
        scores: Every pair's proxy score (not fitted on any label).
        oracle: The strong verdicts of the pairs given.
        budget: Labels to draw at most (pilot and batches).
        target_recall: The recall to guarantee.
        delta: The failure probability.
        seed: Seed of the draws.

    Returns:
        The rule: unlabelled pairs below ``t_low`` decided NO, the rest judged.
    """
    values = _finite_scores(scores)
    draw = StratifiedDraw(len(values), budget, target_recall=target_recall, delta=delta, seed=seed)
    pilot = draw.pilot()
    labels = {i: bool(v) for i, v in oracle(pilot).items()}
    second, above = draw.second(values, labels)
    cut = draw.cut
    if cut is None:
        return _rule(values, labels, None, target_recall, delta, len(labels))
    judged = oracle(above)
    kept = sum(1 for i in above if judged.get(i)) + sum(1 for i in pilot if labels.get(i))
    most = math.floor((1 - target_recall) / target_recall * kept)
    pilot_set = set(pilot)
    region = sorted((values[i], i) for i in range(len(values)) if values[i] < cut and i not in pilot_set)
    candidates = sorted({*(region[int(q * len(region))][0] for q in _STEPS if region), cut})
    sizes = {t: sum(1 for s, _ in region if s < t) for t in candidates}
    order = [i for _, i in region]
    random.Random(None if seed is None else seed + 1).shuffle(order)
    order = order[: len(second)]  # the budget left after the pilot
    rejected: dict[float, bool] = {t: sizes[t] <= most for t in candidates}
    looked: list[int] = []
    for start in range(0, len(order), _BATCH):
        if all(rejected.values()):
            break
        batch = order[start : start + _BATCH]
        labels.update({i: bool(v) for i, v in oracle(batch).items()})
        looked.extend(i for i in batch if i in labels)
        for t in candidates:
            if not rejected[t]:
                seen = [1.0 if labels[i] else 0.0 for i in looked if values[i] < t]
                rejected[t] = rejects_mean_at_least(seen, (most + 1) / sizes[t], delta, population=sizes[t])
    t_low: float | None = None
    for t in candidates:
        if not rejected[t]:
            break
        t_low = t
    if t_low is not None and t_low <= min(values):
        t_low = None
    return _rule(values, labels, t_low, target_recall, delta, len(labels))
