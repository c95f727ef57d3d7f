"""Task builders and the extraction cache, on tiny synthetic data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.documents import Document

from bench_tests.unit_tests.test_nba import CATALOG, DRAFT, MINIMUM, SIGN_TRADE
from langchain_tag.rules import save_rules
from langchain_tag.testing import HashingEmbeddings, fake_extractor
from langchain_tag_bench.data import BenchDataError
from langchain_tag_bench.methods import parse_methods
from langchain_tag_bench.nba import CATALOG_FILE
from langchain_tag_bench.prompts import BENCH_EXECUTOR_PROMPTS, BENCH_JUDGE_PROMPTS, NBA_FIELDS
from langchain_tag_bench.runner import run_benchmark
from langchain_tag_bench.tasks import cached_extraction, judge_prompt, nba_task

POLICY = (
    "# Imports\n\nWildcard imports must not be used; when a module is imported with a wildcard, "
    "replace it with explicit names.\n\n# Defaults\n\nIf a function uses a list as a default argument, "
    "use None instead and build the list inside the function.\n"
)


@pytest.fixture
def nba_dir(tmp_path: Path) -> Path:
    (tmp_path / "comp_0.json").write_text(json.dumps([DRAFT, MINIMUM]))
    (tmp_path / "comp_1.json").write_text(json.dumps([SIGN_TRADE]))
    (tmp_path / "comp_2.json").write_text(json.dumps([]))
    (tmp_path / CATALOG_FILE).write_text(json.dumps(CATALOG))
    (tmp_path / "reference_rules.txt").write_text("Article VII. The Salary Cap.\n\nA team may not exceed the cap.")
    return tmp_path


def test_nba_task_items_rules_and_scoring(nba_dir: Path) -> None:
    task = nba_task(nba_dir)
    assert [(i.key, i.group) for i in task.items] == [("L0-000", "L0"), ("L0-001", "L0"), ("L1-000", "L1")]
    # Gold rule ids are the catalog's ids only ("missing_rule_variant" is not in the catalog).
    assert task.items[0].gold_rules == ("stepien_rule_no_sell_or_no_consecutive_first_round_draft_pick_trade",)
    assert [r.rule_id for r in task.load_rules(None)] == [c["rule_id"] for c in CATALOG]
    assert task.sources[0].page_content.startswith("Article VII")
    assert task.groups == ("L0", "L1", "L2") and task.executor_domain is BENCH_EXECUTOR_PROMPTS["nba"]
    assert task.judge_predicate == "applicability"
    draft = task.items[0]  # gold: illegal, operation A, team A
    right = '{"answer": true, "illegal_operation": "A", "problematic_team": "A", "rationale": "x"}'
    wrong_team = '{"answer": true, "illegal_operation": "A", "problematic_team": "B", "rationale": "x"}'
    assert task.score(draft, right) == {"strict": True, "answer": True, "parsed": True}
    assert task.score(draft, wrong_team) == {"strict": False, "answer": True, "parsed": True}
    assert task.score(draft, "no idea") == {"strict": False, "answer": False, "parsed": False}


def test_nba_task_with_a_rule_file_has_no_gold_ids(nba_dir: Path, tmp_path: Path, rules: list) -> None:
    path = tmp_path / "rules.jsonl"
    save_rules(rules, path)
    task = nba_task(nba_dir, rules_file=path, limit=1)
    assert all(i.gold_rules is None for i in task.items)
    assert [r.rule_id for r in task.load_rules(None)] == [r.rule_id for r in rules]


def test_nba_similarity_query_and_rule_text(nba_dir: Path, tmp_path: Path) -> None:
    task = nba_task(nba_dir, query="operations", rule_text="condition")
    assert task.items[0].search_text == DRAFT["operations"][0]  # the judge and executor still see the whole text
    assert task.items[0].text.startswith("Team situations:")
    run = run_benchmark(
        task,
        parse_methods("rules_similarity@1"),
        tmp_path / "run",
        embeddings=HashingEmbeddings(size=1024),
        retrieval_only=True,
        show_progress=False,
    )
    tops = [r["units"] for r in run.records(run.methods[0])]
    assert tops[0] == ["stepien_rule_no_sell_or_no_consecutive_first_round_draft_pick_trade"]
    assert tops[1] == ["minimum_player_salary_exception"]


def test_nba_limit_is_spread_over_levels(nba_dir: Path) -> None:
    assert [i.key for i in nba_task(nba_dir, limit=2).items] == ["L0-000", "L1-000"]
    assert [i.key for i in nba_task(nba_dir, limit=2, levels=(0,)).items] == ["L0-000", "L0-001"]
    assert [i.key for i in nba_task(nba_dir, limit=1, levels=(1, 0)).items] == ["L1-000"]


def test_nba_task_needs_the_reference_text(nba_dir: Path) -> None:
    (nba_dir / "reference_rules.txt").unlink()
    with pytest.raises(BenchDataError, match=r"reference_rules\.txt"):
        nba_task(nba_dir)


def test_phase_ablation_without_an_extractor_is_a_clear_error(nba_dir: Path) -> None:
    with pytest.raises(ValueError, match="needs an extraction model"):
        nba_task(nba_dir).load_rules(3)


def test_cached_extraction_reuses_rules_and_keys_on_settings(tmp_path: Path) -> None:
    docs = [Document(page_content=POLICY, metadata={"source": "policy.md"})]
    first = fake_extractor()
    rules = cached_extraction("toy", docs, lambda: first, domain="style", task_input="code", cache_dir=tmp_path)
    assert rules and first.calls > 0
    second = fake_extractor()
    again = cached_extraction("toy", docs, lambda: second, domain="style", task_input="code", cache_dir=tmp_path)
    assert second.calls == 0 and [r.model_dump() for r in again] == [r.model_dump() for r in rules]
    third = fake_extractor()
    cached_extraction("toy", docs, lambda: third, domain="style", task_input="code", skip_phase=4, cache_dir=tmp_path)
    assert third.calls > 0
    files = sorted(p.name for p in (tmp_path / "bench-rules").glob("*.jsonl"))
    assert len(files) == 2 and files[1].startswith("toy-no-p4-")
    assert list((tmp_path / "bench-rules").glob("*.report.json"))


def test_benchmark_judges_are_passed_as_prompt_objects(nba_dir: Path) -> None:
    assert nba_task(nba_dir, judge_predicate="nba").judge_predicate is BENCH_JUDGE_PROMPTS["nba"]
    assert judge_prompt("passage") is BENCH_JUDGE_PROMPTS["passage"]
    assert judge_prompt("applicability") == "applicability"  # core names are resolved by the core


def test_cached_extraction_keys_on_extra_fields(tmp_path: Path) -> None:
    docs = [Document(page_content=POLICY, metadata={"source": "policy.md"})]
    first = fake_extractor()
    cached_extraction("toy", docs, lambda: first, domain="style", task_input="code", cache_dir=tmp_path)
    rich = fake_extractor()
    cached_extraction(
        "toy", docs, lambda: rich, domain="style", task_input="code", cache_dir=tmp_path, extra_fields=NBA_FIELDS
    )
    assert first.calls > 0 and rich.calls > 0
    assert len(list((tmp_path / "bench-rules").glob("toy-*.jsonl"))) == 2
