"""The NBA loader and retrieval runs, on a tiny synthetic data directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from langchain_tag_bench.metrics import NbaVerdict
from langchain_tag_bench.nba import (
    CATALOG_FILE,
    NbaDataError,
    catalog_rules,
    gold_coverage,
    gold_in_catalog,
    load_problems,
    query_text,
    rule_name_from_id,
    tags_from_id,
)

CATALOG = [
    {
        "rule_id": "salary_cap_no_exceed_without_exception",
        "description": "A team may not exceed the salary cap without an exception.",
    },
    {
        "rule_id": "minimum_player_salary_exception",
        "description": "A team may sign a player for the minimum player salary.",
    },
    {
        "rule_id": "sign_and_trade_3_to_4_year",
        "description": "A sign and trade contract must run three to four seasons.",
    },
    {
        "rule_id": "stepien_rule_no_sell_or_no_consecutive_first_round_draft_pick_trade",
        "description": "A team may not trade its first round draft picks in consecutive future years.",
    },
]


def _record(
    team: str,
    player: str,
    operation: str,
    gold: list[str],
    answer: bool = False,
    op: str | None = None,
    culprit: str | None = None,
) -> dict[str, Any]:
    return {
        "n_teams": 1,
        "n_players": 1,
        "n_operations": 1,
        "team_situations": [team],
        "player_situations": [player],
        "operations": [operation],
        "answer": answer,
        "illegal_operation": op,
        "problematic_team": culprit,
        "relevant_rules": gold,
    }


DRAFT = _record(
    "Team A has a team salary of $100,000,000.",
    "Player A holds no contract.",
    "A. Team A trades its first round draft pick in 2025 and 2026 to Team B.",
    ["stepien_rule_no_sell_or_no_consecutive_first_round_draft_pick_trade", "missing_rule_variant"],
    answer=True,
    op="A",
    culprit="A",
)
MINIMUM = _record(
    "Team B has a team salary of $150,000,000.",
    "Player B is a free agent.",
    "A. Team B signs Player B for the minimum player salary.",
    ["minimum_player_salary_exception", "salary_cap_no_exceed_without_exception", "minimum_player_salary_exception"],
)
SIGN_TRADE = _record(
    "Team C is over the cap.",
    "Player C is a free agent.",
    "A. Team C signs Player C to a two season contract and trades him to Team D in a sign and trade.",
    ["sign_and_trade_3_to_4_year"],
    answer=True,
    op="A",
    culprit="C",
)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "comp_0.json").write_text(json.dumps([DRAFT, MINIMUM]))
    (tmp_path / "comp_1.json").write_text(json.dumps([SIGN_TRADE]))
    # Level 2 repeats SIGN_TRADE exactly (key order aside): a duplicate to drop.
    (tmp_path / "comp_2.json").write_text(json.dumps([dict(reversed(list(SIGN_TRADE.items())))]))
    (tmp_path / CATALOG_FILE).write_text(json.dumps(CATALOG))
    return tmp_path


# ------------------------------------------------------------------ loading
def test_load_problems_renders_text_and_gold(data_dir: Path) -> None:
    problems = load_problems(data_dir)
    assert [p.key for p in problems] == ["L0-000", "L0-001", "L1-000"]
    first = problems[0]
    assert first.text == (
        "Team situations:\nTeam A has a team salary of $100,000,000.\n\n"
        "Player situations:\nPlayer A holds no contract.\n\n"
        "Operations:\nA. Team A trades its first round draft pick in 2025 and 2026 to Team B."
    )
    assert first.verdict == NbaVerdict(True, "A", "A")
    assert problems[1].verdict == NbaVerdict(False, None, None)
    # Repeated gold ids count once; file order is kept.
    assert problems[1].gold == ("minimum_player_salary_exception", "salary_cap_no_exceed_without_exception")


def test_load_problems_drops_the_exact_duplicate(data_dir: Path) -> None:
    assert load_problems(data_dir, levels=(2,))[0].key == "L2-000"  # alone, level 2 is kept
    assert [p.level for p in load_problems(data_dir, levels=(1, 2))] == [1]


def test_load_problems_levels_and_limit(data_dir: Path) -> None:
    assert [p.key for p in load_problems(data_dir, levels=(0,), limit=1)] == ["L0-000"]
    assert [p.key for p in load_problems(data_dir, levels=(1, 0), limit=1)] == ["L1-000", "L0-000"]
    assert load_problems(data_dir, limit=0) == []
    with pytest.raises(ValueError, match="unknown NBA level 3"):
        load_problems(data_dir, levels=(3,))


def test_query_modes(data_dir: Path) -> None:
    problem = load_problems(data_dir, levels=(1,))[0]
    assert query_text(problem) == problem.text
    assert query_text(problem, "lines") == "\n".join(
        SIGN_TRADE["team_situations"] + SIGN_TRADE["player_situations"] + SIGN_TRADE["operations"]
    )
    assert query_text(problem, "operations") == SIGN_TRADE["operations"][0]
    with pytest.raises(ValueError, match="unknown query mode"):
        query_text(problem, "json")


def test_missing_data_dir_says_which_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(NbaDataError, match=r"nowhere.*Pass the path"):
        load_problems(missing)
    with pytest.raises(NbaDataError, match="nowhere"):
        catalog_rules(missing)


def test_missing_level_file_is_named(data_dir: Path) -> None:
    (data_dir / "comp_1.json").unlink()
    with pytest.raises(NbaDataError, match=r"comp_1\.json"):
        load_problems(data_dir)


def test_malformed_record_is_reported(data_dir: Path) -> None:
    (data_dir / "comp_0.json").write_text(json.dumps([{"answer": True}]))
    with pytest.raises(NbaDataError, match="record 0 is not an NBA problem"):
        load_problems(data_dir)


# ------------------------------------------------------------------ catalog
def test_catalog_rules(data_dir: Path) -> None:
    rules = catalog_rules(data_dir)
    assert [r.rule_id for r in rules] == [c["rule_id"] for c in CATALOG]
    stepien = rules[3]
    assert stepien.rule_name == "stepien rule no sell or no consecutive first"  # eight words
    assert stepien.condition == stepien.action == stepien.source_text == CATALOG[3]["description"]
    assert stepien.category_tags == ["stepien rule"]
    assert rules[2].category_tags == ["sign and trade"]
    assert stepien.to_document().metadata["rule_id"] == stepien.rule_id


def test_catalog_refuses_repeated_ids(data_dir: Path) -> None:
    (data_dir / CATALOG_FILE).write_text(json.dumps(CATALOG + CATALOG[:1]))
    with pytest.raises(NbaDataError, match="appears twice"):
        catalog_rules(data_dir)


def test_names_and_tags_from_ids() -> None:
    assert rule_name_from_id("a_b_c_d_e_f_g_h_i_j") == "a b c d e f g h"
    assert rule_name_from_id("sign_and_trade_3_to_4_year") == "sign and trade 3 to 4 year"
    assert tags_from_id("maximum_salary_for_player_7_to_9_year_service") == ["maximum salary"]
    assert tags_from_id("cash_in_trade_hard_cap_second_apron_level") == ["cash in trade"]
    assert tags_from_id("bi_annual") == ["bi annual"]
    assert tags_from_id("stepien") == ["stepien"]


def test_gold_in_catalog_and_coverage(data_dir: Path) -> None:
    problems = load_problems(data_dir)
    ids = {r.rule_id for r in catalog_rules(data_dir)}
    assert gold_in_catalog(problems[0], ids) == ("stepien_rule_no_sell_or_no_consecutive_first_round_draft_pick_trade",)
    assert gold_in_catalog(problems[1], ids) == problems[1].gold
    coverage = gold_coverage(problems, ids)
    assert (coverage.n_gold, coverage.n_missing, coverage.problems_affected) == (2 + 2 + 1, 1, 1)
    assert coverage.missing_ids == ("missing_rule_variant",)


# ------------------------------------------------------------------ the quality set
def test_nba_quality_set_catalog_as_policy_problems_as_cases(data_dir: Path) -> None:
    from langchain_tag_bench.quality import load_quality_set, statement_spans

    qs = load_quality_set("nba", data_path=data_dir)
    assert [s["id"] for s in qs.statements] == [entry["rule_id"] for entry in CATALOG]
    # Every sentence is a verbatim, separate passage of the policy, in catalog order.
    spans = statement_spans(qs)
    starts = [spans[entry["rule_id"]][0] for entry in CATALOG]
    assert all(qs.policy_text[spans[e["rule_id"]][0] : spans[e["rule_id"]][1]] == e["description"] for e in CATALOG)
    # No topic is shared by two ids here, so all four sit under one heading, in catalog order.
    assert "## Other rules" in qs.policy_text and starts == sorted(starts)
    # Three problems (the level-2 duplicate dropped), alternating dev and test.
    assert [(c["id"], c["split"]) for c in qs.cases] == [("L0-000", "dev"), ("L0-001", "test"), ("L1-000", "dev")]
    # Gold ids outside the catalog are not statements; repeats count once.
    assert qs.cases[0]["violates"] == ["stepien_rule_no_sell_or_no_consecutive_first_round_draft_pick_trade"]
    assert qs.cases[1]["violates"] == ["minimum_player_salary_exception", "salary_cap_no_exceed_without_exception"]
    assert qs.case_text(qs.cases[2]) == load_problems(data_dir, levels=(1,))[0].text
    assert qs.task_input and "NBA" in qs.domain


def test_nba_quality_set_groups_ids_sharing_a_topic(data_dir: Path) -> None:
    from langchain_tag_bench.quality import load_quality_set

    catalog = CATALOG + [{"rule_id": "sign_and_trade_not_with_mid_level_exception", "description": "No MLE here."}]
    (data_dir / CATALOG_FILE).write_text(json.dumps(catalog))
    policy = load_quality_set("nba", data_path=data_dir).policy_text
    heading = policy.index("## Sign and trade")
    assert heading < policy.index("A sign and trade contract") < policy.index("No MLE here.") < policy.index("## Other")


def test_nba_quality_set_without_data_names_the_path(tmp_path: Path) -> None:
    from langchain_tag_bench.quality import load_quality_set

    with pytest.raises(NbaDataError, match=str(tmp_path / "absent")):
        load_quality_set("nba", data_path=tmp_path / "absent")


# ------------------------------------------------------------------ the bulk job and its gold
def test_nba_job_is_the_test_split_against_the_catalog_and_its_gold_is_relevant_rules(
    data_dir: Path, tmp_path: Path
) -> None:
    from langchain_tag.rules import save_rules
    from langchain_tag.testing import HashingEmbeddings
    from langchain_tag_bench.cascade_guarantee import load_pairs
    from langchain_tag_bench.corpus import nba_job

    items, rules = nba_job(1, data_dir)
    assert items == [{"id": "L0-001", "text": load_problems(data_dir, levels=(0,))[1].text}]
    assert [r.rule_id for r in rules] == [entry["rule_id"] for entry in CATALOG]
    with pytest.raises(SystemExit, match="test split has 1 problems, got 2"):
        nba_job(2, data_dir)

    job = tmp_path / "job"
    job.mkdir()
    (job / "inputs.jsonl").write_text(json.dumps(items[0]) + "\n")
    save_rules(rules, job / "rules.jsonl")
    pairs_out = [{"rule_id": r.rule_id, "applies": r.rule_id.startswith("minimum"), "p_yes": 0.5} for r in rules]
    (job / "strong.jsonl").write_text(json.dumps({"id": "L0-001", "pairs": pairs_out}) + "\n")
    pairs = load_pairs(job, job / "strong.jsonl", None, "nba", HashingEmbeddings(), nba_data=data_dir)
    # MINIMUM's gold is the cap rule and the minimum salary exception (the catalog's first two), nothing else.
    assert pairs.gold == [True, True, False, False] and pairs.strong == [False, True, False, False]

    (job / "inputs.jsonl").write_text(json.dumps({"id": "L9-000", "text": "x"}) + "\n")
    with pytest.raises(SystemExit, match="no problem 'L9-000'"):
        load_pairs(job, job / "strong.jsonl", None, "nba", HashingEmbeddings(), nba_data=data_dir)
