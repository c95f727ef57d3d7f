"""The package's own pipeline on the real local model: judge prompts, retriever, extraction.

Assertions are about ranking and structure rather than exact wording, since
the small local model's scores are NO-biased (see the README).
"""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_tag import ApplicabilityRetriever, Rule, RuleDocumentTransformer
from langchain_tag.local.models import ModelConfig, get_chat_model

pytestmark = [pytest.mark.integration, pytest.mark.allow_hosts(["127.0.0.1"])]

RULES = [
    Rule(
        rule_id="W1",
        rule_name="wildcard import",
        condition="the input imports with `from <module> import *`",
        action="import the names explicitly",
        category_tags=["imports"],
    ),
    Rule(
        rule_id="M1",
        rule_name="mutable default argument",
        condition="a function in the input has a list `[]` as the default value of a parameter",
        action="default to None and create the list inside",
        category_tags=["functions"],
    ),
    Rule(
        rule_id="P1",
        rule_name="print call",
        condition="the input calls the `print` function",
        action="use logging instead",
        category_tags=["output"],
    ),
]
INPUTS = {
    "W1": "from os.path import *\n\nresult = join('a', 'b')",
    "M1": "def collect(item, bucket=[]):\n    bucket.append(item)\n    return bucket",
    "P1": "total = 1 + 2\nprint(total)",
}


@pytest.fixture(scope="module")
def retriever(local_config: ModelConfig) -> ApplicabilityRetriever:
    return ApplicabilityRetriever(llm=get_chat_model(local_config, role="judge"), rules=RULES, max_concurrency=1)


@pytest.fixture(scope="module")
def named_retriever(local_config: ModelConfig) -> ApplicabilityRetriever:
    judge = get_chat_model(local_config, role="judge")
    return ApplicabilityRetriever(llm=judge, rules=RULES, predicate="applicability-named", max_concurrency=1)


@pytest.mark.parametrize("holding", sorted(INPUTS))
def test_with_named_rules_the_holding_rule_ranks_first(named_retriever: ApplicabilityRetriever, holding: str) -> None:
    # Across rules, raw P(YES) is comparable only for the prompt that shows names and tags; the default
    # statement prompt leaves per-rule bias to the calibration (next test).
    result = named_retriever.match(INPUTS[holding])
    assert not result.failed and result.completion_tokens == len(RULES)  # one-token verdicts
    scores = {j.rule_id: j.p_yes for j in result.judgments}
    assert all(p is not None for p in scores.values()), "the local judge must return logprobs"
    best = max(scores, key=lambda rid: scores[rid])
    assert best == holding, f"P(YES) per rule: {scores}"


@pytest.mark.parametrize("rule_id", sorted(INPUTS))
def test_each_rule_scores_highest_on_the_input_it_holds_for(retriever: ApplicabilityRetriever, rule_id: str) -> None:
    results = {holding: retriever.match(text) for holding, text in INPUTS.items()}
    judged = [j for r in results.values() for j in r.judgments if not j.cached]
    assert all(not r.failed for r in results.values())
    assert all(j.completion_tokens == 1 for j in judged)  # one-token verdicts (cached ones cost none)
    raw = {h: next(j.p_yes for j in r.judgments if j.rule_id == rule_id) for h, r in results.items()}
    score = {h: next(j.score for j in r.judgments if j.rule_id == rule_id) for h, r in results.items()}
    assert max(raw, key=lambda h: raw[h]) == rule_id, f"P(YES) of {rule_id} per input: {raw}"
    assert max(score, key=lambda h: score[h]) == rule_id, f"calibrated score of {rule_id} per input: {score}"


def test_extraction_end_to_end(local_config: ModelConfig) -> None:
    text = (
        "Imports\n=======\n\n"
        "Wildcard imports such as `from module import *` must not be used; import each name explicitly.\n"
    )
    transformer = RuleDocumentTransformer(
        get_chat_model(local_config, role="extractor"),
        domain="Python style guide",
        task_input="a snippet of Python code",
        max_concurrency=1,
        units_per_call=1,
    )
    docs = transformer.transform_documents([Document(page_content=text, id="style.rst")])
    result = transformer.last_result
    assert result is not None and docs
    assert not result.report.failures
    assert result.report.faithfulness == 1.0 and result.report.coverage == 1.0
    for rule in result.rules:
        assert text[rule.source_start : rule.source_end] == rule.source_text
        assert rule.condition and rule.action and rule.document_id == "style.rst"
    assert any("import" in (r.condition + r.action).lower() for r in result.rules)


def test_the_local_judge_uses_its_shipped_calibration(retriever: ApplicabilityRetriever) -> None:
    calibration = retriever.judge.calibration
    assert calibration is not None and calibration.reference_inputs, "the local model must not be thresholded raw"
    result = retriever.match(INPUTS["W1"])
    scores = {j.rule_id: (j.p_yes, j.score) for j in result.judgments}
    assert all(raw is not None and score is not None for raw, score in scores.values())
    mean, _ = retriever.judge.reference_log_odds(RULES[0])
    assert mean is not None  # the reference inputs were judged (once, through the verdict cache)
    other = {j.rule_id: j.score for j in retriever.match(INPUTS["M1"]).judgments}
    assert scores["W1"][1] > other["W1"], (scores, other)  # the rule stands out where it holds
