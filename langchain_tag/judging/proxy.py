"""Cheap proxies of the strong judge: a score per (input, rule) pair that costs no strong call.

A cascade with a guarantee (:mod:`langchain_tag.judging.guarantee`) ranks the pairs of a job by a proxy score
and sends only the uncertain ones to the strong judge. Two proxies, selectable with :func:`fit_proxy`:

- ``"cosine"``: the cosine between the input's and the rule's embeddings (any LangChain ``Embeddings``; the
  package ships all-MiniLM-L6-v2 through ``langchain_tag.local.get_embeddings``). Nothing is fitted.
- ``"learned"``: a logistic regression fitted on strong-judge labels over cheap features: that cosine and,
  where a cheap LLM judge's P(YES) is given, its log-odds. It predicts the strong judge, false positives
  included: on a policy nobody here tuned on, a proxy learned from a small judge's verdicts kept more of its
  YES than plain cosine but lost more F1 against gold (issue 35), so measure both on gold before choosing.

The regression is a few lines of Newton's method (iteratively reweighted least squares, with a small ridge
so that separable labels still converge) over standardised features, in the standard library: with two or
three features a 3 x 3 solve is all it takes, and neither numpy nor scikit-learn is a dependency of the core
(both arrive only with the ``local`` extra), so the core stays importable without them. Inputs may be lists,
numpy arrays or pandas Series.

A learned proxy's scores depend on the labels it was fitted on: choose the guaranteed thresholds from other
labels (split the label budget), or the guarantee does not hold as stated. The cosine proxy needs no labels.

Example:
    .. code-block:: python

        features = PairFeatures(embeddings)
        rows = features.rows([(text, rule) for text, rule in pairs], cheap_p_yes=cheap_scores)
        proxy = fit_proxy("learned", [rows[i] for i in fit_part], [labels[i] for i in fit_part])
        scores = proxy.scores(rows)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from langchain_core.embeddings import Embeddings

from langchain_tag.judging._logodds import logit, sigmoid
from langchain_tag.rules import Rule

__all__ = [
    "CosineProxy",
    "LogisticProxy",
    "PairFeatures",
    "Proxy",
    "ProxyKind",
    "cosine",
    "fit_logistic",
    "fit_proxy",
    "log_odds_feature",
]

ProxyKind = Literal["cosine", "learned"]
"""Which proxy :func:`fit_proxy` makes."""


class Proxy(Protocol):
    """A score per pair from its feature row (first feature: the cosine), higher meaning more likely YES."""

    def scores(self, rows: Iterable[Sequence[float]]) -> list[float]:
        """The score of each feature row."""
        ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors (0 when either is zero).

    Raises:
        ValueError: When their lengths differ.
    """
    if len(a) != len(b):
        raise ValueError(f"vectors of different lengths: {len(a)} and {len(b)}")
    dot = sum(float(x) * float(y) for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(float(x) ** 2 for x in a)) * math.sqrt(sum(float(y) ** 2 for y in b))
    return dot / norm if norm else 0.0


class PairFeatures:
    """The cheap features of (input, rule) pairs, embedding each distinct text once.

    The rule is embedded as its :meth:`~langchain_tag.rules.Rule.search_text` (name, condition, action), the
    text a similarity index over rules embeds.

    Args:
        embeddings: Any LangChain embeddings (``langchain_tag.local.get_embeddings()`` for the packaged MiniLM).
    """

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self._vectors: dict[str, list[float]] = {}

    def _embed(self, texts: Iterable[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, self.embeddings.embed_documents(missing), strict=True))

    def cosines(self, pairs: Sequence[tuple[str, Rule | str]]) -> list[float]:
        """The cosine of each (input text, rule or rule text) pair."""
        texts = [(text, rule.search_text() if isinstance(rule, Rule) else rule) for text, rule in pairs]
        self._embed(t for pair in texts for t in pair)
        return [cosine(self._vectors[a], self._vectors[b]) for a, b in texts]

    def rows(
        self, pairs: Sequence[tuple[str, Rule | str]], *, cheap_p_yes: Sequence[Any] | None = None
    ) -> list[list[float]]:
        """Each pair's feature row: ``[cosine]``, or ``[cosine, log-odds of the cheap judge's P(YES)]``.

        Args:
            pairs: (input text, rule) pairs.
            cheap_p_yes: The cheap judge's P(YES) per pair, in the same order (a pair it could not score:
                ``None`` or NaN, taken as 0.5, log-odds 0).

        Raises:
            ValueError: When ``cheap_p_yes`` is not paired with ``pairs``.
        """
        cosines = self.cosines(pairs)
        if cheap_p_yes is None:
            return [[c] for c in cosines]
        p_yes = list(cheap_p_yes)
        if len(p_yes) != len(cosines):
            raise ValueError(f"cheap_p_yes must be paired with pairs: got {len(p_yes)} and {len(cosines)}")
        return [[c, log_odds_feature(p)] for c, p in zip(cosines, p_yes, strict=True)]


def log_odds_feature(p: Any) -> float:
    """A cheap judge's P(YES) as a feature: its log-odds, 0 when it gave none (``None`` or NaN)."""
    if p is None:
        return 0.0
    value = float(p)
    return 0.0 if math.isnan(value) else logit(value)


@dataclass(frozen=True)
class CosineProxy:
    """The plain-cosine proxy: a pair's score is its first feature, the cosine. Nothing is fitted."""

    def scores(self, rows: Iterable[Sequence[float]]) -> list[float]:
        """The cosine of each row."""
        return [float(row[0]) for row in rows]


