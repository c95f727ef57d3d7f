"""A judge cascade: a cheap judge decides the clear pairs, a strong judge the uncertain ones.

:class:`CascadeJudge` puts two judges in a row (and
:class:`~langchain_tag.cascade_retriever.CascadeRetriever` two retrievers).
The cheap one (a small local model, or a local model in front of a remote
one) judges every (input, rule) pair. A pair whose calibrated score
lies outside the uncertain band ``[low, high]`` keeps the cheap judge's
verdict; the pairs inside it (and those the cheap judge could not score) are
judged again by the strong judge, for those rules only, and its verdicts
replace the cheap ones. Each returned document says which judge decided it
(metadata ``tag_judge``: ``"cheap"`` or ``"strong"``) and what share of the
input's pairs went to the strong judge (``tag_strong_share``).

The band comes from the user, or from development data through
:func:`choose_band`: the narrowest band (fewest pairs sent to the strong judge)
whose cascade agrees with the strong judge alone on at least a target share of
the development pairs.

:class:`~langchain_tag.cascade_retriever.CascadeRetriever`'s docstring shows the two in use.

A calibration that centres each input on its median over the rules judged
(``Calibration(centre_per_input=True)``, as the shipped 1.5B default does)
makes the strong judge's score of a pair depend on which other rules it judged
with it. The strong judge sees only the band's rules, so its verdicts there can
differ from the strong judge run on every rule; a warning says so. Give the
strong retriever a calibration without that step (for example one fitted with
``reference_inputs`` only) when its verdicts must match the strong judge alone.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.callbacks import Callbacks

from langchain_tag.judging._pairs import PairRequest
from langchain_tag.judging.judge import Judge
from langchain_tag.judging.prompts import JudgePrompt
from langchain_tag.judging.results import Judgment, MatchResult
from langchain_tag.judging.settings import JudgeSettings
from langchain_tag.ranges import THRESHOLD
from langchain_tag.rules import Rule

__all__ = [
    "CHEAP",
    "JUDGE_KEY",
    "STRONG",
    "STRONG_SHARE_KEY",
    "Band",
    "CascadeJudge",
    "CascadeResult",
    "Route",
    "cascade_decisions",
    "choose_band",
]

Route = Literal["cheap", "strong"]
"""Which judge decided a pair."""

CHEAP: Route = "cheap"
STRONG: Route = "strong"

JUDGE_KEY = "tag_judge"
"""Document metadata key: the judge that decided the rule (``"cheap"`` or ``"strong"``)."""
STRONG_SHARE_KEY = "tag_strong_share"
"""Document metadata key: the share of the input's pairs sent to the strong judge."""


# --------------------------------------------------------------------------
# Choosing the band on development data.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Band:
    """An uncertain band of the cheap judge's calibrated score, and how it did on the data it was chosen on.

    Attributes:
        low: Lowest score sent to the strong judge.
        high: Highest score sent to the strong judge.
        agreement: Share of the pairs on which the cascade's decision equals the strong judge's.
        strong_share: Share of the pairs sent to the strong judge.
        pairs: Pairs it was chosen on.
    """

    low: float
    high: float
    agreement: float
    strong_share: float
    pairs: int

    def contains(self, score: float | None) -> bool:
        """Whether a pair with this cheap score goes to the strong judge (an unscored pair always does)."""
        return score is None or self.low <= score <= self.high


def cascade_decisions(
    cheap_scores: Iterable[float | None] | Iterable[Any],
    strong_verdicts: Iterable[bool] | Iterable[Any],
    *,
    threshold: float,
    low: float,
    high: float,
) -> tuple[list[bool], list[bool]]:
    """The cascade's decisions over recorded pairs, and which pairs went to the strong judge.

    A pair whose cheap score lies in ``[low, high]`` (or is ``None``: not scored) takes the strong verdict; any
    other pair is decided by the cheap judge: YES when its score reaches ``threshold``.

    Args:
        cheap_scores: The cheap judge's calibrated score per pair (a list, a numpy array, a pandas Series;
            ``None`` or NaN: not scored).
        strong_verdicts: The strong judge's decision per pair, in the same order.
        threshold: The cheap judge's decision threshold.
        low: The band's lower bound.
        high: The band's upper bound.

    Returns:
        ``(decisions, sent)``: the cascade's decision per pair, and whether each pair went to the strong judge.

    Raises:
        ValueError: When the two sequences differ in length, or ``low > high``.
    """
    cheap_scores, strong_verdicts = _paired(cheap_scores, strong_verdicts)
    if low > high:
        raise ValueError(f"the band's low bound {low} is above its high bound {high}")
    sent = [s is None or low <= s <= high for s in cheap_scores]
    decisions = [
        bool(v) if go else (s is not None and s >= threshold)
        for s, v, go in zip(cheap_scores, strong_verdicts, sent, strict=True)
    ]
    return decisions, sent


