"""Cheap proxies of the strong judge: plain cosine, and a logistic regression fitted on its labels."""

from __future__ import annotations

import math
import random

import pytest

from langchain_tag.judging._logodds import logit
from langchain_tag.judging.guarantee import guaranteed_thresholds, label_sample
from langchain_tag.judging.proxy import (
    CosineProxy,
    LogisticProxy,
    PairFeatures,
    cosine,
    fit_logistic,
    fit_proxy,
)
from langchain_tag.rules import Rule
from langchain_tag.testing import HashingEmbeddings


class _Counting(HashingEmbeddings):
    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return super().embed_documents(texts)


RULES = [
    Rule(
        rule_id="R1",
        rule_name="mutable default argument",
        condition="a default argument is a list or dict",
        action="use None as the default",
    ),
    Rule(
        rule_id="R2",
        rule_name="bare except clause",
        condition="an except clause names no exception class",
        action="catch the specific exception",
    ),
    Rule(
        rule_id="R3",
        rule_name="global statement",
        condition="a function uses the global statement",
        action="pass the value as an argument",
    ),
]
WORDS = {"R1": "mutable default argument list dict", "R2": "bare except clause exception", "R3": "global statement"}
FILLER = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]


def _corpus(seed: int, n: int = 300) -> tuple[list[tuple[str, Rule]], list[bool]]:
    """Inputs that share words with the rules they trigger; the fake strong judge says YES exactly then."""
    rng = random.Random(seed)
    pairs, strong = [], []
    for _ in range(n):
        triggered = {r.rule_id for r in RULES if rng.random() < 0.3}
        words = rng.sample(FILLER, 6) + [w for rid in sorted(triggered) for w in WORDS[rid].split()]
        rng.shuffle(words)
        text = " ".join(words)
        for rule in RULES:
            pairs.append((text, rule))
            strong.append(rule.rule_id in triggered)
    return pairs, strong


