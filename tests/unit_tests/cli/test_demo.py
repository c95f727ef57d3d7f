"""The demo end to end on fakes; its line on the revision states the judge's reading and how often such readings
were right, never a fact."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from langchain_tag.cli.demo import CHECK_AGREEMENT, DEMO_INPUTS, DemoRow, demo_policy, render_row, run_demo
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, HashingEmbeddings, fake_extraction_reply

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "first-run.md"

RULES = {
    "R-001": Rule(rule_id="R-001", rule_name="default argument value must be None", condition="c", action="a"),
    "R-003": Rule(rule_id="R-003", rule_name="bare except clause", condition="c", action="a"),
}


def _row(remaining: list[tuple[str, float | None]]) -> DemoRow:
    return DemoRow(
        input="def f(tags=[]):\n    return tags",
        matched=[("R-001", "default argument value must be None", 0.8, 0.9), ("R-003", "bare except", 0.7, 0.8)],
        output="def f(tags=None):\n    return tags or []",
        remaining=remaining,
        checked=2,
    )


def test_the_revision_line_is_the_judges_reading_with_its_score_and_its_benchmark_record() -> None:
    agreed, compared = CHECK_AGREEMENT
    share = f"{agreed / compared:.0%}".replace("%", " %")
    for remaining in ([("R-001", 0.62)], []):
        text = render_row(1, _row(remaining), RULES)
        assert "Checked:" not in text and "still breaks" not in text  # no finding stated as a fact
        assert "the judge reads" in text.lower()
        assert f"agreed with ruff on {agreed} of {compared}" in text and share in text
        assert "about chance" in text
    flagged = render_row(1, _row([("R-001", 0.62)]), RULES)
    assert "R-001 default argument value must be None (score 0.62)" in flagged


def test_the_cited_record_is_the_one_the_benchmark_page_shows() -> None:
    """The demo cites the check-loop row of its own default (one extra round) on the demo set."""
    text = RESULTS.read_text(encoding="utf-8")
    section = text.split("## Revise, then check", 1)[1].split("**The ruff set**", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| 1 (the default)"))
    agreed, compared = CHECK_AGREEMENT
    found = re.search(r"(\d+) % of (\d+)", row)
    assert found is not None and int(found.group(2)) == compared
    assert int(found.group(1)) == round(100 * agreed / compared)


def test_the_demo_reads_no_revision_by_default() -> None:
    """The check-loop page: the check off agreed with ruff on 14 of 15, the judge's reading on 7, at a call a rule."""
    import inspect

    from langchain_tag.cli.demo import run_demo
    from langchain_tag.cli.main import build_parser

    assert build_parser().parse_args(["demo"]).check_rounds == 0
    assert inspect.signature(run_demo).parameters["check_rounds"].default == 0
    assert build_parser().parse_args(["demo", "--check-rounds", "1"]).check_rounds == 1


# --------------------------------------------------------------------------- the demo, end to end on fakes
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
    from langchain_tag.calls._identity import IDENTITY_METADATA_KEY
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
    from langchain_tag.calls._identity import IDENTITY_METADATA_KEY
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