def _paired(cheap_scores: Iterable[Any], strong_verdicts: Iterable[Any]) -> tuple[list[float | None], list[bool]]:
    """The scores as floats (``None`` for an unscored pair: ``None`` or NaN) and the verdicts as bools, paired.

    Any iterable works (a list, a numpy array, a pandas Series); nothing of numpy or pandas is imported.
    """
    scores = [None if s is None or (f := float(s)) != f else f for s in cheap_scores]
    verdicts = [bool(v) for v in strong_verdicts]
    if len(scores) != len(verdicts):
        raise ValueError(f"cheap_scores and strong_verdicts must be paired: got {len(scores)} and {len(verdicts)}")
    return scores, verdicts


def choose_band(
    cheap_scores: Iterable[float | None] | Iterable[Any],
    strong_verdicts: Iterable[bool] | Iterable[Any],
    *,
    threshold: float,
    target_agreement: float = 0.95,
) -> Band:
    """The narrowest uncertain band around the cheap threshold that agrees with the strong judge often enough.

    The rule: over the development pairs, every band ``[low, high]`` with ``low <= threshold <= high`` is a
    candidate, its bounds set midway between neighbouring development scores (0 and 1 at the ends). A band's
    agreement is the share of pairs on which the cascade's decision (:func:`cascade_decisions`) equals the strong
    verdict: every pair inside it agrees by construction, a pair outside agrees when the cheap decision does. The
    band chosen has at least ``target_agreement``, the fewest pairs inside (the fewest strong calls), and among
    those the highest agreement, then the narrowest width. Unscored pairs (``None``) always go to the strong
    judge and count in its share. The band ``[0, 1]`` always reaches the target, so there is always an answer.

    Args:
        cheap_scores: The cheap judge's calibrated score per development pair (a list, a numpy array, a pandas
            Series; ``None`` or NaN: not scored).
        strong_verdicts: The strong judge's decision per pair, in the same order.
        threshold: The cheap judge's decision threshold (``retriever.judge.decision_threshold``).
        target_agreement: Least share of pairs on which the cascade must agree with the strong judge alone,
            in ``[0, 1]``.

    Returns:
        The band, with its development agreement and strong share.

    Raises:
        ValueError: On no pairs, unpaired inputs, or a target or threshold outside ``[0, 1]``.
    """
    cheap_scores, strong_verdicts = _paired(cheap_scores, strong_verdicts)
    if not cheap_scores:
        raise ValueError("choose_band needs at least one development pair")
    if not 0.0 <= target_agreement <= 1.0:
        raise ValueError(f"target_agreement must be within [0, 1], got {target_agreement}")
    THRESHOLD.check(threshold)
    n = len(cheap_scores)
    unscored = sum(1 for s in cheap_scores if s is None)
    scored = sorted((float(s), bool(v)) for s, v in zip(cheap_scores, strong_verdicts, strict=True) if s is not None)
    values = [s for s, _ in scored]
    # wrong[i]: scored pairs among the first i (by score) whose cheap decision disagrees with the strong verdict.
    wrong = [0]
    for s, v in scored:
        wrong.append(wrong[-1] + ((s >= threshold) != v))
    below = bisect.bisect_left(values, threshold)  # pairs strictly below the threshold
    at_or_below = bisect.bisect_right(values, threshold)
    # A band covers the sorted pairs [i, j) with i <= below and j >= at_or_below, so it always holds the threshold.
    # Pairs exactly at the threshold go into every band (their bounds could not be split from it).
    best: tuple[int, int, float] | None = None  # (inside, -disagreements, -width) to maximise
    chosen = (0, len(values))
    needed = target_agreement * n - 1e-9
    for i in range(below, -1, -1):
        low = _bound_below(values, i, threshold)
        for j in range(at_or_below, len(values) + 1):
            disagree = wrong[i] + (wrong[len(values)] - wrong[j])
            if n - disagree < needed:
                continue
            high = _bound_above(values, j, threshold)
            key = (-(j - i), -disagree, -(high - low))
            if best is None or key > best:
                best, chosen = key, (i, j)
            break  # a wider band for this i only sends more pairs
    i, j = chosen
    low, high = _bound_below(values, i, threshold), _bound_above(values, j, threshold)
    disagree = wrong[i] + (wrong[len(values)] - wrong[j])
    return Band(
        low=low,
        high=high,
        agreement=(n - disagree) / n,
        strong_share=(j - i + unscored) / n,
        pairs=n,
    )


