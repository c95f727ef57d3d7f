"""The bulk job as a cascade with a stated guarantee: a cheap proxy decides the clear pairs, the strong judge the rest.

:func:`cascade_corpus` judges every (input, rule) pair of a job as BARGAIN's filter cascade does (see
:mod:`langchain_tag.judging.guarantee` for the bound and its derivation):

1. Every pair gets a *proxy score* (:mod:`langchain_tag.judging.proxy`): the cosine between the input's and
   the rule's embeddings (the packaged MiniLM from the command line), or, with ``proxy="learned"``, a logistic
   regression on that cosine and, where a cheap LLM judge is given, its log-odds of YES.
2. ``label_budget`` pairs drawn at random (seeded: a rerun draws the same ones) are judged by the strong judge.
   These are real judgments: cached, reused, and in the output. By default (``draw="stratified"``,
   :mod:`langchain_tag.judging._label_draw`) a uniform pilot, then the rest among the lowest-scoring pairs, with
   every pair above them judged, and the threshold from an exact hypergeometric test; with ``draw="uniform"``
   (and whenever a precision target is given) uniformly, with the thresholds of step 3.
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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_tag.judging._label_draw import StratifiedDraw
from langchain_tag.judging.guarantee import (
    GuaranteedThresholds,
    guaranteed_thresholds,
    label_sample,
)
from langchain_tag.judging.proxy import PairFeatures, fit_proxy, log_odds_feature
from langchain_tag.judging.results import Judgment
from langchain_tag.ranges import MAX_CONCURRENCY
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.scale._cascade_pairs import Plan, ajudge_pairs, judge_pairs
from langchain_tag.scale._cascade_report import CascadeReport, CascadeTargets, likely_budget, needed_positive_labels
from langchain_tag.scale.bulk import capped_retriever, retriever_rules
from langchain_tag.scale.inputs import InputItem, as_input_items
from langchain_tag.scale.verdict_lines import VerdictLine, VerdictPair

__all__ = ["CascadeReport", "CascadeTargets", "acascade_corpus", "cascade_corpus", "choose_thresholds", "pilot_scores"]


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
        cheap_p = judge_pairs(capped_retriever(cheap, max_concurrency), plan, range(len(plan.rows)))
        _add_cheap_feature(plan, cheap_p)
    strong = capped_retriever(retriever, max_concurrency)
    plan.strong.update(judge_pairs(strong, plan, plan.draw))
    if plan.stratified is not None:
        scores, proxy_name, above = _second_stage(plan, chosen)
        plan.strong.update(judge_pairs(strong, plan, plan.draw[len(plan.draw) - plan.second :] + above))
        rule = _certify(plan, above)
    else:
        rule, proxy_name, scores = _thresholds(plan, chosen)
    labelled = set(plan.draw)
    sent = [i for i, s in enumerate(scores) if i not in labelled and rule.route(s) == "strong"]
    plan.strong.update(judge_pairs(strong, plan, [i for i in sent if i not in plan.strong]))
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
        cheap_p = await ajudge_pairs(capped_retriever(cheap, max_concurrency), plan, range(len(plan.rows)))
        _add_cheap_feature(plan, cheap_p)
    strong = capped_retriever(retriever, max_concurrency)
    plan.strong.update(await ajudge_pairs(strong, plan, plan.draw))
    if plan.stratified is not None:
        scores, proxy_name, above = _second_stage(plan, chosen)
        plan.strong.update(await ajudge_pairs(strong, plan, plan.draw[len(plan.draw) - plan.second :] + above))
        rule = _certify(plan, above)
    else:
        rule, proxy_name, scores = _thresholds(plan, chosen)
    labelled = set(plan.draw)
    sent = [i for i, s in enumerate(scores) if i not in labelled and rule.route(s) == "strong"]
    plan.strong.update(await ajudge_pairs(strong, plan, [i for i in sent if i not in plan.strong]))
    return _finish(plan, rule, proxy_name, scores, sent, chosen, all_pairs)


def _start(
    inputs: Iterable[InputItem | str],
    retriever: ApplicabilityRetriever,
    embeddings: Embeddings,
    targets: CascadeTargets | None,
    cheap: ApplicabilityRetriever | None,
    max_concurrency: int | None,
) -> tuple[Plan, CascadeTargets]:
    targets = targets or CascadeTargets()
    MAX_CONCURRENCY.check_optional(max_concurrency)
    items = as_input_items(inputs)
    rules = retriever_rules(retriever)
    if not rules:
        raise ValueError("a cascade job judges the retriever's rules: give it rules, not vector-store candidates")
    if cheap is not None and [r.rule_id for r in retriever_rules(cheap)] != [r.rule_id for r in rules]:
        raise ValueError("the cheap judge must judge the same rules, in the same order, as the strong one")
    features = PairFeatures(embeddings)
    rows = features.rows([(item.text, rule) for item in items for rule in rules])
    pairs = len(rows)
    if targets.drawn == "stratified" and targets.target_recall is not None:
        stratified = StratifiedDraw(
            pairs,
            targets.label_budget,
            target_recall=targets.target_recall,
            delta=targets.delta,
            seed=targets.seed,
            pilot_share=0.5 if targets.proxy == "learned" else 0.15,
        )
        return Plan(items=items, rules=rules, rows=rows, draw=stratified.pilot(), stratified=stratified), targets
    draw = label_sample(pairs, min(targets.label_budget, pairs), seed=targets.seed) if pairs else []
    return Plan(items=items, rules=rules, rows=rows, draw=draw), targets


def _labels(plan: Plan, indices: Iterable[int]) -> dict[int, bool]:
    """The strong verdicts of the pairs given that were judged without failure."""
    return {i: bool(plan.strong[i].applies) for i in indices if i in plan.strong and plan.strong[i].error is None}


def _second_stage(plan: Plan, targets: CascadeTargets) -> tuple[list[float], str, list[int]]:
    """Scores (a learned proxy fitted on the pilot), the second-stage labels added to the draw, the pairs above."""
    assert plan.stratified is not None
    pilot = _labels(plan, plan.draw)
    scores, proxy_name = pilot_scores(plan.rows, pilot, targets.proxy)
    second, above = plan.stratified.second(scores, pilot)
    plan.draw = plan.draw + second
    plan.second = len(second)
    return scores, proxy_name, above


def pilot_scores(rows: Sequence[Sequence[float]], pilot: Mapping[int, bool], proxy: str) -> tuple[list[float], str]:
    """Every pair's score for the stratified draw's second stage, and the proxy's name.

    A learned proxy is fitted on the pilot's labels only; with one class among them the cosine stands in.

    >>> pilot_scores([[0.2], [0.7]], {0: False}, "learned")
    ([0.2, 0.7], 'cosine (learned: one class)')
    """
    name = proxy
    fitted = fit_proxy("cosine")
    if proxy == "learned":
        if len(set(pilot.values())) == 2:
            fitted = fit_proxy("learned", [rows[i] for i in pilot], list(pilot.values()))
        else:
            name = "cosine (learned: one class)"
    return fitted.scores(rows), name


def _certify(plan: Plan, above: list[int]) -> GuaranteedThresholds:
    assert plan.stratified is not None
    sent = {i: bool(plan.strong[i].applies) and plan.strong[i].error is None for i in above if i in plan.strong}
    return plan.stratified.certify(_labels(plan, plan.draw), sent)


def _add_cheap_feature(plan: Plan, judged: Mapping[int, Judgment]) -> None:
    """Append the cheap judge's log-odds of YES to every row (0 where it gave no P(YES))."""
    for index, row in enumerate(plan.rows):
        found = judged.get(index)
        row.append(log_odds_feature(found.p_yes if found is not None and found.error is None else None))


