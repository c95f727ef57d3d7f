"""Precision, recall and F1 of the verdicts against a gold file, and the threshold that would maximise F1.

Only inputs both files hold are scored. The threshold is a suggestion: the
page states it and what F1 it would give, it changes no verdict. It is the
one best-F1 search's (:func:`~langchain_tag.judging.calibration._best_f1.best_f1_cut`),
which a ``"threshold"`` calibration fits with too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from langchain_tag.judging.calibration._best_f1 import best_f1_cut
from langchain_tag.review._files import VerdictRecord

__all__ = ["Counts", "GoldDiff", "GoldScores", "score_gold"]


@dataclass
class Counts:
    """True positives, false positives and false negatives, and what they give."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        """TP / (TP + FP); ``None`` when nothing was predicted."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """TP / (TP + FN); ``None`` when the gold holds nothing."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        """The harmonic mean of precision and recall; ``None`` when neither side holds anything.

        >>> Counts(tp=2, fp=2, fn=0).f1
        0.6666666666666666
        """
        total = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / total if total else None


@dataclass(frozen=True)
class GoldDiff:
    """Where one input's matched rules and its gold rules differ, each list in rule-file order.

    Attributes:
        missed: Gold rules the verdicts did not match (false negatives).
        wrong: Rules matched that the gold does not hold (false positives).
    """

    missed: list[str]
    wrong: list[str]

    @property
    def agrees(self) -> bool:
        """Whether the verdicts match exactly the gold's rules."""
        return not self.missed and not self.wrong


@dataclass
class GoldScores:
    """The verdicts scored against a gold file.

    Attributes:
        per_rule: Rule id -> its counts, in rule-file order.
        overall: The counts over every (input, rule) pair (micro average).
        scored_inputs: Inputs both files hold.
        verdicts_only: Inputs with verdicts but no gold line (not scored).
        gold_only: Inputs with a gold line but no verdicts (not scored).
        best_threshold: The score threshold that maximises overall F1 on this gold, if scores are known.
        best_f1: The F1 it gives.
        searched_from: The lowest threshold tried (the configured one when pairs below it have no score).
        notes: What the page should say about the scoring.
        per_input: Input id -> its diff, for each scored input, in the verdicts' order.
    """

    per_rule: dict[str, Counts]
    overall: Counts
    scored_inputs: int
    verdicts_only: int
    gold_only: int
    best_threshold: float | None = None
    best_f1: float | None = None
    searched_from: float | None = None
    notes: list[str] = field(default_factory=list)
    per_input: dict[str, GoldDiff] = field(default_factory=dict)

    @property
    def better_threshold(self) -> bool:
        """Whether the suggested threshold gives a higher F1 than the verdicts as made."""
        if self.best_threshold is None or self.best_f1 is None:
            return False
        return self.overall.f1 is None or self.best_f1 > self.overall.f1 + 1e-12


def score_gold(
    records: Sequence[VerdictRecord],
    gold: Mapping[str, set[str]],
    rule_ids: Sequence[str],
    threshold: float | None,
) -> GoldScores:
    """Score the matched rules of each input against its gold rule ids.

    Args:
        records: The verdicts file's records.
        gold: Input id -> the rule ids that should match it.
        rule_ids: The rule file's ids, in order.
        threshold: The threshold the verdicts were made at (with only matched scores known, no lower cut is tried).

    >>> from langchain_tag.review._files import Pair, VerdictRecord
    >>> recs = [VerdictRecord("a", 1, matched=[Pair("R1", True, 0.9, 0.9)]), VerdictRecord("b", 2)]
    >>> s = score_gold(recs, {"a": {"R1"}, "b": {"R1"}}, ["R1"], 0.5)
    >>> (s.overall.tp, s.overall.fn, s.overall.recall)
    (1, 1, 0.5)
    """
    per_rule = {rule_id: Counts() for rule_id in rule_ids}
    overall = Counts()
    scored: list[tuple[float, bool]] = []
    unscored_positives = 0
    with_pairs = True
    seen: set[str] = set()
    per_input: dict[str, GoldDiff] = {}
    for record in records:
        if record.id not in gold:
            continue
        seen.add(record.id)
        expected = gold[record.id]
        predicted = {p.rule_id for p in record.matched}
        per_input[record.id] = GoldDiff(
            missed=[r for r in rule_ids if r in expected and r not in predicted],
            wrong=[r for r in rule_ids if r in predicted and r not in expected],
        )
        for rule_id in rule_ids:
            counts = per_rule[rule_id]
            hit, want = rule_id in predicted, rule_id in expected
            counts.tp += hit and want
            counts.fp += hit and not want
            counts.fn += want and not hit
        if record.pairs is None:
            with_pairs = False
            known = {p.rule_id: p.score for p in record.matched}
        else:
            known = {p.rule_id: p.score for p in record.pairs if p.rule_id not in record.failed}
        for rule_id in rule_ids:
            score = known.get(rule_id)
            if score is None:
                unscored_positives += rule_id in expected
            else:
                scored.append((score, rule_id in expected))
    for counts in per_rule.values():
        overall.tp += counts.tp
        overall.fp += counts.fp
        overall.fn += counts.fn
    floor = None if with_pairs else threshold
    result = GoldScores(
        per_rule=per_rule,
        overall=overall,
        scored_inputs=len(seen),
        verdicts_only=sum(1 for r in records if r.id not in gold),
        gold_only=len(set(gold) - {r.id for r in records}),
        searched_from=floor,
        per_input=per_input,
    )
    best = best_f1_cut(
        [score for score, _ in scored],
        [gold for _, gold in scored],
        unscored_positives=unscored_positives,
        floor=floor,
    )
    if best is not None:
        result.best_threshold, result.best_f1 = best.threshold, best.f1
    if not with_pairs:
        result.notes.append(
            "the verdicts hold the matched pairs' scores only, so no threshold below the configured one was tried "
            "(run the job with --all-pairs to search the whole range)"
        )
    return result