def _bound_below(values: Sequence[float], i: int, threshold: float) -> float:
    """The low bound of a band starting at sorted pair ``i``: midway to the pair below, 0 with none below."""
    if i == 0:
        return 0.0
    top = values[i] if i < len(values) else threshold
    return (min(top, threshold) + values[i - 1]) / 2


def _bound_above(values: Sequence[float], j: int, threshold: float) -> float:
    """The high bound of a band ending before sorted pair ``j``: midway to that pair, 1 with none above."""
    if j == len(values):
        return 1.0
    bottom = values[j - 1] if j > 0 else threshold
    return (max(bottom, threshold) + values[j]) / 2


# --------------------------------------------------------------------------
# The judge.
# --------------------------------------------------------------------------
@dataclass
class CascadeResult:
    """One input through the cascade.

    Attributes:
        query: The input.
        result: The combined judgments, in the cheap retriever's rule order: the strong judgment for each pair
            the strong judge decided, the cheap one for the rest.
        cheap: The cheap retriever's result (every pair).
        strong: The strong judge's result on the pairs sent to it (``None`` when none were).
        routes: Rule id -> the judge whose verdict stands (``"cheap"`` or ``"strong"``).
        sent: Rule ids sent to the strong judge, in rule order. A pair whose strong judgment failed is in
            ``sent`` but, with ``fallback``, routed ``"cheap"``.
    """

    query: str
    result: MatchResult
    cheap: MatchResult
    strong: MatchResult | None = None
    routes: dict[str, Route] = field(default_factory=dict)
    sent: list[str] = field(default_factory=list)

    @property
    def judgments(self) -> list[Judgment]:
        """The combined judgments (``result.judgments``)."""
        return self.result.judgments

    @property
    def matched(self) -> list[Judgment]:
        """The combined YES judgments, highest score first (``result.matched``)."""
        return self.result.matched

    @property
    def failed(self) -> list[Judgment]:
        """Combined judgments that failed and count as NO (``result.failed``)."""
        return self.result.failed

    @property
    def strong_share(self) -> float:
        """Share of the input's pairs sent to the strong judge (0 with no pairs)."""
        pairs = len(self.cheap.judgments)
        return len(self.sent) / pairs if pairs else 0.0

    @property
    def cheap_calls(self) -> int:
        """Calls the cheap judge made."""
        return self.cheap.calls

    @property
    def strong_calls(self) -> int:
        """Calls the strong judge made."""
        return self.strong.calls if self.strong is not None else 0

    @property
    def calls(self) -> int:
        """Calls of both judges."""
        return self.cheap_calls + self.strong_calls


