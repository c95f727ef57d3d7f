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


def test_the_shipped_rules_match_the_packages_prompts_and_model() -> None:
    """Fails when the extraction prompts, the judge prompt or the embedded model change: regenerate them then."""
    from langchain_tag.calls.identity import IDENTITY_METADATA_KEY
    from langchain_tag.cli.demo import load_shipped_demo
    from langchain_tag.extraction.prompts import PHASE_PROMPT_VERSIONS
    from langchain_tag.judging.prompts import JUDGE_PROMPTS
    from langchain_tag.local.weights import GGUF_MODELS
    from langchain_tag.retrievers import ApplicabilityRetriever

    shipped = load_shipped_demo()
    regenerate = "regenerate the shipped demo rules: python -m langchain_tag.cli.demo"
    assert shipped.extraction_prompts == {str(k): v for k, v in PHASE_PROMPT_VERSIONS.items()}, regenerate
    assert shipped.judge_prompt == JUDGE_PROMPTS["applicability"].scoring_version, regenerate
    assert shipped.model == Path(GGUF_MODELS["1.5b"].filename).stem, regenerate
    assert len(shipped.rules) >= 5
    judge = FakeChatModel(respond=_judge_reply, with_logprobs=True, metadata={IDENTITY_METADATA_KEY: shipped.model})
    retriever = ApplicabilityRetriever(llm=judge, rules=shipped.rules)
    wanted = {r.key for r in retriever.judge.reference_requests(shipped.rules)}
    assert wanted and wanted <= set(shipped.references), regenerate  # rendered as the judge renders them today


def test_the_demo_runs_on_the_shipped_rules_without_extracting(tmp_path: Path) -> None:
    from langchain_tag.calls.identity import IDENTITY_METADATA_KEY
    from langchain_tag.cli.demo import load_shipped_demo

    shipped = load_shipped_demo()
    models = _models()
    models["judge"] = FakeChatModel(
        respond=_judge_reply, with_logprobs=True, metadata={IDENTITY_METADATA_KEY: shipped.model}
    )
    log = io.StringIO()
    rows = run_demo(
        **models, shipped=shipped, verdicts=tmp_path / "v.sqlite", check_rounds=0, out=io.StringIO(), log=log
    )
    assert models["extractor"].calls == 0 and len(rows) == len(DEMO_INPUTS)
    assert f"using the {len(shipped.rules)} rules shipped with the package" in log.getvalue()
    # The default calibration's reference judgments came with the rules: only the inputs were judged.
    assert models["judge"].calls == len(DEMO_INPUTS) * len(shipped.rules)


def test_each_revision_is_checked_and_what_it_still_breaks_is_printed(tmp_path: Path) -> None:
    def unchanged(text: str) -> str:  # an executor that gives the code back as it was: it fixes nothing
        return text.split("INPUT:\n", 1)[1].strip()

    models = _models()
    models["executor"] = FakeChatModel(respond=unchanged)
    out = io.StringIO()
    rows = run_demo(**models, store=tmp_path / "store.sqlite", check_rounds=1, out=out, log=io.StringIO())
    first = rows[0]
    assert first.matched and first.rounds == 2  # the check found the matched rules still broken: one more round
    assert [rule_id for rule_id, _ in first.remaining] == [rule_id for rule_id, _, _, _ in first.matched]
    assert "reads the revision as going against" in out.getvalue() and "2 rounds" in out.getvalue()
    fixed = run_demo(
        **_models(), store=tmp_path / "store.sqlite", check_rounds=1, out=(text := io.StringIO()), log=io.StringIO()
    )
    assert fixed[0].rounds == 1 and fixed[0].remaining == [] and "as following all" in text.getvalue()
    off = run_demo(**_models(), store=tmp_path / "store.sqlite", check_rounds=0, out=io.StringIO(), log=io.StringIO())
    assert off[0].checked == 0 and off[0].rounds == 1
