"""A cheap stage with a guarantee at query time: rule out the pairs whose cosine is below a fitted threshold.

:meth:`~langchain_tag.retrievers.ApplicabilityRetriever.fit_prefilter` judges every pair of a sample of the
user's own inputs (once; the verdicts go to the retriever's cache), and :func:`fit_gate` picks, with
:func:`~langchain_tag.judging.guarantee.guaranteed_thresholds` on those verdicts, the highest cosine threshold
whose recall test passes. At query time the retriever judges only the rules whose cosine with the query is at
or above it (:meth:`ProxyGate.keep`).

The assumption, and the guarantee under it: **the guarantee holds for inputs drawn like the sample.** If the
judge's YES pairs of the sample are a random sample of the YES pairs of the inputs to come, then with
probability at least ``1 - delta`` over the sample the gate keeps at least ``target_recall`` of the pairs the
judge would say YES to on those inputs. Inputs of another kind (another codebase, another language, a
changed prompt) void it; so does a changed rule set, which makes the gate refuse to apply (refit it).

Example:
    .. code-block:: python

        fitted = retriever.fit_prefilter(sample_texts, get_embeddings(), target_recall=0.9, delta=0.1)
        fitted.prefilter.threshold  # the cosine below which a rule is not judged
        fitted.invoke(new_input)  # judges only the rules at or above it
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from langchain_core.embeddings import Embeddings

from langchain_tag.judging.guarantee import guaranteed_thresholds
from langchain_tag.judging.proxy import PairFeatures, cosine
from langchain_tag.judging.results import MatchResult
from langchain_tag.rules import Rule

__all__ = ["ProxyGate", "fit_gate", "rule_fingerprint", "sample_threshold"]


def rule_fingerprint(rule: Rule) -> str:
    """A digest of what the judge and the cosine see of a rule: its id, name, condition and action."""
    text = "\x1f".join((rule.rule_id, rule.search_text(), rule.condition))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class ProxyGate:
    """A fitted cosine threshold, what it guarantees, and the rules it was fitted on.

    Attributes:
        threshold: Cosine below which a rule is not judged (``None``: the sample could not show the target;
            every rule is judged).
        target_recall: The recall of the judge's YES guaranteed on inputs drawn like the sample.
        delta: The chance, over the sample, that it does not hold.
        sample_inputs: Inputs of the sample.
        sample_pairs: Pairs judged to fit it.
        positive_pairs: Those the judge said YES to.
        fingerprints: A digest of each rule fitted on (:func:`rule_fingerprint`).
        embeddings: The embeddings of the cosine.
    """

    threshold: float | None
    target_recall: float
    delta: float
    sample_inputs: int
    sample_pairs: int
    positive_pairs: int
    fingerprints: frozenset[str]
    embeddings: Embeddings = field(repr=False, compare=False)
    _rules: dict[str, list[float]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def scores(self, query: str, rules: Sequence[Rule]) -> list[float]:
        """The cosine of ``query`` with each rule (each rule embedded once per gate)."""
        missing = [r.search_text() for r in rules if r.search_text() not in self._rules]
        if missing:
            self._rules.update(zip(missing, self.embeddings.embed_documents(missing), strict=True))
        vector = self.embeddings.embed_query(query)
        return [cosine(vector, self._rules[r.search_text()]) for r in rules]

    def keep(self, query: str, rules: Sequence[Rule]) -> list[Rule]:
        """The rules to judge for ``query``: those at or above the threshold.

        Raises:
            ValueError: When a rule is not one the gate was fitted on (the rules changed: refit).
        """
        changed = [r.rule_id for r in rules if rule_fingerprint(r) not in self.fingerprints]
        if changed:
            raise ValueError(
                f"the prefilter was fitted on other rules: refit it (fit_prefilter) for {', '.join(changed[:3])}"
            )
        if self.threshold is None:
            return list(rules)
        return [r for r, s in zip(rules, self.scores(query, rules), strict=True) if s >= self.threshold]


def fit_gate(
    inputs: Iterable[str],
    rules: Sequence[Rule],
    judge: Callable[[str, list[Rule]], MatchResult],
    embeddings: Embeddings,
    *,
    target_recall: float = 0.9,
    delta: float = 0.1,
) -> ProxyGate:
    """Judge every (input, rule) pair of the sample and fit the cosine threshold (see the module docstring).

    Args:
        inputs: The sample: inputs drawn like those the retriever will see.
        rules: The rules.
        judge: The strong judge of one input's rules (a retriever's ``judge_for().judge``).
        embeddings: The embeddings of the cosine.
        target_recall: Least recall of the judge's YES, in ``(0, 1]``.
        delta: Failure probability, in ``(0, 1)``.

    Returns:
        The gate.

    Raises:
        ValueError: On no rules, no input, or a target out of range.
    """
    texts = list(inputs)
    if not rules or not texts:
        raise ValueError("fitting a prefilter needs rules and at least one sample input")
    verdicts: list[bool] = []
    for text in texts:
        result = judge(text, list(rules))
        verdicts += [bool(j.applies) and j.error is None for j in result.judgments]
    scores = PairFeatures(embeddings).cosines([(text, rule) for text in texts for rule in rules])
    return ProxyGate(
        threshold=sample_threshold(scores, verdicts, target_recall=target_recall, delta=delta),
        target_recall=target_recall,
        delta=delta,
        sample_inputs=len(texts),
        sample_pairs=len(verdicts),
        positive_pairs=sum(verdicts),
        fingerprints=frozenset(rule_fingerprint(r) for r in rules),
        embeddings=embeddings,
    )


def sample_threshold(
    scores: Sequence[float], verdicts: Sequence[bool], *, target_recall: float, delta: float
) -> float | None:
    """The cosine threshold fitted on a fully judged sample: the recall test of ``guaranteed_thresholds``.

    >>> sample_threshold([0.1, 0.9], [False, True], target_recall=0.9, delta=0.1) is None  # too few YES
    True
    """
    rule = guaranteed_thresholds(scores, dict(enumerate(verdicts)), target_recall=target_recall, delta=delta)
    return rule.t_low
