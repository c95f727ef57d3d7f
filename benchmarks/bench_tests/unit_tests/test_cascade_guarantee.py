"""The guaranteed-cascade replay: from recorded verdicts, no judge called."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

from langchain_tag.rules import Rule, save_rules
from langchain_tag.testing import HashingEmbeddings
from langchain_tag_bench.cascade_guarantee import Pairs, load_pairs, prefilter, replay
from langchain_tag_bench.prefilter_replay import held_out


def _pairs(n: int = 3000, seed: int = 1) -> Pairs:
    rng = random.Random(seed)
    strong = [rng.random() < 0.12 for _ in range(n)]
    rows = [[rng.gauss(1.5 if y else 0.0, 1.0)] for y in strong]
    return Pairs(strong=strong, gold=list(strong), rows=rows, cheap_p=[None] * n)


def test_replay_keeps_the_stated_recall_in_at_least_1_minus_delta_of_the_draws() -> None:
    pairs = _pairs()
    runs = [replay(pairs, seed=s, budget=400, target_recall=0.9, delta=0.1) for s in range(100)]
    assert sum(held for _, held in runs) >= 90
    assert all(out.share < 1.0 and out.precision == 1.0 for out, _ in runs)


def test_the_stratified_draw_replays_from_the_verdicts_and_keeps_the_recall() -> None:
    pairs = _pairs(n=2000)
    runs = [replay(pairs, seed=s, budget=300, target_recall=0.9, delta=0.1, draw="stratified") for s in range(50)]
    assert sum(held for _, held in runs) >= 45
    assert all(out.precision == 1.0 for out, _ in runs) and min(out.share for out, _ in runs) < 1.0


def test_prefilter_sends_the_top_cosine_pairs() -> None:
    pairs = Pairs(
        strong=[True, False, True, False],
        gold=[True, False, True, False],
        rows=[[0.9], [0.8], [0.1], [0.0]],
        cheap_p=[None] * 4,
    )
    out = prefilter(pairs, 2)
    assert out.share == 0.5 and out.recall == 0.5 and out.precision == 1.0


def test_load_pairs_reads_the_job_and_the_all_pairs_output(tmp_path: Path) -> None:
    (tmp_path / "inputs.jsonl").write_text(json.dumps({"id": "a", "text": "import os, sys\n"}) + "\n")
    rules = [Rule(rule_id=code, rule_name=code, condition="c", action="a") for code in ("E401", "E501")]
    save_rules(rules, tmp_path / "rules.jsonl")
    record = {
        "id": "a",
        "matched": [],
        "failed": [],
        "pairs": [
            {"rule_id": "E401", "applies": True, "p_yes": 0.9, "score": 0.9},
            {"rule_id": "E501", "applies": False, "p_yes": 0.1, "score": 0.1},
        ],
    }
    (tmp_path / "strong.jsonl").write_text(json.dumps(record) + "\n")
    pairs = load_pairs(tmp_path, tmp_path / "strong.jsonl", None, "pycodestyle", HashingEmbeddings())
    assert pairs.strong == [True, False] and pairs.gold == [True, False] and len(pairs.rows[0]) == 1


def test_load_pairs_reads_the_strong_judge_at_another_score_threshold(tmp_path: Path) -> None:
    (tmp_path / "inputs.jsonl").write_text(json.dumps({"id": "a", "text": "import os, sys\n"}) + "\n")
    rules = [Rule(rule_id=code, rule_name=code, condition="c", action="a") for code in ("E401", "E501")]
    save_rules(rules, tmp_path / "rules.jsonl")
    pairs = [
        {"rule_id": "E401", "applies": False, "p_yes": 0.4, "score": 0.06},
        {"rule_id": "E501", "applies": False, "p_yes": 0.3, "score": 0.01},
    ]
    (tmp_path / "strong.jsonl").write_text(json.dumps({"id": "a", "pairs": pairs}) + "\n")
    recorded = load_pairs(tmp_path, tmp_path / "strong.jsonl", None, "pycodestyle", HashingEmbeddings())
    reread = load_pairs(
        tmp_path, tmp_path / "strong.jsonl", None, "pycodestyle", HashingEmbeddings(), strong_score=0.05
    )
    assert recorded.strong == [False, False] and reread.strong == [True, False]


def test_load_pairs_reads_the_pep8_gold_through_its_statements(tmp_path: Path) -> None:
    (tmp_path / "inputs.jsonl").write_text(json.dumps({"id": "a", "text": "def f(x):\n    return x == None\n"}) + "\n")
    rules = [Rule(rule_id=code, rule_name=code, condition="c", action="a") for code in ("P01", "P13")]
    save_rules(rules, tmp_path / "rules.jsonl")
    pairs = [{"rule_id": "P01", "applies": False}, {"rule_id": "P13", "applies": True}]
    (tmp_path / "strong.jsonl").write_text(json.dumps({"id": "a", "pairs": pairs}) + "\n")
    loaded = load_pairs(tmp_path, tmp_path / "strong.jsonl", None, "pep8", HashingEmbeddings())
    assert loaded.gold == [False, True] and loaded.per_input == 2  # E711 (comparison to None) is statement P13


def test_every_candidate_draw_replays_from_the_verdicts() -> None:
    pairs = _pairs(n=1500)
    for draw in ("importance", "adaptive"):
        out, held = replay(pairs, seed=0, budget=300, target_recall=0.9, delta=0.1, draw=draw)
        assert held and out.precision == 1.0 and 0.0 < out.share <= 1.0


def test_the_prefilter_replay_fits_on_the_sample_and_scores_the_held_out_inputs() -> None:
    rng = random.Random(2)
    strong = [rng.random() < 0.15 for _ in range(200 * 10)]
    rows = [[rng.gauss(2.0 if y else 0.0, 1.0)] for y in strong]
    pairs = Pairs(strong=strong, gold=strong, rows=rows, cheap_p=[None] * len(strong), per_input=10)
    runs = [held_out(pairs, seed=s, share=0.5, target_recall=0.9, delta=0.1) for s in range(40)]
    assert all(0.0 < judged < 1.0 for judged, _ in runs)  # the fitted threshold rules pairs out
    assert sum(recall >= 0.9 for _, recall in runs) >= 36


def test_the_stratified_draw_replays_with_the_learned_proxy_fitted_on_its_pilot() -> None:
    rng = random.Random(4)
    strong = [rng.random() < 0.08 for _ in range(2000)]
    rows = [[rng.gauss(0.3, 1.0), rng.gauss(2.5 if y else -1.0, 1.0)] for y in strong]  # the cheap log-odds informs
    pairs = Pairs(strong=strong, gold=strong, rows=rows, cheap_p=[0.5] * len(strong))
    cosine = [replay(pairs, seed=s, budget=300, target_recall=0.9, delta=0.1, draw="stratified") for s in range(30)]
    learned = [
        replay(pairs, seed=s, budget=300, target_recall=0.9, delta=0.1, draw="stratified", proxy="learned")
        for s in range(30)
    ]
    assert sum(held for _, held in learned) >= 27
    median = statistics.median
    assert median(out.share for out, _ in learned) < median(out.share for out, _ in cosine)
