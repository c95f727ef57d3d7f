"""A cascade job's pairs, and their strong (or cheap) judgments: input by input, as many at once as the cap allows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_tag.errors import TagError
from langchain_tag.judging._label_draw import StratifiedDraw
from langchain_tag.judging.results import Judgment, MatchResult
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.inputs import InputItem, encoding_error

__all__ = ["Plan", "ajudge_pairs", "judge_pairs"]

Pair = tuple[int, int]
"""(input index, rule index)."""


@dataclass
class Plan:
    """The job's pairs, their features, the draw, and the strong judgments got so far."""

    items: list[InputItem]
    rules: list[Rule]
    rows: list[list[float]]
    draw: list[int]
    strong: dict[int, Judgment] = field(default_factory=dict)
    stratified: StratifiedDraw | None = None
    """The stratified draw's state (``None``: the draw is uniform)."""
    second: int = 0
    """How many labels at the draw's end are the stratified draw's second stage."""

    def pair(self, index: int) -> Pair:
        return divmod(index, len(self.rules))

    def by_input(self, indices: Iterable[int]) -> dict[int, list[int]]:
        """Pair indices grouped by input, in input order."""
        grouped: dict[int, list[int]] = {}
        for index in sorted(indices):
            grouped.setdefault(index // len(self.rules), []).append(index)
        return grouped


def judge_pairs(retriever: ApplicabilityRetriever, plan: Plan, indices: Iterable[int]) -> dict[int, Judgment]:
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


async def ajudge_pairs(retriever: ApplicabilityRetriever, plan: Plan, indices: Iterable[int]) -> dict[int, Judgment]:
    """Async twin of :func:`judge_pairs`."""
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


def _subset(plan: Plan, item_index: int, indices: Sequence[int]) -> tuple[InputItem, list[Rule], str | None]:
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


def _judged(plan: Plan, item_index: int, indices: Sequence[int], judge: Any) -> dict[int, Judgment]:
    item, rules, error = _subset(plan, item_index, indices)
    result = None
    if error is None:
        try:
            result = judge(item.text, rules)
        except TagError as exc:  # every judgment of the input failed, or it cannot be judged at all
            error = " ".join(str(exc).split())
    return _outcome(indices, rules, result, error)


async def _ajudged(plan: Plan, item_index: int, indices: Sequence[int], ajudge: Any) -> dict[int, Judgment]:
    item, rules, error = _subset(plan, item_index, indices)
    result = None
    if error is None:
        try:
            result = await ajudge(item.text, rules)
        except TagError as exc:
            error = " ".join(str(exc).split())
    return _outcome(indices, rules, result, error)
