"""Scores for benchmarks: retrieval against gold rule ids, and NBA strict accuracy.

Retrieval scores compare a retrieved set of rule ids with a gold set, item by
item, and average them per group (macro mean over items). Edge cases are fixed
so that averages are well defined:

* **Empty gold set**: recall and F1 are undefined (``None``) and the item is
  left out of the recall and F1 averages. Its precision is 0.0 if anything
  was retrieved (every retrieved id is a false positive) and undefined if
  nothing was.
* **Empty retrieved set, non-empty gold**: precision 0.0, recall 0.0, F1 0.0.
* Duplicate ids count once on both sides.

NBA strict accuracy reads an executor reply (the JSON the ``nba`` executor
prompt asks for, or RuleArena's ``Answer: True. Illegal Operation: X.
Problematic Team: Y`` text as a fallback) and counts it correct only when the
answer is right and, for an illegal scenario, the illegal operation and the
problematic team are both right.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tag.calls._replies import parse_json_object
from langchain_tag.errors import ParseError

__all__ = [
    "OVERALL",
    "NbaVerdict",
    "RetrievalScore",
    "RetrievalSummary",
    "parse_nba_verdict",
    "score_retrieval",
    "strict_accuracy",
    "strict_correct",
    "summarize",
    "summarize_by_group",
]

OVERALL = "all"
"""Group key under which :func:`summarize_by_group` reports every item together."""


# --------------------------------------------------------------------------
# Retrieval against gold ids.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class RetrievalScore:
    """Retrieval quality of one item.

    Attributes:
        recall: |retrieved ∩ gold| / |gold|; ``None`` when gold is empty.
        precision: |retrieved ∩ gold| / |retrieved|; 0.0 when nothing was
            retrieved but gold is non-empty; ``None`` when both are empty.
        f1: Harmonic mean of precision and recall (0.0 when both are 0);
            ``None`` when recall is undefined.
        n_retrieved: Distinct ids retrieved.
        n_gold: Distinct gold ids.
        n_hits: Distinct ids both retrieved and gold.
    """

    recall: float | None
    precision: float | None
    f1: float | None
    n_retrieved: int
    n_gold: int
    n_hits: int


def score_retrieval(retrieved: Iterable[str], gold: Iterable[str]) -> RetrievalScore:
    """Score one retrieved id set against one gold id set.

    Args:
        retrieved: Retrieved rule ids (order and repeats are ignored).
        gold: Gold rule ids (repeats are ignored).

    Returns:
        The item's scores; see the module docstring for the edge cases.
    """
    got, want = set(retrieved), set(gold)
    hits = len(got & want)
    recall = hits / len(want) if want else None
    if got:
        precision: float | None = hits / len(got)
    else:
        precision = 0.0 if want else None
    f1: float | None = None
    if recall is not None and precision is not None:
        f1 = 0.0 if recall + precision == 0 else 2 * recall * precision / (recall + precision)
    return RetrievalScore(
        recall=recall, precision=precision, f1=f1, n_retrieved=len(got), n_gold=len(want), n_hits=hits
    )


@dataclass(frozen=True)
class RetrievalSummary:
    """Macro averages of item scores over a group of items.

    Attributes:
        n: Items in the group.
        n_scored: Items with a non-empty gold set (recall and F1 average over these).
        recall: Mean recall over scored items; ``None`` if there are none.
        precision: Mean precision over items where it is defined.
        f1: Mean F1 over scored items.
        mean_retrieved: Mean number of distinct retrieved ids over all ``n`` items.
        mean_gold: Mean number of distinct gold ids over all ``n`` items.
    """

    n: int
    n_scored: int
    recall: float | None
    precision: float | None
    f1: float | None
    mean_retrieved: float
    mean_gold: float


def _mean(values: Iterable[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def summarize(scores: Sequence[RetrievalScore]) -> RetrievalSummary:
    """Macro-average item scores (each item weighs the same).

    Args:
        scores: Item scores.

    Returns:
        The summary; averages of undefined item values skip those items.
    """
    n = len(scores)
    return RetrievalSummary(
        n=n,
        n_scored=sum(1 for s in scores if s.recall is not None),
        recall=_mean(s.recall for s in scores),
        precision=_mean(s.precision for s in scores),
        f1=_mean(s.f1 for s in scores),
        mean_retrieved=sum(s.n_retrieved for s in scores) / n if n else 0.0,
        mean_gold=sum(s.n_gold for s in scores) / n if n else 0.0,
    )


def summarize_by_group(
    items: Iterable[tuple[Hashable, RetrievalScore]], *, overall: Hashable = OVERALL
) -> dict[Hashable, RetrievalSummary]:
    """Summaries per group (e.g. per level) plus one over every item.

    The overall row is a macro mean over all items, not a mean of the group
    means, so larger groups weigh more.

    Args:
        items: ``(group, score)`` pairs.
        overall: Key of the all-items summary.

    Returns:
        Summaries keyed by group in sorted order, then ``overall`` last.

    Raises:
        ValueError: When a group is named like the overall key.
    """
    groups: dict[Hashable, list[RetrievalScore]] = {}
    everything: list[RetrievalScore] = []
    for group, score in items:
        if group == overall:
            raise ValueError(f"group {group!r} collides with the overall key")
        groups.setdefault(group, []).append(score)
        everything.append(score)
    out: dict[Hashable, RetrievalSummary] = {g: summarize(groups[g]) for g in sorted(groups, key=repr)}
    out[overall] = summarize(everything)
    return out


# --------------------------------------------------------------------------
# NBA strict accuracy.
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class NbaVerdict:
    """An NBA answer: is some operation illegal, which one, and which team is at fault.

    Attributes:
        answer: ``True`` if some operation is illegal; ``None`` if unreadable.
        illegal_operation: Operation letter (upper case) or ``None``.
        problematic_team: Team letter (upper case) or ``None``.
    """

    answer: bool | None
    illegal_operation: str | None = None
    problematic_team: str | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> NbaVerdict:
        """Read the gold verdict of a RuleArena NBA record (or any mapping with the same keys)."""
        return cls(
            answer=_as_bool(record.get("answer")),
            illegal_operation=_as_letter(record.get("illegal_operation"), "operation"),
            problematic_team=_as_letter(record.get("problematic_team"), "team"),
        )


_NULLS = {"", "null", "none", "n/a", "na", "-"}
_TRUE_WORDS = {"true", "yes", "illegal"}
_FALSE_WORDS = {"false", "no", "legal"}


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    return None


def _as_letter(value: Any, prefix: str) -> str | None:
    """``"B"``, ``"b"``, ``"Operation B"``, ``"B."``, ``"B. Team A signs ..."`` -> ``"B"``."""
    if not isinstance(value, str):
        return None
    text = value.replace("*", "").strip()
    if text.lower() in _NULLS:
        return None
    found = re.match(rf"(?:{prefix}\s+)?([A-Za-z])(?![A-Za-z])", text, re.IGNORECASE)
    return found.group(1).upper() if found else None


_TEXT_ANSWER = re.compile(r"Answer\s*:\s*(True|False)", re.IGNORECASE)
_TEXT_OPERATION = re.compile(r"Illegal\s+Operation\s*:\s*(?:Operation\s+)?([A-Za-z])(?![A-Za-z])", re.IGNORECASE)
_TEXT_TEAM = re.compile(r"Problematic\s+Team\s*:\s*(?:Team\s+)?([A-Za-z])(?![A-Za-z])", re.IGNORECASE)


def parse_nba_verdict(reply: str) -> NbaVerdict:
    """Read an executor reply as an :class:`NbaVerdict`.

    ``**`` markup is removed first. Then the reply is read as a JSON object
    with ``answer``, ``illegal_operation`` and ``problematic_team`` keys
    (fenced, embedded or slightly malformed JSON is accepted); failing that,
    as RuleArena's text format ``Answer: True. Illegal Operation: X.
    Problematic Team: Y``. A reply that neither way yields an answer gives
    ``NbaVerdict(answer=None)``, which is never correct.

    Args:
        reply: The model's reply text.

    Returns:
        The verdict read.
    """
    text = reply.replace("**", "")
    try:
        obj = parse_json_object(text, expect_key="answer")
    except ParseError:
        obj = None
    if obj is not None:
        verdict = NbaVerdict(
            answer=_as_bool(obj.get("answer")),
            illegal_operation=_as_letter(obj.get("illegal_operation"), "operation"),
            problematic_team=_as_letter(obj.get("problematic_team"), "team"),
        )
        if verdict.answer is not None:
            return verdict
    answer = _TEXT_ANSWER.search(text)
    if answer is None:
        return NbaVerdict(answer=None)
    operation, team = _TEXT_OPERATION.search(text), _TEXT_TEAM.search(text)
    return NbaVerdict(
        answer=answer.group(1).lower() == "true",
        illegal_operation=operation.group(1).upper() if operation else None,
        problematic_team=team.group(1).upper() if team else None,
    )


def strict_correct(prediction: NbaVerdict | str, gold: NbaVerdict | Mapping[str, Any]) -> bool:
    """Whether a prediction is strictly correct.

    When gold says no operation is illegal, only ``answer is False`` counts
    (operation and team are ignored). When gold says some operation is
    illegal, the answer must be ``True`` and both the operation letter and
    the team letter must match.

    Args:
        prediction: A verdict, or a raw reply to parse with :func:`parse_nba_verdict`.
        gold: The gold verdict, or a RuleArena record.

    Raises:
        ValueError: When the gold answer itself cannot be read.
    """
    pred = parse_nba_verdict(prediction) if isinstance(prediction, str) else prediction
    want = gold if isinstance(gold, NbaVerdict) else NbaVerdict.from_record(gold)
    if want.answer is None:
        raise ValueError(f"gold verdict has no readable answer: {gold!r}")
    if not want.answer:
        return pred.answer is False
    return (
        pred.answer is True
        and pred.illegal_operation == want.illegal_operation
        and pred.problematic_team == want.problematic_team
    )


def strict_accuracy(predictions: Sequence[NbaVerdict | str], golds: Sequence[NbaVerdict | Mapping[str, Any]]) -> float:
    """Fraction of predictions that are strictly correct (see :func:`strict_correct`).

    Raises:
        ValueError: When the two sequences differ in length or are empty.
    """
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} gold answers")
    if not golds:
        raise ValueError("strict accuracy of zero items is undefined")
    return sum(strict_correct(p, g) for p, g in zip(predictions, golds, strict=True)) / len(golds)