class CascadeJudge:
    """A judge made of two judges: the cheap one judges every pair, the strong one the pairs in the band.

    A pair whose cheap (calibrated) score lies outside ``[low, high]`` keeps the cheap verdict; the pairs inside
    it, and those the cheap judge could not score, are judged by ``strong`` (each judge with its own
    calibration, threshold, cache and concurrency), whose verdicts replace the cheap ones. It speaks the judge
    protocol (:meth:`judge`/:meth:`ajudge` give a :class:`~langchain_tag.judging.results.MatchResult`), so a
    retriever or the bulk job can run it; :meth:`route` also says which judge decided each pair.

    Args:
        cheap: The judge of every pair.
        strong: The judge of the band's pairs.
        low: Lowest cheap score sent to the strong judge.
        high: Highest cheap score sent to the strong judge.
        fallback: When a strong judgment fails, keep the cheap verdict for that pair instead of counting NO.
        strong_rules: The strong judge's own text of each rule, by rule id (default: the rule the cheap judge saw).

    Raises:
        ValueError: When ``low`` is above ``high`` or outside ``[0, 1]``.
    """

    def __init__(
        self,
        cheap: Judge,
        strong: Judge,
        low: float,
        high: float,
        *,
        fallback: bool = True,
        strong_rules: dict[str, Rule] | None = None,
    ) -> None:
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"the band [{low}, {high}] must lie within [0, 1] with its low bound first")
        self.cheap, self.strong, self.low, self.high = cheap, strong, low, high
        self.fallback = fallback
        self.strong_rules = strong_rules or {}

    @property
    def prompt(self) -> JudgePrompt:
        """The cheap judge's prompt (the one every pair is asked with)."""
        return self.cheap.prompt

    @property
    def settings(self) -> JudgeSettings:
        """The cheap judge's settings (its verdict cache tells which pairs of a job are already judged)."""
        return self.cheap.settings

    def requests_for(self, judgments: int) -> int:
        """Requests of the cheap judge for ``judgments`` judgments of one input (the strong one's come after)."""
        return self.cheap.requests_for(judgments)

    def requests(self, query: str, rules: Sequence[Rule]) -> list[PairRequest]:
        """The cheap judge's requests for ``query`` (every pair; the strong ones are known only after them)."""
        return self.cheap.requests(query, rules)

    def route(
        self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None, strong_callbacks: Callbacks = None
    ) -> CascadeResult:
        """Judge every rule with the cheap judge and the band's rules with the strong one.

        Args:
            query: The input.
            rules: The rules, as the cheap judge sees them.
            callbacks: Callbacks (or a callback manager) passed to both judges.
            strong_callbacks: The strong judge's own callbacks, when they differ from the cheap judge's.

        Returns:
            The combined result, with the route of every pair.
        """
        cheap = self.cheap.judge(query, rules, callbacks=callbacks)
        sent = self._to_strong(cheap, rules)
        strong = self.strong.judge(query, sent, callbacks=strong_callbacks or callbacks) if sent else None
        return self._combine(query, cheap, sent, strong)

    async def aroute(
        self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None, strong_callbacks: Callbacks = None
    ) -> CascadeResult:
        """Async twin of :meth:`route`."""
        cheap = await self.cheap.ajudge(query, rules, callbacks=callbacks)
        sent = self._to_strong(cheap, rules)
        strong = await self.strong.ajudge(query, sent, callbacks=strong_callbacks or callbacks) if sent else None
        return self._combine(query, cheap, sent, strong)

    def judge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """The combined judgments of ``query`` (:meth:`route`'s ``result``)."""
        return self.route(query, rules, callbacks=callbacks).result

    async def ajudge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """Async twin of :meth:`judge`."""
        return (await self.aroute(query, rules, callbacks=callbacks)).result

    def _to_strong(self, cheap: MatchResult, rules: Sequence[Rule]) -> list[Rule]:
        """The rules (as the strong judge knows them) whose cheap judgment lies in the band or has no score."""
        by_id = {r.rule_id: r for r in rules}
        return [
            self.strong_rules.get(j.rule_id, by_id[j.rule_id])
            for j in cheap.judgments
            if j.error is not None or j.score is None or self.low <= j.score <= self.high
        ]

    def _combine(self, query: str, cheap: MatchResult, sent: list[Rule], strong: MatchResult | None) -> CascadeResult:
        by_id = {j.rule_id: j for j in strong.judgments} if strong is not None else {}
        judgments: list[Judgment] = []
        routes: dict[str, Route] = {}
        for judgment in cheap.judgments:
            replacement = by_id.get(judgment.rule_id)
            if replacement is None or (replacement.error is not None and self.fallback):
                judgments.append(judgment)
                routes[judgment.rule_id] = CHEAP
            else:
                judgments.append(replacement)
                routes[judgment.rule_id] = STRONG
        combined = MatchResult(query=query, predicate=cheap.predicate, judgments=judgments)
        return CascadeResult(
            query=query, result=combined, cheap=cheap, strong=strong, routes=routes, sent=[r.rule_id for r in sent]
        )
