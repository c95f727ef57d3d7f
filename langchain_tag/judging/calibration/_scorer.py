"""Calibrated verdict scores: a judge's P(YES) mapped to a probability the threshold can trust.

A small judge ranks (input, rule) pairs well but its P(YES) is biased, per
model and per rule: the same 0.5 threshold can match nothing on one model
and everything on another. A :class:`Calibration` maps the raw P(YES) to a
calibrated score in three steps, each optional:

1. **Per rule, label-free** (``reference_inputs``): the judge is also asked
   about each rule on reference inputs, and the rule's own bias, the mean
   log-odds it gives there, is subtracted (contextual calibration). The
   shipped defaults use :data:`TYPICAL_INPUTS`, a few unremarkable inputs of
   several kinds; content-free ones such as ``"N/A"`` or a sample of your own
   typical inputs work too. These reference judgments are ordinary
   judgments: they go through the verdict cache, so each costs one call per
   rule, model and prompt version, once.
2. **Per input, label-free** (``centre_per_input``): from each feature of an
   input, the median feature over all the rules judged for that input is
   subtracted, so a rule matches when it stands out among the rules for
   *that* input. Long or busy inputs raise a small judge's P(YES) for many
   rules at once; this step removes that shared lift. It needs no extra
   calls, only a judgment of every rule (at least ``min_centred_rules``).
3. **Global** (``method``): ``"identity"``; ``"threshold"`` (a shift of the
   log-odds that moves a chosen cut-off to 0.5); ``"platt"`` (a logistic fit
   of the labels on the log-odds); or ``"isotonic"`` (a monotone step fit),
   each fitted by :func:`fit_calibration` from labelled pairs.

Calibrations are plain data: :meth:`Calibration.save` writes JSON (with the
model and prompt version they were fitted for) and :meth:`Calibration.load`
reads it back. :func:`default_calibration` gives the shipped default for a
judge model family, chosen on development data.

**Your own inputs as references.** Given a sample of unlabelled inputs of
the kind you will judge (8 to 20, typical ones: most of them break no rule),
:func:`default_calibration` returns the family's *domain-reference* default
instead: each rule's log-odds are centred on the sample's mean and divided by
its spread, so a rule matches an input that stands out from what that rule
sees on your inputs. The same judge then needs no labels and transfers across
policies much better than with the generic :data:`TYPICAL_INPUTS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Protocol

from langchain_tag.judging._logodds import logit
from langchain_tag.judging.calibration.model import (
    Calibration,
    CalibrationError,
    Method,
    fit_calibration,
)
from langchain_tag.judging.results import Judgment, MatchResult, Reading
from langchain_tag.rules import Rule

__all__ = ["LabelledFit", "ReferenceBook", "Scored", "Scorer"]

_READING_FIELDS = tuple(f.name for f in fields(Reading))
"""What a judgment keeps of its reading."""

# --------------------------------------------------------------------------
# The scorer: the one place a judgment's score and decision are made.
# --------------------------------------------------------------------------
ReferenceKey = Callable[[str, "Rule"], str]
"""Names one reference judgment: (reference input, rule) -> a key that also fixes the model and prompt."""


@dataclass
class ReferenceBook:
    """The log-odds each rule got on each reference input, as judged so far (kept between calls).

    Attributes:
        key: Names a (reference input, rule) judgment; it must change with
            anything that changes the judgment (model, prompt, reply format).
        log_odds: Known log-odds by key.
    """

    key: ReferenceKey
    log_odds: dict[str, float] = field(default_factory=dict)

    def missing(self, reference: str, rules: Sequence[Rule]) -> list[Rule]:
        """The rules not yet judged on ``reference``."""
        return [r for r in rules if self.key(reference, r) not in self.log_odds]

    def add(self, reference: str, rules: Sequence[Rule], readings: Sequence[Reading]) -> None:
        """Keep the log-odds of each reading of ``reference`` that gave a P(YES)."""
        for rule, reading in zip(rules, readings, strict=True):
            if reading.p_yes is not None and reading.error is None:
                self.log_odds[self.key(reference, rule)] = logit(reading.p_yes)

    def mean_and_spread(self, references: Sequence[str], rule: Rule) -> tuple[float | None, float | None]:
        """The rule's mean log-odds over ``references`` and their spread (standard deviation), if judged."""
        known = [v for v in (self.log_odds.get(self.key(ref, rule)) for ref in references) if v is not None]
        if not known:
            return None, None
        mean = sum(known) / len(known)
        spread = (sum((v - mean) ** 2 for v in known) / (len(known) - 1)) ** 0.5 if len(known) > 1 else None
        return mean, spread


