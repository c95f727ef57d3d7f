"""Integration test: a Batch API results file made of the embedded model's verdicts imports to the same verdicts.

The embedded model judges a few pairs in process; the same job is exported
as a batch, answered with those verdicts (``batch_results_from_cache``),
imported into an empty cache through a :class:`BatchResultsModel` named as
the embedded model, and matched with no call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_tag.calls._identity import model_identity
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, SQLiteVerdictCache
from langchain_tag.local.models import ModelConfig, get_chat_model
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.batch_api import BatchResultsModel, export_openai_batch, import_openai_batch
from langchain_tag.scale.inputs import InputItem
from langchain_tag.testing import batch_results_from_cache

pytestmark = [pytest.mark.integration, pytest.mark.allow_hosts(["127.0.0.1"])]

ITEMS = [
    InputItem(id="wildcard", text="from os import *\n\nprint(getcwd())"),
    InputItem(id="default", text="def collect(item, bucket=[]):\n    bucket.append(item)\n    return bucket"),
]


def test_batch_results_of_the_local_model_import_to_its_verdicts(
    local_config: ModelConfig, rules: list[Rule], tmp_path: Path
) -> None:
    judge = get_chat_model(local_config, role="judge")
    rules = [r for r in rules if r.rule_id in {"R-001", "R-004", "R-005"}]
    local_cache = InMemoryVerdictCache()
    in_process = ApplicabilityRetriever(llm=judge, rules=rules, cache=local_cache, calibration=None)
    expected = {item.id: in_process.match(item.text) for item in ITEMS}

    batch_model = BatchResultsModel(model_name=model_identity(judge))
    importer = ApplicabilityRetriever(
        llm=batch_model, rules=rules, cache=SQLiteVerdictCache(tmp_path / "v.sqlite"), calibration=None
    )
    files = export_openai_batch(
        (importer, ITEMS), tmp_path / "batch", model_name=batch_model.model_name, max_requests=4
    )
    assert len(files) == 2  # 6 requests split at 4 per file
    answered = batch_results_from_cache(tmp_path / "batch", local_cache, tmp_path / "results.jsonl")
    assert answered == len(ITEMS) * len(rules)

    summary = import_openai_batch(tmp_path / "results.jsonl", importer, tmp_path / "batch")

    assert summary.complete and summary.recorded == answered
    for item in ITEMS:
        got, want = importer.match(item.text), expected[item.id]
        assert got.calls == 0 and not got.failed and not want.failed
        assert [(j.rule_id, j.applies) for j in got.judgments] == [(j.rule_id, j.applies) for j in want.judgments]
        assert [j.p_yes for j in got.judgments] == pytest.approx([j.p_yes for j in want.judgments], abs=1e-9)
    assert all(j.p_yes is not None for r in expected.values() for j in r.judgments)
