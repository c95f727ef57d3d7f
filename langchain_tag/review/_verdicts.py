"""What a verdicts file says per rule and per input: matches, the scores around the threshold, failed judgments.

A verdicts file written with ``--all-pairs`` holds every pair's score; one
without holds the matched pairs' scores only (the others are known to lie
below the threshold), which the page says where it matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_tag.review._files import Pair, VerdictRecord

__all__ = ["InputView", "RuleVerdicts", "VerdictSummary", "summarize_verdicts"]

NEAREST = 3
"""Inputs shown on each side of the threshold, per rule."""


@dataclass
class RuleVerdicts:
    """One rule's verdicts over the corpus.

    Attributes:
        rule_id: The rule.
        matched: How many inputs it matched.
        judged: How many inputs it was judged on without failing.
        scores: ``(score, input index)`` of every pair whose score is known.
        above: The inputs nearest the threshold at or above it, ``(score, input index)``, nearest first.
        below: The inputs nearest the threshold below it, nearest first (known only with every pair's score).
        failed: ``(input index, error)`` of its failed judgments.
    """

    rule_id: str
    matched: int = 0
    judged: int = 0
    scores: list[tuple[float, int]] = field(default_factory=list)
    above: list[tuple[float, int]] = field(default_factory=list)
    below: list[tuple[float, int]] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class InputView:
    """One input's verdicts.

    Attributes:
        id: The input's id.
        matched: ``(rule id, score)`` of the rules it matched, best first.
        failed: ``(rule id, error)`` of its failed judgments.
        error: Why none of its pairs could be judged, if so.
    """

    id: str
    matched: list[tuple[str, float | None]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None


@dataclass
class VerdictSummary:
    """A verdicts file, per rule and per input.

    Attributes:
        rules: Rule id -> its verdicts, in rule-file order.
        inputs: The inputs, in file order.
        threshold: The threshold drawn (given, else inferred), ``None`` when no score is known.
        inferred: Whether the threshold was inferred from the verdicts rather than given.
        all_pairs: Whether every pair's score is known (the job ran with ``--all-pairs``).
        disagreeing: Pairs whose decision the threshold does not reproduce (made at another threshold).
    """

    rules: dict[str, RuleVerdicts]
    inputs: list[InputView]
    threshold: float | None
    inferred: bool
    all_pairs: bool
    disagreeing: int = 0

    @property
    def failed(self) -> int:
        """Failed judgments in all."""
        return sum(len(r.failed) for r in self.rules.values())


def _known_pairs(record: VerdictRecord) -> list[Pair]:
    """The pairs whose decision (and score, if any) the record gives: all of them with ``pairs``, else the matched."""
    if record.pairs is not None:
        return [p for p in record.pairs if p.rule_id not in record.failed]
    return list(record.matched)


def summarize_verdicts(
    records: Sequence[VerdictRecord], rule_ids: Sequence[str], threshold: float | None
) -> VerdictSummary:
    """Count, per rule and per input, what the verdicts say.

    Args:
        records: The verdicts file's records.
        rule_ids: The rule file's ids, in order.
        threshold: The configured threshold; ``None`` infers it as the lowest matched score.

    >>> from langchain_tag.review._files import Pair, VerdictRecord
    >>> rec = VerdictRecord("in-1", 1, matched=[Pair("R1", True, 0.8, 0.9)])
    >>> s = summarize_verdicts([rec], ["R1", "R2"], None)
    >>> (s.threshold, s.inferred, s.rules["R1"].matched, s.rules["R2"].matched)
    (0.8, True, 1, 0)
    """
    rules = {rule_id: RuleVerdicts(rule_id) for rule_id in rule_ids}
    inputs: list[InputView] = []
    all_pairs = bool(records) and all(r.pairs is not None or r.error is not None for r in records)
    for index, record in enumerate(records):
        view = InputView(record.id, error=record.error)
        view.matched = [(p.rule_id, p.score) for p in record.matched]
        view.failed = sorted(record.failed.items())
        inputs.append(view)
        for rule_id, error in record.failed.items():
            rules[rule_id].failed.append((index, error))
        for pair in record.matched:
            rules[pair.rule_id].matched += 1
        judged = (
            {p.rule_id for p in record.pairs} if record.pairs is not None else set(rule_ids) - set(record.failed)
        ) - set(record.failed)
        for rule_id in judged:
            rules[rule_id].judged += 1
        for pair in _known_pairs(record):
            if pair.score is not None:
                rules[pair.rule_id].scores.append((pair.score, index))
    matched_scores = [p.score for r in records for p in r.matched if p.score is not None]
    inferred = threshold is None
    if threshold is None and matched_scores:
        threshold = min(matched_scores)
    summary = VerdictSummary(rules, inputs, threshold, inferred and threshold is not None, all_pairs)
    if threshold is not None:
        for rule in rules.values():
            ranked = sorted(rule.scores, key=lambda s: (abs(s[0] - threshold), s[1]))
            rule.above = [s for s in ranked if s[0] >= threshold][:NEAREST]
            rule.below = [s for s in ranked if s[0] < threshold][:NEAREST]
        summary.disagreeing = sum(
            1
            for record in records
            for pair in _known_pairs(record)
            if pair.score is not None and pair.applies != (pair.score >= threshold)
        )
    return summary