def _thresholds(plan: Plan, targets: CascadeTargets) -> tuple[GuaranteedThresholds, str, list[float]]:
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
    plan: Plan,
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
    need = needed_positive_labels(targets) if plan.stratified is None else None
    decided_by_proxy = any(who == "proxy" and i not in plan.strong for i, (_, who) in enumerate(decided))
    budget = None
    if need is not None and not decided_by_proxy and positives > 0 and len(scores) > labels:
        halves = 2 if proxy_name == "learned" else 1
        if positives < need * halves:
            budget = halves * likely_budget(need, positives / labels)
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
        draw="stratified" if plan.stratified is not None else "uniform",
    )
    return records, report


def _record(
    plan: Plan, item_index: int, scores: list[float], decided: list[tuple[bool, str]], all_pairs: bool
) -> dict[str, Any]:
    """One input's record: the bulk job's fields, each matched rule with the judge that decided it."""
    width = len(plan.rules)
    indices = range(item_index * width, (item_index + 1) * width)
    strong_yes: list[tuple[float | None, float, VerdictPair]] = []
    proxy_yes: list[tuple[float | None, float, VerdictPair]] = []
    failed: dict[str, str] = {}
    pairs: list[VerdictPair] = []
    for index in indices:
        rule = plan.rules[index % width]
        applies, who = decided[index]
        judged = plan.strong.get(index)
        if judged is not None and judged.error is not None:
            failed[rule.rule_id] = judged.error
        p_yes = judged.p_yes if judged is not None else None
        score = judged.score if judged is not None else None
        if applies:
            entry = VerdictPair(rule.rule_id, True, score, p_yes, judge=who)
            (strong_yes if who == "strong" else proxy_yes).append((score, scores[index], entry))
        pairs.append(VerdictPair(rule.rule_id, applies, score, p_yes, judge=who, proxy_score=scores[index]))
    strong_yes.sort(key=lambda t: -(t[0] if t[0] is not None else 1.0))
    proxy_yes.sort(key=lambda t: -t[1])
    line = VerdictLine(plan.items[item_index].id, matched=[entry for _, _, entry in strong_yes + proxy_yes])
    line.failed = failed
    if failed and len(failed) == width:  # no pair of the input judged: the bulk job's "error", for both engines
        line.error = "; ".join(dict.fromkeys(failed.values()))
    if all_pairs:
        line.pairs = pairs
    return line.to_line()
