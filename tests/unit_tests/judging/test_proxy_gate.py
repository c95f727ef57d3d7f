"""A retriever fitted on a sample of inputs judges, on new inputs, only the pairs its proxy cannot rule out."""

from __future__ import annotations

import pytest

from langchain_tag.judging.proxy_gate import ProxyGate
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import HashingEmbeddings
from tests.unit_tests.scale.test_cascade_job import corpus, strong_judge


def test_a_fitted_retriever_judges_only_the_pairs_above_its_proxy_threshold_and_keeps_the_recall() -> None:
    items, rules, applies = corpus(inputs=200, seed=11)
    sample, held_out = items[:120], items[120:]
    llm = strong_judge(applies)
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, calibration=None, max_concurrency=4)

    fitted = retriever.fit_prefilter([item.text for item in sample], HashingEmbeddings(), target_recall=0.9, delta=0.1)

    gate = fitted.prefilter
    assert isinstance(gate, ProxyGate) and gate.threshold is not None
    assert gate.sample_inputs == 120 and gate.sample_pairs == 1200 and gate.positive_pairs > 22
    assert llm.calls == 1200  # the sample judged in full, once

    before = llm.calls
    above = kept = truth = 0
    for n, item in enumerate(held_out, start=120):
        scores = gate.scores(item.text, rules)
        above += sum(s >= gate.threshold for s in scores)
        found = {d.metadata["rule_id"] for d in fitted.invoke(item.text)}
        kept += len(found & applies[n])
        truth += len(applies[n])
    assert llm.calls - before == above < 0.7 * len(held_out) * len(rules)  # only the pairs the proxy cannot rule out
    print(f"held-out recall {kept / truth:.3f}, {above} of {len(held_out) * len(rules)} pairs judged")
    assert kept / truth >= 0.9  # the recall on held-out inputs drawn like the sample


def test_a_prefilter_fitted_on_other_rules_refuses_to_apply() -> None:
    items, rules, applies = corpus(inputs=40, seed=3)
    retriever = ApplicabilityRetriever(llm=strong_judge(applies), rules=rules, calibration=None)
    fitted = retriever.fit_prefilter([item.text for item in items], HashingEmbeddings(), target_recall=0.8, delta=0.2)
    changed = Rule(rule_id="R-0", rule_name="x", condition="The code uses something else.", action="Look.")
    other = fitted.model_copy(update={"rules": [changed, *rules[1:]]})
    with pytest.raises(ValueError, match="fitted on other rules: refit"):
        other.invoke(items[0].text)
