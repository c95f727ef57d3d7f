"""Integration test: judging through Ray Data against the embedded model gives the in-process verdicts.

A handful of inputs and rules, judged once in process and once through a
local Ray instance that posts the same requests to the same llama.cpp
server. Needs the ``local`` and ``ray`` extras (a few minutes on two CPU
cores).
"""

from __future__ import annotations

import pytest

from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.local.models import ModelConfig, get_chat_model
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule

pytestmark = [pytest.mark.integration, pytest.mark.allow_hosts(["127.0.0.1"])]

INPUTS = [
    "from os import *\n\nprint(getcwd())",
    "import os, sys\n\n\ndef collect(item, bucket=[]):\n    bucket.append(item)\n    return bucket",
    "try:\n\trun()\nexcept:\n\tpass",
]


def test_ray_verdicts_equal_in_process_on_the_local_model(
    local_config: ModelConfig, local_ray: None, rules: list[Rule]
) -> None:
    from langchain_tag.scale.ray_data import judge_with_ray

    # llama.cpp's prompt cache makes P(YES) drift in the third decimal between runs of the same prompt (in
    # process too): with it off each prompt is evaluated whole, and the two paths can be compared exactly.
    judge = get_chat_model(local_config, role="judge", extra_body={"cache_prompt": False})
    rules = [r for r in rules if r.rule_id in {"R-001", "R-004", "R-005"}]
    # Raw P(YES) (no reference judgments) keeps the run short; the scoring path is the same either way.
    in_process = ApplicabilityRetriever(llm=judge, rules=rules, cache=InMemoryVerdictCache(), calibration=None)
    for_ray = ApplicabilityRetriever(llm=judge, rules=rules, cache=InMemoryVerdictCache(), calibration=None)
    expected = [in_process.match(q) for q in INPUTS]

    run = judge_with_ray(for_ray, INPUTS)

    assert run.failures == []
    assert run.sent == len(INPUTS) * len(rules)
    for result, want in zip(run.results, expected, strict=True):
        assert result.calls == 0
        assert all(j.error is None for j in [*result.judgments, *want.judgments])
        assert [(j.rule_id, j.applies) for j in result.judgments] == [(j.rule_id, j.applies) for j in want.judgments]
        assert [j.p_yes for j in result.judgments] == pytest.approx([j.p_yes for j in want.judgments], abs=1e-6)
    # Verdicts were read from first-token logprobs, not from the reply text.
    assert all(j.p_yes is not None for r in run.results for j in r.judgments)