def _auc(scores: list[float], labels: list[bool]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    return sum((p > q) + 0.5 * (p == q) for p in pos for q in neg) / (len(pos) * len(neg))


def test_cosine() -> None:
    assert cosine([1, 0], [1, 0]) == pytest.approx(1.0)
    assert cosine([1, 0], [0, 2]) == pytest.approx(0.0)
    assert cosine([1, 1], [-1, -1]) == pytest.approx(-1.0)
    assert cosine([0, 0], [1, 0]) == 0.0
    with pytest.raises(ValueError, match="different lengths"):
        cosine([1], [1, 2])


def test_pair_features_embed_each_text_once_and_rank_triggering_pairs_higher() -> None:
    embeddings = _Counting()
    features = PairFeatures(embeddings)
    pairs, strong = _corpus(0, n=50)
    rows = features.rows(pairs)
    assert all(len(r) == 1 for r in rows)
    assert len(embeddings.embedded) == len(set(embeddings.embedded))
    features.rows(pairs)
    assert len(embeddings.embedded) == len(set(embeddings.embedded))  # the second call embeds nothing new
    assert _auc([r[0] for r in rows], strong) > 0.9


def test_rows_add_the_cheap_judges_log_odds() -> None:
    features = PairFeatures(HashingEmbeddings())
    rows = features.rows([("a b", "a b"), ("a b", "c d"), ("x", "y")], cheap_p_yes=[0.9, None, float("nan")])
    assert rows[0] == [pytest.approx(1.0), pytest.approx(logit(0.9))]
    assert rows[1][1] == 0.0 and rows[2][1] == 0.0
    with pytest.raises(ValueError, match="paired"):
        features.rows([("a", "b")], cheap_p_yes=[0.1, 0.2])


def test_fit_logistic_recovers_the_generating_model() -> None:
    rng = random.Random(0)
    rows = [[rng.gauss(0, 1), rng.gauss(2, 3)] for _ in range(4000)]
    labels = [rng.random() < 1 / (1 + math.exp(-(0.5 + 2.0 * a - 0.5 * b))) for a, b in rows]
    proxy = fit_logistic(rows, labels, ridge=1e-6)
    assert proxy.coef == (pytest.approx(2.0, abs=0.25), pytest.approx(-0.5, abs=0.1))
    assert proxy.intercept == pytest.approx(0.5, abs=0.25)
    assert proxy.labels == 4000
    assert 0.0 < proxy.score([0.0, 0.0]) < 1.0


def test_fit_logistic_converges_on_separable_labels_and_accepts_numpy() -> None:
    np = pytest.importorskip("numpy")
    rows = np.asarray([[0.1], [0.2], [0.3], [0.7], [0.8], [0.9]])
    labels = np.asarray([False, False, False, True, True, True])
    proxy = fit_logistic(rows, labels)
    assert all(math.isfinite(c) for c in proxy.coef)
    scores = proxy.scores(rows)
    assert scores == sorted(scores) and scores[0] < 0.5 < scores[-1]


@pytest.mark.parametrize(
    ("rows", "labels", "message"),
    [
        ([], [], "at least one"),
        ([[1.0]], [True, False], "paired"),
        ([[1.0], [1.0, 2.0]], [True, False], "same number"),
        ([[float("inf")], [1.0]], [True, False], "finite"),
        ([[1.0], [2.0]], [True, True], "one class"),
    ],
)
def test_fit_logistic_refuses_bad_input(rows: list[list[float]], labels: list[bool], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_logistic(rows, labels)


def test_fit_proxy_selects_cosine_or_learned() -> None:
    assert isinstance(fit_proxy("cosine"), CosineProxy)
    assert fit_proxy("cosine").scores([[0.3, 5.0], [0.1, 9.0]]) == [0.3, 0.1]
    assert isinstance(fit_proxy("learned", [[0.1], [0.9]], [False, True]), LogisticProxy)
    with pytest.raises(ValueError, match="unknown proxy kind"):
        fit_proxy("forest", [], [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a feature row of 2 values"):
        fit_proxy("learned", [[0.1], [0.9]], [False, True]).scores([[0.1, 0.2]])  # type: ignore[union-attr]


def test_learned_proxy_uses_an_informative_cheap_judge() -> None:
    pairs, strong = _corpus(1)
    rng = random.Random(1)
    cheap = [min(max(rng.gauss(0.75 if y else 0.25, 0.15), 0.01), 0.99) for y in strong]
    rows = PairFeatures(HashingEmbeddings()).rows(pairs, cheap_p_yes=cheap)
    fit_part = label_sample(len(rows), 200, seed=1)
    proxy = fit_proxy("learned", [rows[i] for i in fit_part], [strong[i] for i in fit_part])
    assert proxy.coef[0] > 0 and proxy.coef[1] > 0  # type: ignore[attr-defined]
    assert _auc(proxy.scores(rows), strong) >= _auc(CosineProxy().scores(rows), strong)


@pytest.mark.parametrize("kind", ["cosine", "learned"])
def test_proxy_then_guaranteed_thresholds_keep_the_strong_judges_recall(kind: str) -> None:
    held = 0
    for seed in range(20):
        pairs, strong = _corpus(100 + seed)
        rows = PairFeatures(HashingEmbeddings()).rows(pairs)
        picked = label_sample(len(rows), 400, seed=seed)
        fit_part, test_part = picked[::2], picked[1::2]  # a learned proxy is fitted on labels the test never sees
        proxy = fit_proxy(kind, [rows[i] for i in fit_part], [strong[i] for i in fit_part])  # type: ignore[arg-type]
        scores = proxy.scores(rows)
        labels = {i: strong[i] for i in picked}
        rule = guaranteed_thresholds(scores, {i: strong[i] for i in test_part}, target_recall=0.9, delta=0.1)
        kept = sum(
            y and (i in labels or rule.route(s) != "no") for i, (s, y) in enumerate(zip(scores, strong, strict=True))
        )
        held += kept / sum(strong) >= 0.9
        assert rule.t_low is not None and rule.strong_share < 0.6
    assert held >= 18
