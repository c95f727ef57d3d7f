"""The calibration map: a judge's raw P(YES) to a calibrated score, fitted from labelled pairs.

:class:`Calibration` is plain data (saved and loaded as JSON);
:func:`fit_calibration` fits its global step. The shipped defaults and the
:class:`~langchain_tag.judging.calibration._scorer.Scorer` that applies a calibration to a
judge's verdicts live in :mod:`langchain_tag.judging.calibration._scorer`, which re-exports
everything here.
"""

from __future__ import annotations

import bisect
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_tag.errors import TagError
from langchain_tag.judging._logodds import logit, sigmoid
from langchain_tag.judging.calibration._best_f1 import best_f1_cut
from langchain_tag.ranges import THRESHOLD

__all__ = ["METHODS", "Calibration", "CalibrationError", "Method", "expected_calibration_error", "fit_calibration"]

Method = Literal["identity", "threshold", "platt", "isotonic"]
METHODS: tuple[str, ...] = ("identity", "threshold", "platt", "isotonic")


class CalibrationError(TagError, ValueError):
    """A calibration could not be fitted, read or applied."""


@dataclass(frozen=True)
class Calibration:
    """A map from a judge's raw P(YES) to a calibrated score.

    Attributes:
        method: ``"identity"``, ``"threshold"``, ``"platt"`` or ``"isotonic"``.
        slope: Platt/threshold: the calibrated log-odds are
            ``slope * x + intercept``, where ``x`` is the raw log-odds minus
            the rule's reference log-odds (when ``reference_inputs`` is set).
        intercept: See ``slope``.
        points: Isotonic: ``(x, score)`` steps, ``x`` ascending.
        reference_inputs: Inputs each rule is also judged on, once: typical
            unlabelled inputs (:data:`TYPICAL_INPUTS`, or a sample of your
            own), or content-free ones such as ``"N/A"``. Their mean log-odds per rule is
            subtracted first (empty: no per-rule step).
        standardise: Also divide by the spread (standard deviation, at least
            ``min_spread``) of the rule's log-odds over the reference inputs,
            so a rule matches when an input stands out for that rule; use it
            with several typical reference inputs.
        min_spread: Floor of the spread, in log-odds.
        centre_per_input: Also subtract, for each input, the median feature
            over all the rules judged for it (:meth:`input_centre`), so a
            rule matches when it stands out among the rules for that input.
        min_centred_rules: The fewest judged rules the per-input step needs;
            with fewer, an input's features are not centred.
        threshold: The decision threshold on the calibrated score that was
            chosen with the calibration (for example for the best F1 on
            development data); a retriever without its own ``threshold``
            uses it. ``None``: 0.5.
        model: The judge model the calibration was fitted for (informational;
            :func:`default_calibration` matches on it).
        prompt_version: The judge prompt version it was fitted for.
        note: Where the numbers came from.
    """

    method: Method = "identity"
    slope: float = 1.0
    intercept: float = 0.0
    points: tuple[tuple[float, float], ...] = ()
    reference_inputs: tuple[str, ...] = ()
    standardise: bool = False
    min_spread: float = 0.25
    centre_per_input: bool = False
    min_centred_rules: int = 5
    threshold: float | None = None
    model: str | None = None
    prompt_version: str | None = None
    note: str = ""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            CalibrationError: On an unknown method or malformed parameters.
        """
        if self.method not in METHODS:
            raise CalibrationError(f"unknown calibration method {self.method!r}; choose one of: {', '.join(METHODS)}")
        if not all(math.isfinite(v) for v in (self.slope, self.intercept)):
            raise CalibrationError("calibration slope and intercept must be finite numbers")
        if self.threshold is not None and not THRESHOLD.holds(self.threshold):
            raise CalibrationError(f"calibration {THRESHOLD.message(self.threshold)}")
        if self.standardise and len(self.reference_inputs) < 2:
            raise CalibrationError("standardising needs at least two reference inputs")
        if self.min_spread <= 0:
            raise CalibrationError("min_spread must be positive")
        if self.min_centred_rules < 2:
            raise CalibrationError("min_centred_rules must be at least 2")
        if self.method == "isotonic" and not self.points:
            raise CalibrationError("an isotonic calibration needs points")
        object.__setattr__(self, "points", tuple((float(x), float(y)) for x, y in self.points))
        object.__setattr__(self, "reference_inputs", tuple(self.reference_inputs))

    @property
    def uses_reference(self) -> bool:
        """Whether scores need the rule's reference log-odds (judgments on ``reference_inputs``)."""
        return bool(self.reference_inputs)

    def feature(self, probability: float, reference: float | None = None, spread: float | None = None) -> float:
        """The value the global step sees: raw log-odds minus the rule's reference log-odds (over its spread)."""
        x = logit(probability)
        if reference is None:
            return x
        x -= reference
        if self.standardise and spread is not None:
            x /= max(spread, self.min_spread)
        return x

    def input_centre(self, features: Sequence[float]) -> float:
        """What the per-input step subtracts from each of one input's features.

        Args:
            features: The :meth:`feature` of every rule judged for the input.

        Returns:
            Their median with ``centre_per_input`` and at least
            ``min_centred_rules`` of them, else 0.
        """
        if not self.centre_per_input or len(features) < self.min_centred_rules:
            return 0.0
        return float(statistics.median(features))

    def score(self, probability: float, reference: float | None = None, spread: float | None = None) -> float:
        """The calibrated score of a raw P(YES).

        Args:
            probability: The judge's raw P(YES).
            reference: The rule's mean log-odds on ``reference_inputs``
                (ignored when the calibration has none).
            spread: The standard deviation of those log-odds (used when
                ``standardise`` is set).

        One pair on its own: the per-input step needs all of an input's rules
        (:meth:`~langchain_tag.judging.chat.ChatJudge.features`), so it is not applied here.
        """
        return self.map_feature(self.feature(probability, reference if self.uses_reference else None, spread))

    def map_feature(self, x: float) -> float:
        """The global step alone: the calibrated score of a (centred) feature."""
        if self.method == "identity":
            return sigmoid(x)
        if self.method == "isotonic":
            xs = [p[0] for p in self.points]
            i = bisect.bisect_right(xs, x) - 1
            return self.points[max(i, 0)][1]
        return sigmoid(self.slope * x + self.intercept)

    def to_dict(self) -> dict[str, Any]:
        """The calibration as JSON-ready data."""
        data = asdict(self)
        data["points"] = [list(p) for p in self.points]
        data["reference_inputs"] = list(self.reference_inputs)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        """Read a calibration written by :meth:`to_dict`.

        Raises:
            CalibrationError: On unknown keys or bad values.
        """
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise CalibrationError(f"unknown calibration field(s): {', '.join(unknown)}")
        try:
            return cls(**{**data, "points": tuple(tuple(p) for p in data.get("points", ()))})
        except (TypeError, ValueError) as exc:
            raise CalibrationError(f"bad calibration: {exc}") from exc

    def save(self, path: str | Path) -> Path:
        """Write the calibration as JSON."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        """Read a calibration saved by :meth:`save`.

        Raises:
            CalibrationError: When the file is not a calibration.
        """
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise CalibrationError(f"{path}: not JSON ({exc.msg})") from exc
        if not isinstance(data, dict):
            raise CalibrationError(f"{path}: expected a JSON object")
        return cls.from_dict(data)


def fit_calibration(
    features: Sequence[float],
    labels: Sequence[bool],
    *,
    method: Method = "platt",
    reference_inputs: Sequence[str] = (),
    standardise: bool = False,
    centre_per_input: bool = False,
    threshold: float | None = None,
    model: str | None = None,
    prompt_version: str | None = None,
    note: str = "",
) -> Calibration:
    """Fit a calibration from labelled pairs.

    Args:
        features: For each pair, the log-odds the global step sees
            (:meth:`Calibration.feature` of its raw P(YES) and, with
            ``reference_inputs``, its rule's reference log-odds).
        labels: Whether the rule's condition really holds for the pair.
        method: ``"threshold"`` (the cut-off with the best F1, moved to 0.5: midway between the lowest
            feature taken and the next one down, from the one search,
            :func:`~langchain_tag.judging.calibration._best_f1.best_f1_cut`),
            ``"platt"`` (logistic regression) or ``"isotonic"`` (pool adjacent
            violators).
        reference_inputs: Recorded on the result: the features were computed
            with these reference inputs.
        standardise: Recorded on the result: the features were standardised.
        centre_per_input: Recorded on the result: each input's features were
            centred on their median (:meth:`Calibration.input_centre`).
        threshold: Recorded on the result: the decision threshold to use.
        model: Recorded on the result.
        prompt_version: Recorded on the result.
        note: Recorded on the result.

    Raises:
        CalibrationError: Without both a positive and a negative example, or
            with mismatched lengths.
    """
    xs, ys = [float(x) for x in features], [1 if y else 0 for y in labels]
    if len(xs) != len(ys):
        raise CalibrationError(f"{len(xs)} features but {len(ys)} labels")
    if not xs or len(set(ys)) < 2:
        raise CalibrationError("fitting a calibration needs at least one positive and one negative example")
    if not all(math.isfinite(x) for x in xs):
        raise CalibrationError("features must be finite log-odds")
    common: dict[str, Any] = {
        "reference_inputs": tuple(reference_inputs),
        "standardise": standardise,
        "centre_per_input": centre_per_input,
        "threshold": threshold,
        "model": model,
        "prompt_version": prompt_version,
        "note": note,
    }
    if method == "threshold":
        best = best_f1_cut(xs, [bool(y) for y in ys])
        assert best is not None  # some features, no floor
        return Calibration(method="threshold", slope=1.0, intercept=-best.midpoint, **common)
    if method == "platt":
        slope, intercept = _platt(xs, ys)
        return Calibration(method="platt", slope=slope, intercept=intercept, **common)
    if method == "isotonic":
        return Calibration(method="isotonic", points=_isotonic(xs, ys), **common)
    raise CalibrationError(f"cannot fit calibration method {method!r}; choose threshold, platt or isotonic")


def _platt(xs: list[float], ys: list[int], *, iterations: int = 100, ridge: float = 1e-3) -> tuple[float, float]:
    """Logistic regression of ``ys`` on ``xs`` (Newton's method, Platt's smoothed targets, a small ridge).

    Each Newton step is halved until the loss goes down, so nearly separable data (a few labelled examples
    far apart) converge instead of overshooting.
    """
    n_pos, n_neg = sum(ys), len(ys) - sum(ys)
    targets = [(n_pos + 1) / (n_pos + 2) if y else 1 / (n_neg + 2) for y in ys]

    def loss(a: float, b: float) -> float:
        total = 0.5 * ridge * a * a
        for x, t in zip(xs, targets, strict=True):
            z = a * x + b
            # cross-entropy with soft targets, written to stay finite for large |z|
            total += max(z, 0.0) - t * z + math.log1p(math.exp(-abs(z)))
        return total

    a, b = 1.0, 0.0
    current = loss(a, b)
    for _ in range(iterations):
        g_a = g_b = h_aa = h_ab = h_bb = 0.0
        for x, t in zip(xs, targets, strict=True):
            p = sigmoid(a * x + b)
            w = p * (1 - p)
            g_a += (p - t) * x
            g_b += p - t
            h_aa += w * x * x
            h_ab += w * x
            h_bb += w
        g_a += ridge * a
        h_aa += ridge
        h_bb += 1e-9
        det = h_aa * h_bb - h_ab * h_ab
        if abs(det) < 1e-12:
            break
        da = (h_bb * g_a - h_ab * g_b) / det
        db = (h_aa * g_b - h_ab * g_a) / det
        step = 1.0
        while step > 1e-6:
            trial = loss(a - step * da, b - step * db)
            if trial <= current:
                break
            step /= 2
        else:
            break
        a, b, current = a - step * da, b - step * db, trial
        if abs(step * da) < 1e-9 and abs(step * db) < 1e-9:
            break
    return a, b


def _isotonic(xs: list[float], ys: list[int]) -> tuple[tuple[float, float], ...]:
    """Pool adjacent violators: a non-decreasing step function as ``(x where the step starts, value)``."""
    pairs = sorted(zip(xs, ys, strict=True))
    blocks: list[list[float]] = []  # [start x, sum of y, count]
    for x, y in pairs:
        blocks.append([x, float(y), 1.0])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            blocks[-1][1] += last[1]
            blocks[-1][2] += last[2]
    return tuple((start, total / count) for start, total, count in blocks)


def expected_calibration_error(scores: Sequence[float], labels: Sequence[bool], *, bins: int = 10) -> float:
    """Expected calibration error: the count-weighted gap between mean score and positive rate, in equal-width bins."""
    if not scores:
        return 0.0
    totals = [[0.0, 0.0, 0] for _ in range(bins)]
    for s, y in zip(scores, labels, strict=True):
        b = totals[min(int(s * bins), bins - 1)]
        b[0] += s
        b[1] += 1.0 if y else 0.0
        b[2] += 1
    return sum(abs(b[0] - b[1]) for b in totals if b[2]) / len(scores)
