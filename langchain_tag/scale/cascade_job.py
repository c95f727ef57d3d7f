"""The bulk job as a cascade with a stated guarantee: a cheap proxy decides the clear pairs, the strong judge the rest.

:func:`cascade_corpus` judges every (input, rule) pair of a job as BARGAIN's filter cascade does (see
:mod:`langchain_tag.judging.guarantee` for the bound and its derivation):

1. Every pair gets a *proxy score* (:mod:`langchain_tag.judging.proxy`): the cosine between the input's and
   the rule's embeddings (the packaged MiniLM from the command line), or, with ``proxy="learned"``, a logistic
   regression on that cosine and, where a cheap LLM judge is given, its log-odds of YES.
2. ``label_budget`` pairs drawn uniformly at random (seeded: a rerun draws the same ones) are judged by the
   strong judge. These are real judgments: cached, reused, and in the output.
3. From those labels, :func:`~langchain_tag.judging.guarantee.guaranteed_thresholds` picks ``t_low`` (an
   unlabelled pair scoring below it is NO without the strong judge) and, with a precision target, ``t_high``
   (one scoring at or above it is YES); every other pair is sent to the strong judge.

What is guaranteed: with probability at least ``1 - delta`` over the draw, the job's decisions keep at least
``target_recall`` of the pairs the strong judge alone would say YES to (and at least ``target_precision`` of
its YES are the strong judge's YES). Agreement with the strong judge, not accuracy against a gold standard.
A learned proxy is fitted on one half of the labels and the thresholds are chosen on the other, so its
scores do not depend on the labels the guarantee is tested on.

Resumable like any bulk job: the strong verdicts live in the retriever's verdict cache, the draw is seeded
and the proxy is a fixed function of them, so a rerun repeats no strong call and writes the same records.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_tag.errors import TagError
from langchain_tag.judging.guarantee import (
    GuaranteedThresholds,
    guaranteed_thresholds,
    label_sample,
    min_positive_labels,
)
from langchain_tag.judging.proxy import PairFeatures, ProxyKind, fit_proxy, log_odds_feature
from langchain_tag.judging.results import Judgment, MatchResult
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.bulk import capped_retriever, retriever_rules
from langchain_tag.scale.inputs import InputItem, as_input_items, encoding_error

__all__ = ["CascadeReport", "CascadeTargets", "acascade_corpus", "cascade_corpus", "choose_thresholds"]

Pair = tuple[int, int]
"""(input index, rule index)."""


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
    """

    target_recall: float | None = 0.95
    target_precision: float | None = None
    delta: float = 0.05
    label_budget: int = 400
    proxy: ProxyKind = "cosine"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.target_recall is None and self.target_precision is None:
            raise ValueError("a cascade needs target_recall, target_precision or both")
        if self.label_budget < 1:
            raise ValueError(f"label_budget must be >= 1, got {self.label_budget}")
        if self.proxy not in ("cosine", "learned"):
            raise ValueError(f"unknown proxy {self.proxy!r}: use 'cosine' or 'learned'")


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
            f"({self.strong_share:.1%}: {self.labels} labels, {self.sent} sent), {self.proxy_no} NO and "
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


