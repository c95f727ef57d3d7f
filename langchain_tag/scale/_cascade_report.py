"""What a cascade job is asked for (:class:`CascadeTargets`) and what it did and guarantees (:class:`CascadeReport`).

When the proxy decided no pair, the report says why and, from the judge-YES labels the recall target needs
(:func:`needed_positive_labels`), the label budget likely to draw them (:func:`likely_budget`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from langchain_tag.judging._label_draw import DRAWS, Draw
from langchain_tag.judging.guarantee import min_positive_labels
from langchain_tag.judging.proxy import ProxyKind

__all__ = ["CascadeReport", "CascadeTargets", "likely_budget", "needed_positive_labels"]


@dataclass(frozen=True)
class CascadeTargets:
    """What the user states of a cascade job.

    Attributes:
        target_recall: Least share of the strong judge's YES kept, in ``(0, 1]`` (``None``: no pair is decided
            NO without the strong judge).
        target_precision: Least share of the cascade's YES that are strong YES (``None``: no pair is decided YES
            without the strong judge).
        delta: Probability, over the label draw, that a stated target does not hold.
        label_budget: Pairs drawn for the strong judge to label (all of them when the job is smaller).
        proxy: ``"cosine"`` (the embeddings' cosine, nothing fitted) or ``"learned"`` (a logistic regression
            fitted on half the labels).
        seed: Seed of the label draw; a rerun with the same seed draws the same pairs.
        draw: ``"stratified"`` (default: a uniform pilot, then the rest of the budget among the lowest-scoring
            pairs, :mod:`langchain_tag.judging._label_draw`; it certifies recall from labels that show the skipped
            pairs hide few judge YES, so it needs no judge YES among them) or ``"uniform"`` (every label drawn
            uniformly; it needs about 22 judge YES among the labels for recall 0.9 at ``delta`` 0.1). With a
            precision target the job draws uniformly, as only that draw can show precision.
    """

    target_recall: float | None = 0.95
    target_precision: float | None = None
    delta: float = 0.05
    label_budget: int = 400
    proxy: ProxyKind = "cosine"
    seed: int = 0
    draw: Draw = "stratified"

    def __post_init__(self) -> None:
        if self.target_recall is None and self.target_precision is None:
            raise ValueError("a cascade needs target_recall, target_precision or both")
        if self.label_budget < 1:
            raise ValueError(f"label_budget must be >= 1, got {self.label_budget}")
        if self.proxy not in ("cosine", "learned"):
            raise ValueError(f"unknown proxy {self.proxy!r}: use 'cosine' or 'learned'")
        if self.draw not in DRAWS:
            raise ValueError(f"unknown draw {self.draw!r}: use one of {', '.join(DRAWS)}")

    @property
    def drawn(self) -> Draw:
        """The draw the job makes: the one asked for, but uniform when a precision target is given."""
        return "uniform" if self.target_precision is not None or self.target_recall is None else self.draw


@dataclass(frozen=True)
class CascadeReport:
    """What a cascade job did, and what it guarantees.

    Attributes:
        pairs: Pairs in the job.
        labels: Pairs the strong judge labelled (the draw, less those whose judgment failed).
        positive_labels: Of those, how many it said YES to.
        sent: Unlabelled pairs sent to the strong judge.
        strong_judgments: Pairs the strong judge judged (``labels`` + ``sent`` + failures).
        proxy_no: Pairs decided NO by the proxy.
        proxy_yes: Pairs decided YES by the proxy.
        failed: Pairs whose strong judgment failed (counted NO).
        t_low: Proxy score below which an unlabelled pair is NO (``None``: none is).
        t_high: Proxy score at or above which an unlabelled pair is YES (``None``: none is).
        target_recall: The stated recall target.
        target_precision: The stated precision target.
        delta: The stated failure probability.
        observed_recall: The cascade's recall of the strong YES on the labels the thresholds were chosen on.
        observed_precision: Its precision there.
        proxy: The proxy used (``"cosine"``, ``"learned"``; ``"cosine (learned: one class)"`` when the
            labels held one class only).
        seed: The label draw's seed.
        needed_positive_labels: Judge-YES labels the recall target needs at the least, on the labels the
            thresholds are tested on (all of them; half with a learned proxy), all ranked above the threshold
            (``None``: no recall target, or one of 1, which no sample can show).
        suggested_label_budget: When the proxy decided nothing for want of judge-YES labels, the label budget
            likely (90 %) to draw the ones needed at the YES rate observed on the labels (``None`` otherwise).
    """

    pairs: int
    labels: int
    positive_labels: int
    sent: int
    strong_judgments: int
    proxy_no: int
    proxy_yes: int
    failed: int
    t_low: float | None
    t_high: float | None
    target_recall: float | None
    target_precision: float | None
    delta: float
    observed_recall: float | None
    observed_precision: float | None
    proxy: str
    seed: int
    needed_positive_labels: int | None = None
    suggested_label_budget: int | None = None
    draw: str = "uniform"

    @property
    def strong_share(self) -> float:
        """Share of the job's pairs the strong judge judged."""
        return self.strong_judgments / self.pairs if self.pairs else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (with ``strong_share``)."""
        return {**asdict(self), "strong_share": self.strong_share}

    def summary(self) -> str:
        """One line for a terminal."""
        targets = ", ".join(
            f"{name} >= {value:g}"
            for name, value in (("recall", self.target_recall), ("precision", self.target_precision))
            if value is not None
        )
        seen = ", ".join(
            f"{name} {value:.3f}"
            for name, value in (("recall", self.observed_recall), ("precision", self.observed_precision))
            if value is not None
        )
        line = (
            f"cascade ({self.proxy} proxy): {self.strong_judgments} of {self.pairs} pairs to the strong judge "
            f"({self.strong_share:.1%}: {self.labels} labels of a {self.draw} draw, {self.positive_labels} of them "
            f"judge YES, {self.sent} sent), {self.proxy_no} NO and "
            f"{self.proxy_yes} YES by the proxy; thresholds low={_fmt(self.t_low)} high={_fmt(self.t_high)}; "
            f"{targets} with probability >= {1 - self.delta:g} (measured against the judge's YES, not against "
            f"the truth); on the labels: {seen or 'no strong YES'}"
        )
        why = self.why_nothing_saved()
        return f"{line}. {why[0].upper()}{why[1:]}" if why else line

    def why_nothing_saved(self) -> str | None:
        """Why the proxy decided no pair and what would let it, or ``None`` when it decided some (or none were left).

        With too few judge-YES labels to show the recall target, it says how many the target needs and the label
        budget likely to draw them at the observed YES rate; with enough, that the proxy ranks some of them too low.
        """
        if self.proxy_no or self.proxy_yes or self.pairs <= self.labels:
            return None
        saved = "the proxy decided no pair, so the cascade saved nothing"
        if self.target_recall is None:
            return (
                f"{saved}: no proxy score above which enough labelled pairs are judge YES to show precision >= "
                f"{self.target_precision:g}; a larger --label-budget or a lower --target-precision would"
            )
        if self.target_recall >= 1:
            return f"{saved}: a recall target of 1 cannot be shown from a sample; give --target-recall below 1"
        if self.draw == "stratified":
            return (
                f"{saved}: the {self.labels} labels ({self.positive_labels} judge YES) could not show that the "
                f"lowest-scoring pairs hide at most {1 - self.target_recall:.0%} of the judge's YES with probability "
                f">= {1 - self.delta:g}; a larger --label-budget, or a proxy that ranks the judge's YES higher "
                "(--proxy learned with --cheap-model, or other --embeddings), would"
            )
        need = self.needed_positive_labels or 0
        tested = " on the half of the labels the thresholds are tested on" if self.proxy == "learned" else ""
        have = f"the {self.labels} labels hold {self.positive_labels} judge YES"
        target = f"showing recall >= {self.target_recall:g} with probability >= {1 - self.delta:g}"
        if self.positive_labels >= need * (2 if self.proxy == "learned" else 1):
            return (
                f"{saved}: {have}, enough for {target}, but the proxy scores some of them among the job's lowest, "
                "so no threshold clears pairs and keeps the target; a proxy that ranks the judge's YES higher "
                "would (--proxy learned with --cheap-model, or other --embeddings)"
            )
        text = f"{saved}: {have}; {target} needs at least {need}{tested}, every one scored above the threshold"
        if self.suggested_label_budget is None:
            return f"{text}; with no judge YES seen, the YES rate is below 1 in {self.labels}: far more labels would"
        budget = self.suggested_label_budget
        text += (
            f"; at the observed YES rate ({self.positive_labels}/{self.labels}) --label-budget {budget} would "
            "likely (90 %) draw them"
        )
        if budget > self.pairs:
            text += (
                f", more pairs than the job has ({self.pairs}): the job is too small for this target; a lower "
                "--target-recall or a larger --delta needs fewer"
            )
        return text


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.4f}"


def needed_positive_labels(targets: CascadeTargets) -> int | None:
    """The fewest judge-YES labels the recall test can pass on (``None``: no recall target, or one of 1)."""
    recall = targets.target_recall
    if recall is None or recall >= 1:
        return None
    alpha = targets.delta / 2 if targets.target_precision is not None else targets.delta
    return min_positive_labels(recall, alpha)


def likely_budget(need: int, rate: float, chance: float = 0.9) -> int:
    """The fewest labels drawn at YES rate ``rate`` that hold at least ``need`` YES with probability ``chance``.

    >>> likely_budget(22, 0.075)
    373
    """
    low, high = need, need
    while _at_least(need, high, rate) < chance:
        low, high = high, high * 2
    while low < high:  # the chance grows with the budget: the first budget that reaches it
        middle = (low + high) // 2
        if _at_least(need, middle, rate) >= chance:
            high = middle
        else:
            low = middle + 1
    return high


def _at_least(need: int, draws: int, rate: float) -> float:
    """P(Binomial(draws, rate) >= need)."""
    if rate >= 1:
        return 1.0
    below = sum(
        math.exp(
            math.lgamma(draws + 1)
            - math.lgamma(k + 1)
            - math.lgamma(draws - k + 1)
            + k * math.log(rate)
            + (draws - k) * math.log1p(-rate)
        )
        for k in range(min(need, draws + 1))
    )
    return max(0.0, 1.0 - below)