@dataclass
class Scorer:
    """Scores one input's raw judgments with a calibration and decides each against the threshold.

    The scorer says which reference judgments it needs (:meth:`needed_references`);
    the judge makes them and hands them back (:meth:`ReferenceBook.add`). Then
    :meth:`decide` sets every judgment's ``score`` and ``applies``: the one place
    a verdict is decided.

    Attributes:
        calibration: The calibration (``None``: raw P(YES) is the score).
        threshold: The decision threshold on the score.
        references: The reference judgments made so far.
    """

    calibration: Calibration | None
    threshold: float
    references: ReferenceBook

    def needed_references(self, rules: Sequence[Rule]) -> list[tuple[str, list[Rule]]]:
        """Each reference input of the calibration with the rules still to judge on it (only those with some)."""
        references = self.calibration.reference_inputs if self.calibration is not None else ()
        needed = [(ref, self.references.missing(ref, rules)) for ref in references]
        return [(ref, missing) for ref, missing in needed if missing]

    def reference_log_odds(self, rule: Rule) -> tuple[float | None, float | None]:
        """The rule's mean log-odds of YES on the calibration's reference inputs, and their spread, if judged."""
        if self.calibration is None or not self.calibration.reference_inputs:
            return None, None
        return self.references.mean_and_spread(self.calibration.reference_inputs, rule)

    def features(self, judged: Sequence[tuple[Rule, Reading]]) -> list[float]:
        """What the calibration's global step sees for one input's judged rules.

        Each pair's log-odds with the rule's reference step (:meth:`Calibration.feature`), then, with
        ``centre_per_input``, minus the input's median over these rules (:meth:`Calibration.input_centre`).

        Args:
            judged: All of one input's ``(rule, reading)`` pairs that gave a P(YES) without error.
        """
        calibration = self.calibration or Calibration()
        row = [calibration.feature(j.p_yes, *self.reference_log_odds(r)) for r, j in judged]  # type: ignore[arg-type]
        centre = calibration.input_centre(row)
        return [x - centre for x in row]

    def decide(self, rules: Sequence[Rule], readings: Sequence[Reading]) -> list[Judgment]:
        """Each reading scored: a new :class:`Judgment` with its calibrated ``score`` and its ``applies``.

        A reading with a P(YES) applies when its score reaches the threshold;
        one read from the reply text (no logprobs) applies when it said YES;
        a failed one never applies.
        """
        judged = [(r, j) for r, j in zip(rules, readings, strict=True) if j.p_yes is not None and j.error is None]
        if self.calibration is None:
            scores = [j.p_yes for _, j in judged]
        else:
            scores = [self.calibration.map_feature(x) for x in self.features(judged)]
        by_rule = {id(j): score for (_, j), score in zip(judged, scores, strict=True)}
        return [
            Judgment(
                **{name: getattr(j, name) for name in _READING_FIELDS},
                rule_id=rule.rule_id,
                score=(score := by_rule.get(id(j))),
                applies=j.error is None and (score >= self.threshold if score is not None else bool(j.word)),
            )
            for rule, j in zip(rules, readings, strict=True)
        ]


class Scored(Protocol):
    """What a fit needs of the judge whose judgments it fits: its scorer and what its scores depend on."""

    @property
    def scorer(self) -> Scorer:
        """The judge's scorer (its calibration's reference judgments)."""
        ...

    @property
    def model_identity(self) -> str:
        """The judge model's identity."""
        ...

    @property
    def scoring_version(self) -> str:
        """The judge prompt's scoring version."""
        ...


class LabelledFit:
    """Collects one judge's labelled judgments and fits a calibration from them (``retriever.calibrate``).

    Args:
        reference_inputs: Inputs for the per-rule step; empty for none.
        standardise: Divide by the spread over the reference inputs too.
        centre_per_input: Centre each input's features on their median over the rules.
    """

    def __init__(self, reference_inputs: Sequence[str], standardise: bool, centre_per_input: bool) -> None:
        self.calibration = Calibration(
            method="identity",
            reference_inputs=tuple(reference_inputs),
            standardise=standardise,
            centre_per_input=centre_per_input,
        )
        """The calibration the examples are judged with: no global step yet."""
        self.features: list[float] = []
        self.labels: list[bool] = []

    def add(self, judge: Scored, rules: Sequence[Rule], result: MatchResult, holds: Iterable[str]) -> None:
        """Add one example: its judgments (by a judge using :attr:`calibration`) and the rules that hold.

        Raises:
            CalibrationError: When ``holds`` names a rule that is not among ``rules``.
        """
        wanted = set(holds)
        unknown = sorted(wanted - {r.rule_id for r in rules})
        if unknown:
            raise CalibrationError(f"calibration example names rule id(s) not among the rules: {', '.join(unknown)}")
        pairs = zip(rules, result.judgments, strict=True)
        judged = [(r, j) for r, j in pairs if j.p_yes is not None and j.error is None]
        self.features.extend(judge.scorer.features(judged))
        self.labels.extend(rule.rule_id in wanted for rule, _ in judged)

    def fit(self, judge: Scored, method: Method) -> Calibration:
        """Fit the examples added so far.

        Raises:
            CalibrationError: Without probabilities, or with labels of one kind only.
        """
        if not self.features:
            raise CalibrationError("no judgment gave a probability: calibration needs a judge that returns logprobs")
        return fit_calibration(
            self.features,
            self.labels,
            method=method,
            reference_inputs=self.calibration.reference_inputs,
            standardise=self.calibration.standardise,
            centre_per_input=self.calibration.centre_per_input,
            model=judge.model_identity,
            prompt_version=judge.scoring_version,
            note=f"fitted on {len(self.features)} labelled judgments ({sum(self.labels)} holding)",
        )