@dataclass
class _Plan:
    """The job's pairs, their features, the draw, and the strong judgments got so far."""

    items: list[InputItem]
    rules: list[Rule]
    rows: list[list[float]]
    draw: list[int]
    strong: dict[int, Judgment] = field(default_factory=dict)

    def pair(self, index: int) -> Pair:
        return divmod(index, len(self.rules))

    def by_input(self, indices: Iterable[int]) -> dict[int, list[int]]:
        """Pair indices grouped by input, in input order."""
        grouped: dict[int, list[int]] = {}
        for index in sorted(indices):
            grouped.setdefault(index // len(self.rules), []).append(index)
        return grouped


# --------------------------------------------------------------------------- the job
def cascade_corpus(
    inputs: Iterable[InputItem | str],
    retriever: ApplicabilityRetriever,
    embeddings: Embeddings,
    *,
    targets: CascadeTargets | None = None,
    cheap: ApplicabilityRetriever | None = None,
    all_pairs: bool = False,
    max_concurrency: int | None = None,
) -> tuple[list[dict[str, Any]], CascadeReport]:
    """Judge every input against the retriever's rules as a cascade: one record per input, and the report.

    Args:
        inputs: The inputs (:class:`~langchain_tag.scale.inputs.InputItem` or texts).
        retriever: The strong judge: its rules, prompt, calibration, threshold and verdict cache.
        embeddings: The embeddings of the cosine feature (``langchain_tag.local.get_embeddings()``).
        targets: The targets, ``delta``, label budget, proxy and seed (default :class:`CascadeTargets`).
        cheap: A cheap LLM judge's retriever (same rules) whose P(YES) becomes a feature of a learned proxy:
            it judges every pair.
        all_pairs: Also give every pair's decision, who made it, its proxy score and the strong P(YES).
        max_concurrency: Most strong (or cheap) requests in flight at once; ``None``: the retriever's own.

    Returns:
        One JSON-ready record per input, in input order (``matched`` entries and, with ``all_pairs``, ``pairs``
        say which judge decided: ``"strong"`` or ``"proxy"``), and the job's report.

    Raises:
        ValueError: On bad targets, a retriever without rules, or a cheap judge of other rules.
    """
    plan, chosen = _start(inputs, retriever, embeddings, targets, cheap, max_concurrency)
    if cheap is not None:
        cheap_p = _judge_pairs(capped_retriever(cheap, max_concurrency), plan, range(len(plan.rows)))
        _add_cheap_feature(plan, cheap_p)
    plan.strong.update(_judge_pairs(capped_retriever(retriever, max_concurrency), plan, plan.draw))
    rule, proxy_name, scores = _thresholds(plan, chosen)
    sent = [i for i, s in enumerate(scores) if i not in plan.strong and rule.route(s) == "strong"]
    plan.strong.update(_judge_pairs(capped_retriever(retriever, max_concurrency), plan, sent))
    return _finish(plan, rule, proxy_name, scores, sent, chosen, all_pairs)


async def acascade_corpus(
    inputs: Iterable[InputItem | str],
    retriever: ApplicabilityRetriever,
    embeddings: Embeddings,
    *,
    targets: CascadeTargets | None = None,
    cheap: ApplicabilityRetriever | None = None,
    all_pairs: bool = False,
    max_concurrency: int | None = None,
) -> tuple[list[dict[str, Any]], CascadeReport]:
    """Async twin of :func:`cascade_corpus` (the embeddings are computed in a worker thread)."""
    plan, chosen = await asyncio.to_thread(_start, inputs, retriever, embeddings, targets, cheap, max_concurrency)
    if cheap is not None:
        cheap_p = await _ajudge_pairs(capped_retriever(cheap, max_concurrency), plan, range(len(plan.rows)))
        _add_cheap_feature(plan, cheap_p)
    plan.strong.update(await _ajudge_pairs(capped_retriever(retriever, max_concurrency), plan, plan.draw))
    rule, proxy_name, scores = _thresholds(plan, chosen)
    sent = [i for i, s in enumerate(scores) if i not in plan.strong and rule.route(s) == "strong"]
    plan.strong.update(await _ajudge_pairs(capped_retriever(retriever, max_concurrency), plan, sent))
    return _finish(plan, rule, proxy_name, scores, sent, chosen, all_pairs)


def _start(
    inputs: Iterable[InputItem | str],
    retriever: ApplicabilityRetriever,
    embeddings: Embeddings,
    targets: CascadeTargets | None,
    cheap: ApplicabilityRetriever | None,
    max_concurrency: int | None,
) -> tuple[_Plan, CascadeTargets]:
    targets = targets or CascadeTargets()
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
    items = as_input_items(inputs)
    rules = retriever_rules(retriever)
    if not rules:
        raise ValueError("a cascade job judges the retriever's rules: give it rules, not vector-store candidates")
    if cheap is not None and [r.rule_id for r in retriever_rules(cheap)] != [r.rule_id for r in rules]:
        raise ValueError("the cheap judge must judge the same rules, in the same order, as the strong one")
    features = PairFeatures(embeddings)
    rows = features.rows([(item.text, rule) for item in items for rule in rules])
    pairs = len(rows)
    draw = label_sample(pairs, min(targets.label_budget, pairs), seed=targets.seed) if pairs else []
    return _Plan(items=items, rules=rules, rows=rows, draw=draw), targets


def _add_cheap_feature(plan: _Plan, judged: Mapping[int, Judgment]) -> None:
    """Append the cheap judge's log-odds of YES to every row (0 where it gave no P(YES))."""
    for index, row in enumerate(plan.rows):
        found = judged.get(index)
        row.append(log_odds_feature(found.p_yes if found is not None and found.error is None else None))


def _thresholds(plan: _Plan, targets: CascadeTargets) -> tuple[GuaranteedThresholds, str, list[float]]:
    """The proxy's scores and the guaranteed thresholds, from the labels the strong judge gave the draw."""
    labels = {i: bool(plan.strong[i].applies) for i in plan.draw if i in plan.strong and plan.strong[i].error is None}
    return choose_thresholds(plan.rows, labels, targets)


def choose_thresholds(
    rows: Sequence[Sequence[float]], labels: Mapping[int, bool], targets: CascadeTargets
) -> tuple[GuaranteedThresholds, str, list[float]]:
    """The proxy's score of every pair and the guaranteed thresholds, as a cascade job chooses them.

    Args:
        rows: Every pair's feature row (first feature: the cosine).
        labels: The strong judge's verdict of each labelled pair, by pair index, in draw order (a learned
            proxy is fitted on the first half of them and the thresholds are chosen on the second).
        targets: The targets, ``delta`` and proxy kind.

    Returns:
        The thresholds, the proxy used (``"cosine (learned: one class)"`` when the fitting half holds one class
        only), and every pair's score.
    """
    labelled = list(labels)
    proxy_name: str = targets.proxy
    test = dict(labels)
    proxy = fit_proxy("cosine")
    if targets.proxy == "learned":
        fit, test_part = labelled[: len(labelled) // 2], labelled[len(labelled) // 2 :]
        if len({labels[i] for i in fit}) == 2:
            proxy = fit_proxy("learned", [rows[i] for i in fit], [labels[i] for i in fit])
            test = {i: labels[i] for i in test_part}
        else:
            proxy_name = "cosine (learned: one class)"
    scores = proxy.scores(rows)
    rule = guaranteed_thresholds(
        scores,
        test,
        target_recall=targets.target_recall,
        target_precision=targets.target_precision,
        delta=targets.delta,
    )
    return rule, proxy_name, scores


def _finish(
    plan: _Plan,
    rule: GuaranteedThresholds,
    proxy_name: str,
    scores: list[float],
    sent: list[int],
    targets: CascadeTargets,
    all_pairs: bool,
) -> tuple[list[dict[str, Any]], CascadeReport]:
    decided: list[tuple[bool, str]] = []  # (applies, who decided) per pair
    for index, score in enumerate(scores):
        judged = plan.strong.get(index)
        if judged is not None:
            decided.append((bool(judged.applies) and judged.error is None, "strong"))
        else:
            decided.append((rule.route(score) == "yes", "proxy"))
    records = [_record(plan, i, scores, decided, all_pairs) for i in range(len(plan.items))]
    failed = sum(1 for j in plan.strong.values() if j.error is not None)
    labels = sum(1 for i in plan.draw if i in plan.strong and plan.strong[i].error is None)
    positives = sum(1 for i in plan.draw if plan.strong.get(i) is not None and plan.strong[i].applies)
    need = _needed_positive_labels(targets)
    decided_by_proxy = any(who == "proxy" and i not in plan.strong for i, (_, who) in enumerate(decided))
    budget = None
    if need is not None and not decided_by_proxy and positives > 0 and len(scores) > labels:
        halves = 2 if proxy_name == "learned" else 1
        if positives < need * halves:
            budget = halves * _likely_budget(need, positives / labels)
    report = CascadeReport(
        pairs=len(scores),
        labels=labels,
        positive_labels=positives,
        sent=len(sent),
        strong_judgments=len(plan.strong),
        proxy_no=sum(1 for applies, who in decided if who == "proxy" and not applies),
        proxy_yes=sum(1 for applies, who in decided if who == "proxy" and applies),
        failed=failed,
        t_low=rule.t_low,
        t_high=rule.t_high,
        target_recall=targets.target_recall,
        target_precision=targets.target_precision,
        delta=targets.delta,
        observed_recall=rule.observed_recall,
        observed_precision=rule.observed_precision,
        proxy=proxy_name,
        seed=targets.seed,
        needed_positive_labels=need,
        suggested_label_budget=budget,
    )
    return records, report


def _needed_positive_labels(targets: CascadeTargets) -> int | None:
    """The fewest judge-YES labels the recall test can pass on (``None``: no recall target, or one of 1)."""
    recall = targets.target_recall
    if recall is None or recall >= 1:
        return None
    alpha = targets.delta / 2 if targets.target_precision is not None else targets.delta
    return min_positive_labels(recall, alpha)


def _likely_budget(need: int, rate: float, chance: float = 0.9) -> int:
    """The fewest labels drawn at YES rate ``rate`` that hold at least ``need`` YES with probability ``chance``.

    >>> _likely_budget(22, 0.075)
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


def _record(
    plan: _Plan, item_index: int, scores: list[float], decided: list[tuple[bool, str]], all_pairs: bool
) -> dict[str, Any]:
    """One input's record: the bulk job's fields, each matched rule with the judge that decided it."""
    width = len(plan.rules)
    indices = range(item_index * width, (item_index + 1) * width)
    strong_yes: list[tuple[float | None, float, dict[str, Any]]] = []
    proxy_yes: list[tuple[float | None, float, dict[str, Any]]] = []
    failed: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    for index in indices:
        rule = plan.rules[index % width]
        applies, who = decided[index]
        judged = plan.strong.get(index)
        if judged is not None and judged.error is not None:
            failed.append({"rule_id": rule.rule_id, "error": judged.error})
        p_yes = judged.p_yes if judged is not None else None
        score = judged.score if judged is not None else None
        if applies:
            entry = {"rule_id": rule.rule_id, "score": score, "p_yes": p_yes, "judge": who}
            (strong_yes if who == "strong" else proxy_yes).append((score, scores[index], entry))
        pairs.append(
            {"rule_id": rule.rule_id, "applies": applies, "p_yes": p_yes, "score": score, "judge": who}
            | {"proxy_score": scores[index]}
        )
    strong_yes.sort(key=lambda t: -(t[0] if t[0] is not None else 1.0))
    proxy_yes.sort(key=lambda t: -t[1])
    record: dict[str, Any] = {
        "id": plan.items[item_index].id,
        "matched": [entry for _, _, entry in strong_yes + proxy_yes],
        "failed": failed,
    }
    if failed and len(failed) == width:  # no pair of the input judged: the bulk job's "error", for both engines
        record["error"] = "; ".join(dict.fromkeys(f["error"] for f in failed))
    if all_pairs:
        record["pairs"] = pairs
    return record


# --------------------------------------------------------------------------- strong (or cheap) judgments
def _judge_pairs(retriever: ApplicabilityRetriever, plan: _Plan, indices: Iterable[int]) -> dict[int, Judgment]:
    """The retriever's judgment of each pair, input by input, as many inputs at once as its cap allows."""
    grouped = plan.by_input(indices)
    if not grouped:
        return {}
    judge = retriever.judge
    width = max(1, min(len(grouped), retriever.max_concurrency))

    def one(item_index: int) -> dict[int, Judgment]:
        return _judged(plan, item_index, grouped[item_index], judge.judge)

    found: dict[int, Judgment] = {}
    first, *rest = grouped  # the first input alone: a calibration's reference judgments are made once
    found.update(one(first))
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="tag-cascade") as pool:
        for done in pool.map(one, rest):
            found.update(done)
    return found


async def _ajudge_pairs(retriever: ApplicabilityRetriever, plan: _Plan, indices: Iterable[int]) -> dict[int, Judgment]:
    """Async twin of :func:`_judge_pairs`."""
    grouped = plan.by_input(indices)
    if not grouped:
        return {}
    judge = retriever.judge
    gate = asyncio.Semaphore(max(1, retriever.max_concurrency))

    async def one(item_index: int) -> dict[int, Judgment]:
        async with gate:
            return await _ajudged(plan, item_index, grouped[item_index], judge.ajudge)

    first, *rest = grouped
    found = await one(first)
    for done in await asyncio.gather(*(one(i) for i in rest)):
        found.update(done)
    return found


def _subset(plan: _Plan, item_index: int, indices: Sequence[int]) -> tuple[InputItem, list[Rule], str | None]:
    """The input, the rules of its pairs to judge, and why it cannot be judged at all (``None``: it can)."""
    item = plan.items[item_index]
    return item, [plan.rules[i % len(plan.rules)] for i in indices], encoding_error(item)


def _outcome(
    indices: Sequence[int], rules: Sequence[Rule], result: MatchResult | None, error: str | None
) -> dict[int, Judgment]:
    """Each pair's judgment: the result's, or a failure with ``error`` for every pair."""
    if result is not None:
        return dict(zip(indices, result.judgments, strict=True))
    return {i: Judgment(rule_id=r.rule_id, error=error) for i, r in zip(indices, rules, strict=True)}


def _judged(plan: _Plan, item_index: int, indices: Sequence[int], judge: Any) -> dict[int, Judgment]:
    item, rules, error = _subset(plan, item_index, indices)
    result = None
    if error is None:
        try:
            result = judge(item.text, rules)
        except TagError as exc:  # every judgment of the input failed, or it cannot be judged at all
            error = " ".join(str(exc).split())
    return _outcome(indices, rules, result, error)


async def _ajudged(plan: _Plan, item_index: int, indices: Sequence[int], ajudge: Any) -> dict[int, Judgment]:
    item, rules, error = _subset(plan, item_index, indices)
    result = None
    if error is None:
        try:
            result = await ajudge(item.text, rules)
        except TagError as exc:
            error = " ".join(str(exc).split())
    return _outcome(indices, rules, result, error)
