"""Cascade thresholds with a stated guarantee on the strong judge's recall or precision.

A cascade in the style of BARGAIN (Zeighami, Shankar, Parameswaran, "Cut Costs, Not Accuracy: LLM-Powered
Data Processing with Guarantees", SIGMOD 2026, arXiv:2409.02428) judges a job of (input, rule) pairs with a
cheap *proxy score* per pair and asks the strong judge only where the proxy cannot decide:

1. a *label budget* of pairs drawn uniformly at random, without replacement, from the job
   (:func:`label_sample`) is judged by the strong judge; those verdicts are real judgments and stand;
2. :func:`guaranteed_thresholds` picks, from those labels, ``t_low`` (an unlabelled pair scoring below it is
   decided NO without the strong judge) and, for a precision target, ``t_high`` (one scoring at or above it is
   decided YES); every other unlabelled pair goes to the strong judge.

The guarantee: with probability at least ``1 - delta`` over the draw of the labelled pairs, the cascade's
decisions over *all* pairs of the job (the labelled ones included) keep at least ``target_recall`` of the pairs
the strong judge alone would answer YES, and at least ``target_precision`` of the cascade's YES are YES of the
strong judge. Agreement with the strong judge is what is guaranteed, not accuracy against a gold standard.

Derivation (the bound BARGAIN uses in spirit, with a simpler fixed-size test in place of its betting
confidence sequences):

* Recall. Let ``r(t)`` be the share of the job's strong-YES pairs with proxy score ``>= t``. Given that the
  uniform sample holds ``m`` strong-YES pairs, those are a uniform sample without replacement of the job's
  strong-YES pairs, so the observed share ``r̂(t)`` obeys Hoeffding's relative-entropy (Chernoff) bound
  ``P(r̂(t) >= q) <= exp(-m KL(q || r(t)))`` for ``q >= r(t)`` (Hoeffding 1963, Theorem 1; it holds without
  replacement by his Theorem 4, Section 6). The null ``r(t) < target`` is rejected at level ``alpha`` when
  ``r̂(t) > target`` and ``m KL(r̂(t) || target) >= log(1 / alpha)``. The unlabelled pairs cleared NO score
  below ``t``, so the cascade's recall is at least ``r(t)``.
* Precision. The same test on the sampled pairs scoring ``>= t`` (a uniform sample without replacement of the
  job's pairs scoring ``>= t``, given their number) bounds ``p(t)``, the share of strong-YES among the job's
  pairs scoring ``>= t``; the cascade's precision is at least ``p(t)`` (every other YES is a strong YES).
* Many thresholds, one ``alpha``. The candidates are the job's distinct proxy scores, fixed before any label
  is seen, tested in a fixed order (recall: ascending; precision: descending, from the first score whose
  pairs would hold enough labels to ever pass), stopping at the first candidate not rejected. This
  *fixed-sequence* procedure keeps the chance of any false rejection at most ``alpha`` with no multiplicity
  correction (the first true null in the order must be rejected before any other can be), as in BARGAIN.
* Both targets: each is tested at ``delta / 2`` (union bound).

The test is valid at any sample size (it needs no asymptotics); with few strong-YES pairs in the sample it
rejects nothing and the cascade sends every unlabelled pair to the strong judge: with ``r̂ = 1`` it needs
``m >= log(1/delta) / log(1/target)`` strong-YES labels (22 at recall 0.9 and ``delta = 0.1``).

The scores must not have been fitted on the labels the thresholds are chosen from: fit a learned proxy
(:mod:`langchain_tag.judging.proxy`) on one part of the label budget and pass the other part here. A proxy
that is a fixed function of cheap features (cosine, a cheap judge's P(YES)) can use the whole budget.

Why not the ``bargain`` package: it seeds numpy's global random generator (``np.random.seed``) in every
constructor, which a library must not do to its callers; it pulls in numpy, pandas and openai, none of them
dependencies of this package's core; it calls the oracle itself, row by row; and it asserts rather than
reports bad input. The test here needs the standard library only; its sampling takes its own
:class:`random.Random`.

Example:
    .. code-block:: python

        picked = label_sample(len(scores), budget=400, seed=0)
        labels = {i: strong_verdict(i) for i in picked}
        rule = guaranteed_thresholds(scores, labels, target_recall=0.95, delta=0.05)
        routes = [rule.route(s) if i not in labels else "labelled" for i, s in enumerate(scores)]
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "GuaranteedThresholds",
    "Route",
    "guaranteed_thresholds",
    "label_sample",
    "min_positive_labels",
    "settled_thresholds",
]

Route = Literal["yes", "no", "strong"]
"""What the rule does with an unlabelled pair: decide YES, decide NO, or send it to the strong judge."""


@dataclass(frozen=True)
class GuaranteedThresholds:
    """Thresholds on a proxy score, the target they guarantee, and what they cost on one job.

    An unlabelled pair scoring ``>= t_high`` is decided YES; else one scoring ``< t_low`` is decided NO; every
    other unlabelled pair goes to the strong judge. A labelled pair keeps the strong verdict it has.

    Attributes:
        t_low: Scores below it are decided NO (``None``: no pair is).
        t_high: Scores at or above it are decided YES (``None``: no pair is).
        target_recall: The recall of the strong judge's YES guaranteed (``None``: none stated).
        target_precision: The precision against the strong judge's YES guaranteed (``None``: none stated).
        delta: The chance, over the draw of the labels, that a stated target does not hold.
        labels_used: Strong-judge labels the thresholds were chosen from.
        positive_labels: Those labels that are YES.
        pairs: Pairs of the job.
        sent: Unlabelled pairs the rule sends to the strong judge.
        strong_share: Share of the job's pairs sent to the strong judge beyond the labels (``sent / pairs``).
        strong_calls: Strong judgments the job needs in all: the labels and the pairs sent.
        observed_recall: On the labelled pairs routed as if unlabelled (sent pairs taking their strong verdict),
            the share of strong YES kept (``None``: no YES label).
        observed_precision: Likewise, the share of the cascade's YES that are strong YES (``None``: no YES).
    """

    t_low: float | None
    t_high: float | None
    target_recall: float | None
    target_precision: float | None
    delta: float
    labels_used: int
    positive_labels: int
    pairs: int
    sent: int
    strong_share: float
    strong_calls: int
    observed_recall: float | None
    observed_precision: float | None

    def route(self, score: float) -> Route:
        """What the rule does with an unlabelled pair of this proxy score."""
        if self.t_high is not None and score >= self.t_high:
            return "yes"
        if self.t_low is not None and score < self.t_low:
            return "no"
        return "strong"


def min_positive_labels(target: float, delta: float) -> int:
    """The fewest labels (strong-YES ones, for recall) a target can be shown on at ``delta``, all agreeing.

    Args:
        target: The recall or precision target, in ``(0, 1)``.
        delta: The failure probability the test runs at, in ``(0, 1)``.

    Returns:
        ``ceil(log(1/delta) / log(1/target))``.
    """
    _check_unit("target", target, closed_top=False)
    _check_unit("delta", delta, closed_top=False)
    return math.ceil(math.log(1 / delta) / math.log(1 / target) - 1e-12)


def label_sample(pairs: int, budget: int, *, seed: int | None = None) -> list[int]:
    """Indices of the pairs to label: a uniform sample without replacement, in ascending order.

    It draws from its own :class:`random.Random` (the global generators are left alone). A budget of at least
    the job labels every pair.

    Args:
        pairs: Pairs of the job.
        budget: Labels to draw.
        seed: Seed of the draw (``None``: from the system).

    Returns:
        ``min(budget, pairs)`` distinct indices in ``range(pairs)``.

    Raises:
        ValueError: On a negative count or budget.
    """
    if pairs < 0 or budget < 0:
        raise ValueError(f"pairs and budget must be >= 0, got pairs={pairs}, budget={budget}")
    return sorted(random.Random(seed).sample(range(pairs), min(budget, pairs)))


def guaranteed_thresholds(
    scores: Iterable[Any],
    labels: Mapping[int, bool],
    *,
    target_recall: float | None = 0.9,
    target_precision: float | None = None,
    delta: float = 0.1,
) -> GuaranteedThresholds:
    """Proxy thresholds such that the stated recall and/or precision hold with probability ``>= 1 - delta``.

    See the module's docstring for the rule, the guarantee and its derivation. The labelled pairs must be a
    uniform random sample without replacement of the job (:func:`label_sample`), drawn independently of how
    the scores were made.

    Args:
        scores: The proxy score of every pair of the job, higher meaning more likely YES (a list, a numpy array,
            a pandas Series: anything iterable of numbers).
        labels: The strong judge's verdict of each labelled pair, by index into ``scores``.
        target_recall: Least recall of the strong judge's YES, in ``(0, 1]`` (``None``: no recall target;
            no pair is decided NO without the strong judge).
        target_precision: Least precision against the strong judge's YES, in ``(0, 1]`` (``None``: no pair is
            decided YES without the strong judge).
        delta: Failure probability, in ``(0, 1)``; split evenly when both targets are given.

    Returns:
        The thresholds and what they cost.

    Raises:
        ValueError: With neither target, a target or ``delta`` out of range, a score that is not a finite
            number, or a label index outside the job.
    """
    if target_recall is None and target_precision is None:
        raise ValueError("give target_recall, target_precision or both")
    for name, target in (("target_recall", target_recall), ("target_precision", target_precision)):
        if target is not None:
            _check_unit(name, target, closed_top=True)
    _check_unit("delta", delta, closed_top=False)
    values = _finite_scores(scores)
    n = len(values)
    bad = [i for i in labels if not 0 <= i < n]
    if bad:
        raise ValueError(f"label index {bad[0]} is outside the job's {n} pairs")
    alpha = delta / 2 if target_recall is not None and target_precision is not None else delta
    grid = sorted(set(values))
    t_low = None if target_recall is None else _recall_threshold(values, labels, grid, target_recall, alpha)
    t_high = (
        None
        if target_precision is None
        else _precision_threshold(values, labels, grid, target_precision, alpha, len(labels) / n if n else 0.0)
    )
    return settled_thresholds(
        values, labels, t_low=t_low, t_high=t_high, target_recall=target_recall, target_precision=target_precision,
        delta=delta,
    )  # fmt: skip


def settled_thresholds(
    values: Sequence[float],
    labels: Mapping[int, bool],
    *,
    t_low: float | None,
    t_high: float | None,
    target_recall: float | None,
    target_precision: float | None,
    delta: float,
    drawn: int | None = None,
) -> GuaranteedThresholds:
    """The thresholds chosen from ``labels``, with what they cost and what they kept of the labelled pairs.

    Args:
        values: Every pair's proxy score.
        labels: The strong verdict of each labelled pair, by its index in ``values``.
        t_low: Below it, NO without the strong judge (``None``: none).
        t_high: Above it, YES without the strong judge (``None``: none).
        target_recall: The recall target certified, if any.
        target_precision: The precision target certified, if any.
        delta: The certificate's failure probability.
        drawn: The labels the draw paid for (default: ``len(labels)``).
    """
    n = len(values)
    rule = GuaranteedThresholds(
        t_low=t_low,
        t_high=t_high,
        target_recall=target_recall,
        target_precision=target_precision,
        delta=delta,
        labels_used=len(labels),
        positive_labels=sum(1 for v in labels.values() if v),
        pairs=n,
        sent=0,
        strong_share=0.0,
        strong_calls=0,
        observed_recall=None,
        observed_precision=None,
    )
    sent = sum(1 for i, s in enumerate(values) if i not in labels and rule.route(s) == "strong")
    yes = true_yes = 0
    for i, verdict in labels.items():
        route = rule.route(values[i])
        decided = bool(verdict) if route == "strong" else route == "yes"
        yes += decided
        true_yes += decided and bool(verdict)
    positives = rule.positive_labels
    return replace(
        rule,
        sent=sent,
        strong_share=sent / n if n else 0.0,
        strong_calls=(len(labels) if drawn is None else drawn) + sent,
        observed_recall=true_yes / positives if positives else None,
        observed_precision=true_yes / yes if yes else None,
    )


def _check_unit(name: str, value: float, *, closed_top: bool) -> None:
    ok = 0.0 < value <= 1.0 if closed_top else 0.0 < value < 1.0
    if not ok or isinstance(value, bool):
        span = "(0, 1]" if closed_top else "(0, 1)"
        raise ValueError(f"{name} must be within {span}, got {value!r}")


def _finite_scores(scores: Iterable[Any]) -> list[float]:
    values = [float(s) for s in scores]
    for i, s in enumerate(values):
        if not math.isfinite(s):
            raise ValueError(f"proxy score {i} is {s}: every pair needs a finite score")
    return values


def _kl(q: float, p: float) -> float:
    """Bernoulli relative entropy ``KL(q || p)``."""
    total = 0.0
    if q > 0:
        total += q * math.log(q / p)
    if q < 1:
        total += (1 - q) * math.log((1 - q) / (1 - p))
    return total


def _rejects(hits: int, count: int, target: float, alpha: float) -> bool:
    """Whether ``hits`` of ``count`` sampled reject the null that the population share is below ``target``."""
    if count == 0:
        return False
    share = hits / count
    if share <= target or target >= 1.0:
        return False
    return count * _kl(share, target) >= math.log(1 / alpha)


def _recall_threshold(
    values: list[float], labels: Mapping[int, bool], grid: list[float], target: float, alpha: float
) -> float | None:
    """The highest candidate reached by the ascending fixed-sequence recall test (``None``: none rejected)."""
    positives = sorted(values[i] for i, v in labels.items() if v)
    m = len(positives)
    chosen: float | None = None
    for t in grid:
        kept = m - bisect.bisect_left(positives, t)  # sampled YES scoring >= t
        if not _rejects(kept, m, target, alpha):
            break
        chosen = t
    # Clearing below the lowest score clears nothing: say so with None.
    return None if chosen is None or chosen <= grid[0] else chosen


def _precision_threshold(
    values: list[float],
    labels: Mapping[int, bool],
    grid: list[float],
    target: float,
    alpha: float,
    rate: float,
) -> float | None:
    """The lowest candidate reached by the descending fixed-sequence precision test (``None``: none rejected)."""
    if target >= 1.0 or not grid:
        return None
    need = min_positive_labels(target, alpha)
    job = sorted(values)
    sampled = sorted((values[i], bool(v)) for i, v in labels.items())
    sampled_scores = [s for s, _ in sampled]
    yes_suffix = [0] * (len(sampled) + 1)  # yes_suffix[k]: YES among sampled[k:]
    for k in range(len(sampled) - 1, -1, -1):
        yes_suffix[k] = yes_suffix[k + 1] + sampled[k][1]
    chosen: float | None = None
    for t in reversed(grid):
        # The order starts where the job's pairs at or above t would hold, in expectation, twice the labels
        # the test needs: it depends on the scores and the budget only, never on which pairs were drawn.
        if (len(job) - bisect.bisect_left(job, t)) * rate < 2 * need:
            continue
        k = bisect.bisect_left(sampled_scores, t)
        if not _rejects(yes_suffix[k], len(sampled) - k, target, alpha):
            break
        chosen = t
    return chosen
