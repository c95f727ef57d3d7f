from __future__ import annotations

import io
from pathlib import Path

import pytest

from langchain_tag.cli.demo import DEMO_INPUTS, demo_policy, run_demo
from langchain_tag.testing import FakeChatModel, HashingEmbeddings, fake_extraction_reply


def _judge_reply(text: str) -> tuple[str, float] | str:
    code = text.split("INPUT:\n<<<\n")[1].split("\n>>>")[0]
    rule = text.split("RULE:\n")[1].lower()
    hit = ("a function must not" in rule and "=[]" in code) or ("bare except" in rule and "except:" in code)
    return ("YES", 0.93) if hit else ("NO", 0.04)


def _models() -> dict:
    return {
        "judge": FakeChatModel(respond=_judge_reply, with_logprobs=True),
        "extractor": FakeChatModel(respond=fake_extraction_reply),
        "executor": FakeChatModel(respond=lambda text: "REVISED CODE"),
        "embeddings": HashingEmbeddings(),
    }


def test_policy_ships_with_the_package() -> None:
    assert "mutable object" in demo_policy().page_content


def test_demo_prints_tag_next_to_similarity(tmp_path: Path) -> None:
    out, log = io.StringIO(), io.StringIO()
    rows = run_demo(**_models(), store=tmp_path / "store.sqlite", out=out, log=log)
    assert len(rows) == len(DEMO_INPUTS)
    first = rows[0]
    assert [name for _, name, _, _ in first.matched] and all(s == p == 0.93 for _, _, s, p in first.matched)
    assert len(first.similar) == 2 and first.output == "REVISED CODE"
    text = out.getvalue()
    assert "TAG matched" in text and "Chroma similarity top-2" in text and "P(YES)=0.93" in text
    assert "closest below the line:" in text and first.near_misses[0][1] == pytest.approx(0.04)
    assert "a rule matches at score >= 0.50 (raw P(YES): no calibration for FakeChatModel)" in log.getvalue()
    assert "extracting rules" in log.getvalue()
    assert (tmp_path / "store.sqlite").stat().st_size > 0


def test_second_run_reuses_the_extraction_store(tmp_path: Path) -> None:
    first = run_demo(**_models(), store=tmp_path / "store.sqlite", out=io.StringIO(), log=io.StringIO())
    models = _models()
    log = io.StringIO()
    second = run_demo(**models, store=tmp_path / "store.sqlite", out=io.StringIO(), log=log)
    assert models["extractor"].calls == 0 and "reused from the store" in log.getvalue()
    assert [r.matched for r in second] == [r.matched for r in first]


def test_second_run_reuses_the_verdict_cache(tmp_path: Path) -> None:
    paths = {"store": tmp_path / "store.sqlite", "verdicts": tmp_path / "verdicts.sqlite"}
    first_models = _models()
    first = run_demo(**first_models, **paths, out=io.StringIO(), log=io.StringIO())
    assert first_models["judge"].calls > 0
    models = _models()
    second = run_demo(**models, **paths, out=io.StringIO(), log=io.StringIO())
    assert models["judge"].calls == 0
    assert [r.matched for r in second] == [r.matched for r in first]