@dataclass(frozen=True)
class LogisticProxy:
    """A fitted logistic regression: P(strong YES) = sigmoid(intercept + coef . row).

    Attributes:
        coef: One weight per feature (on the features as given, not standardised).
        intercept: The bias.
        labels: Labels it was fitted on.
    """

    coef: tuple[float, ...]
    intercept: float
    labels: int

    def score(self, row: Sequence[float]) -> float:
        """The predicted probability that the strong judge says YES.

        Raises:
            ValueError: When the row has not one value per weight.
        """
        if len(row) != len(self.coef):
            raise ValueError(f"a feature row of {len(row)} values for a proxy of {len(self.coef)} features")
        return sigmoid(self.intercept + sum(w * float(x) for w, x in zip(self.coef, row, strict=True)))

    def scores(self, rows: Iterable[Sequence[float]]) -> list[float]:
        """The predicted probability of each row."""
        return [self.score(row) for row in rows]


def fit_logistic(
    rows: Sequence[Sequence[float]] | Any,
    labels: Sequence[bool] | Any,
    *,
    ridge: float = 1e-2,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> LogisticProxy:
    """Fit a logistic regression by Newton's method with an L2 penalty on the (standardised) weights.

    Args:
        rows: One feature row per labelled pair (a list of lists, a 2-D numpy array, a DataFrame's values).
        labels: The strong judge's verdict per row.
        ridge: L2 penalty on the standardised weights (not the intercept), > 0, so that labels a feature
            separates perfectly still give finite weights.
        max_iter: Most Newton steps.
        tol: Stop when no parameter moves more than this.

    Returns:
        The fitted proxy.

    Raises:
        ValueError: On no rows, unpaired rows and labels, rows of different lengths, a non-finite feature, a
            ridge not above 0, or labels all of one class.
    """
    data = [[float(x) for x in row] for row in rows]
    ys = [1.0 if bool(y) else 0.0 for y in labels]
    if not data:
        raise ValueError("fit_logistic needs at least one labelled row")
    if len(data) != len(ys):
        raise ValueError(f"rows and labels must be paired: got {len(data)} and {len(ys)}")
    width = len(data[0])
    if width == 0 or any(len(row) != width for row in data):
        raise ValueError("every feature row must hold the same number (> 0) of features")
    if any(not math.isfinite(x) for row in data for x in row):
        raise ValueError("a feature is not a finite number")
    if ridge <= 0:
        raise ValueError(f"ridge must be > 0, got {ridge}")
    if len(set(ys)) < 2:
        raise ValueError("the labels are all of one class: a proxy cannot be learned from them")
    n = len(data)
    means = [sum(row[j] for row in data) / n for j in range(width)]
    spreads = [math.sqrt(sum((row[j] - means[j]) ** 2 for row in data) / n) or 1.0 for j in range(width)]
    xs = [[1.0] + [(row[j] - means[j]) / spreads[j] for j in range(width)] for row in data]
    size = width + 1
    beta = [0.0] * size
    for _ in range(max_iter):
        grad = [0.0] * size
        hess = [[0.0] * size for _ in range(size)]
        for x, y in zip(xs, ys, strict=True):
            p = sigmoid(sum(b * v for b, v in zip(beta, x, strict=True)))
            w = p * (1 - p)
            for a in range(size):
                grad[a] += (p - y) * x[a]
                for c in range(a, size):
                    hess[a][c] += w * x[a] * x[c]
        for a in range(size):
            for c in range(a):
                hess[a][c] = hess[c][a]
        for a in range(1, size):  # the ridge, on the weights only
            grad[a] += ridge * beta[a]
            hess[a][a] += ridge
        step = _solve(hess, grad)
        beta = [b - s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < tol:
            break
    coef = tuple(beta[j + 1] / spreads[j] for j in range(width))
    intercept = beta[0] - sum(c * m for c, m in zip(coef, means, strict=True))
    return LogisticProxy(coef=coef, intercept=intercept, labels=n)


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Solve ``matrix @ x = vector`` by Gaussian elimination with partial pivoting (small, positive definite)."""
    size = len(vector)
    rows = [[*matrix[i], vector[i]] for i in range(size)]
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        head = rows[col][col] or 1e-300
        for r in range(col + 1, size):
            factor = rows[r][col] / head
            if factor:
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col], strict=True)]
    x = [0.0] * size
    for r in range(size - 1, -1, -1):
        x[r] = (rows[r][size] - sum(rows[r][c] * x[c] for c in range(r + 1, size))) / (rows[r][r] or 1e-300)
    return x


def fit_proxy(
    kind: ProxyKind,
    rows: Sequence[Sequence[float]] | Any = (),
    labels: Sequence[bool] | Any = (),
    *,
    ridge: float = 1e-2,
) -> Proxy:
    """The proxy of a kind: ``"cosine"`` (nothing fitted, rows and labels unused) or ``"learned"``.

    Args:
        kind: ``"cosine"`` or ``"learned"``.
        rows: The labelled pairs' feature rows (:meth:`PairFeatures.rows`), for ``"learned"``.
        labels: The strong judge's verdict per row, for ``"learned"``.
        ridge: The learned proxy's L2 penalty (:func:`fit_logistic`).

    Returns:
        The proxy.

    Raises:
        ValueError: For an unknown kind, or what :func:`fit_logistic` refuses.
    """
    if kind == "cosine":
        return CosineProxy()
    if kind == "learned":
        return fit_logistic(rows, labels, ridge=ridge)
    raise ValueError(f"unknown proxy kind {kind!r}: use 'cosine' or 'learned'")
