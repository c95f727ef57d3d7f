"""NPOV harness: case loading, pass-through check, executor parsing, judge parsing and summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_tag.testing import FakeChatModel, prompt_text
from langchain_tag_bench.data import BenchDataError
from langchain_tag_bench.npov import (
    AUTO_FAIL_SIMILARITY,
    NpovCase,
    NpovScores,
    ajudge_rewrite,
    ajudge_rewrites,
    char_similarity,
    is_pass_through,
    judge_rewrite,
    judge_rewrites,
    load_cases,
    parse_rewrite,
    summarize_npov,
)
from langchain_tag_bench.prompts import NPOV_JUDGE_PROMPT_VERSION, npov_judge_messages

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# 122 characters, so one substituted character gives 1 - 2/244 = 0.9918...
LONG = (
    "The legendary architect Mara Quell designed the riverside library in 1998 "
    "and later the glass footbridge over the harbour."
)
CASE = NpovCase("c1", LONG, 'The word "legendary" is promotional.')
GOOD = (
    "The architect Mara Quell designed the riverside library in 1998 and later the glass footbridge over the harbour."
)

JUDGE_OK = '{"violation_fixed": true, "remediation": 5, "preservation": 4, "tone": 5, "fluency": 5, "reason": "ok"}'


def _rewrite_in(prompt: str) -> str:
    """The REWRITE block of a judge prompt (so fake replies depend on the prompt, not call order)."""
    return prompt.split("REWRITE:\n<<<\n", 1)[1].split("\n>>>", 1)[0]


def _judge(replies: dict[str, str | BaseException], default: str = JUDGE_OK) -> FakeChatModel:
    def respond(text: str) -> str | BaseException:
        return replies.get(_rewrite_in(text), default)

    return FakeChatModel(respond=respond)


# ---------------------------------------------------------------- similarity
def test_char_similarity_hand_checked() -> None:
    assert len(LONG) == 122
    assert char_similarity(LONG, LONG) == 1.0
    assert char_similarity("  abc \n", "abc") == 1.0  # surrounding whitespace is stripped
    one_edit = LONG.replace("1998", "1999")
    assert char_similarity(LONG, one_edit) == pytest.approx(1 - 2 / 244)
    assert char_similarity(LONG, one_edit) > AUTO_FAIL_SIMILARITY
    # GOOD drops "legendary " (10 characters): 1 - 10 / (122 + 112) = 0.9573...
    assert char_similarity(LONG, GOOD) == pytest.approx(1 - 10 / 234)
    assert not is_pass_through(LONG, GOOD)
    assert is_pass_through(LONG, one_edit)
    assert char_similarity("abcd", "wxyz") == 0.0


def test_pass_through_auto_fails_without_calling_the_judge() -> None:
    llm = _judge({})
    scores = judge_rewrite(llm, CASE, LONG.replace("1998", "1999"))
    assert llm.calls == 0
    assert scores.auto_failed and not scores.judge_failed
    assert scores.vfr == 0
    assert (scores.remediation, scores.preservation, scores.tone, scores.fluency) == (None, None, None, None)
    assert scores.similarity > 0.98


# ---------------------------------------------------------------- executor replies
def test_parse_rewrite_standard_format() -> None:
    reply = "Applied rules: R-1, R-7\nReasoning: Removed the puffery.\nRewrite: " + GOOD
    r = parse_rewrite(reply, LONG)
    assert r.applied_rules == ("R-1", "R-7")
    assert r.reasoning == "Removed the puffery."
    assert r.rewrite == GOOD and r.parsed


def test_parse_rewrite_bold_labels_fences_blank_lines_and_multiline() -> None:
    reply = (
        "```\n**Applied rules:** [R-3]\n\n**REASONING**: drop the loaded word.\n\n"
        "**Rewrite:**\nThe architect Mara Quell designed the riverside library in 1998\n"
        "and later the glass footbridge over the harbour.\n```\n"
    )
    r = parse_rewrite(reply, LONG)
    assert r.applied_rules == ("R-3",)
    assert r.reasoning == "drop the loaded word."
    assert r.rewrite == GOOD and r.parsed


def test_parse_rewrite_none_means_no_rules() -> None:
    r = parse_rewrite(f"applied rules: NONE\nreasoning: nothing to fix\nrewrite: {LONG}", LONG)
    assert r.applied_rules == () and r.rewrite == LONG and r.parsed
    assert parse_rewrite("Applied rules: none\nReasoning: x\nRewrite: unchanged", LONG).rewrite == LONG


def test_parse_rewrite_missing_rewrite_line_falls_back_to_last_plain_line() -> None:
    reply = f"Applied rules: R-1\nReasoning: remove the adjective.\n\n{GOOD}\n"
    r = parse_rewrite(reply, LONG)
    assert r.rewrite == GOOD and not r.parsed and r.applied_rules == ("R-1",)


def test_parse_rewrite_missing_rewrite_with_none_copies_input() -> None:
    r = parse_rewrite("Applied rules: NONE\nReasoning: already neutral.", LONG)
    assert r.rewrite == LONG and not r.parsed and r.applied_rules == ()


@pytest.mark.parametrize("garbage", ["", "   \n\n", "```\n```", "***\n---"])
def test_parse_rewrite_garbage_gives_original(garbage: str) -> None:
    r = parse_rewrite(garbage, LONG)
    assert r == parse_rewrite("", LONG)
    assert r.rewrite == LONG and not r.parsed and r.applied_rules == () and r.reasoning == ""
    assert is_pass_through(LONG, r.rewrite)


def test_parsed_rewrite_can_be_judged_directly() -> None:
    llm = _judge({})
    scores = judge_rewrites(llm, [CASE], [parse_rewrite(f"Rewrite: {GOOD}", LONG)])
    assert scores[0].vfr == 1 and llm.calls == 1


# ---------------------------------------------------------------- judge prompt
def test_judge_prompt_contains_original_violation_and_rewrite() -> None:
    text = prompt_text(npov_judge_messages(sentence="ORIG-S", violation="VIOL-D", rewrite="REWR-R"))
    assert text.index("ORIG-S") < text.index("VIOL-D") < text.index("REWR-R")
    for word in ("violation_fixed", "remediation", "preservation", "tone", "fluency"):
        assert word in text
    assert NPOV_JUDGE_PROMPT_VERSION.startswith("judge-npov")


# ---------------------------------------------------------------- judge replies
def test_judge_reads_plain_json_and_tokens() -> None:
    llm = _judge({})
    s = judge_rewrite(llm, CASE, GOOD)
    assert llm.calls == 1
    assert (s.vfr, s.remediation, s.preservation, s.tone, s.fluency) == (1, 5, 4, 5, 5)
    assert not s.auto_failed and not s.judge_failed and s.reason == "ok"
    assert s.prompt_tokens > 0 and s.completion_tokens > 0
    assert LONG in llm.prompts[0] and CASE.violation in llm.prompts[0] and GOOD in llm.prompts[0]
    assert json.loads(json.dumps(s.to_dict()))["vfr"] == 1


def test_judge_reads_fenced_json_with_prose_strings_and_clamps() -> None:
    reply = (
        "Here is my grading:\n```json\n"
        '{"violation_fixed": "true", "remediation": "4", "preservation": 9, "tone": 0, "fluency": "3/5"}\n```'
    )
    s = judge_rewrite(_judge({GOOD: reply}), CASE, GOOD)
    assert (s.vfr, s.remediation, s.preservation, s.tone, s.fluency) == (1, 4, 5, 1, 3)
    no = '{"violation_fixed": "no", "remediation": 2.4, "preservation": "5", "tone": 3, "fluency": 4}'
    s = judge_rewrite(_judge({GOOD: no}), CASE, GOOD)
    assert (s.vfr, s.remediation) == (0, 2) and not s.judge_failed


def test_judge_garbage_twice_is_a_judge_failure_after_two_calls() -> None:
    llm = _judge({GOOD: "I think it is fine."})
    s = judge_rewrite(llm, CASE, GOOD)
    assert llm.calls == 2
    assert s.judge_failed and not s.auto_failed and s.vfr == 0 and s.attempts == 2
    assert s.remediation is None and s.fluency is None
    assert s.judge_reply == "I think it is fine."


def test_judge_missing_score_is_unreadable() -> None:
    llm = _judge({GOOD: '{"violation_fixed": true, "remediation": 5}'})
    assert judge_rewrite(llm, CASE, GOOD).judge_failed and llm.calls == 2


def test_judge_retries_once_then_succeeds() -> None:
    seen: list[str] = []

    def respond(text: str) -> str:
        # Depends on whether this prompt was seen before, not on global call order.
        first = text not in seen
        seen.append(text)
        return "not json" if first else JUDGE_OK

    llm = FakeChatModel(respond=respond)
    s = judge_rewrite(llm, CASE, GOOD)
    assert llm.calls == 2 and s.vfr == 1 and s.attempts == 2


def test_provider_exception_is_caught_and_recorded() -> None:
    llm = _judge({GOOD: RuntimeError("rate limited")})
    s = judge_rewrite(llm, CASE, GOOD)
    assert llm.calls == 2
    assert s.judge_failed and s.vfr == 0 and "RuntimeError: rate limited" in s.judge_reply


def test_judge_rewrites_keeps_order_and_mixes_outcomes() -> None:
    other = NpovCase("c2", "Unfortunately, the festival was cancelled.", "Editorializing adverb.")
    fixed_other = "The festival was cancelled."
    bad = '{"violation_fixed": false, "remediation": 2, "preservation": 5, "tone": 2, "fluency": 5}'
    llm = _judge({fixed_other: bad, "broken": "??"})
    cases = [CASE, other, CASE, other]
    rewrites = [GOOD, fixed_other, LONG, "broken"]
    scores = judge_rewrites(llm, cases, rewrites, max_concurrency=2)
    assert [s.vfr for s in scores] == [1, 0, 0, 0]
    assert [s.auto_failed for s in scores] == [False, False, True, False]
    assert [s.judge_failed for s in scores] == [False, False, False, True]
    assert scores[1].remediation == 2
    assert llm.calls == 4  # 3 judged, one retried; the pass-through is never sent
    assert llm.max_in_flight <= 2
    with pytest.raises(ValueError):
        judge_rewrites(llm, cases, rewrites[:2])


async def test_async_judging_matches_sync() -> None:
    llm = _judge({"broken": "??"})
    one = await ajudge_rewrite(llm, CASE, GOOD)
    assert one.vfr == 1
    many = await ajudge_rewrites(llm, [CASE, CASE, CASE], [GOOD, LONG, "broken"])
    assert [s.vfr for s in many] == [1, 0, 0]
    assert [s.auto_failed for s in many] == [False, True, False]
    assert many[2].judge_failed
    assert llm.calls == 1 + 1 + 2


# ---------------------------------------------------------------- summary
def _scores(vfr: int, r: int | None, auto: bool = False, failed: bool = False) -> NpovScores:
    return NpovScores(
        vfr=vfr,
        remediation=r,
        preservation=r,
        tone=r,
        fluency=r,
        similarity=0.5,
        auto_failed=auto,
        judge_failed=failed,
        judge_reply="",
        prompt_tokens=10,
        completion_tokens=2,
    )


def test_summarize_npov_by_hand() -> None:
    scores = [
        _scores(1, 5),
        _scores(0, 2),
        _scores(1, 4),
        _scores(0, None, auto=True),
        _scores(0, None, failed=True),
    ]
    s = summarize_npov(scores)
    assert s.n == 5
    assert s.vfr == pytest.approx(100 * 2 / 5)  # 40.0: auto-fail and judge failure count as 0
    assert s.remediation == pytest.approx((5 + 2 + 4) / 3)
    assert s.fluency == pytest.approx(11 / 3)
    assert (s.n_judged, s.n_auto_failed, s.n_judge_failed) == (3, 1, 1)
    assert (s.prompt_tokens, s.completion_tokens) == (50, 10)
    assert s.to_dict()["vfr"] == pytest.approx(40.0)


def test_summarize_npov_empty_and_all_auto_failed() -> None:
    empty = summarize_npov([])
    assert (empty.n, empty.vfr, empty.remediation) == (0, None, None)
    auto = summarize_npov([_scores(0, None, auto=True)] * 2)
    assert (auto.vfr, auto.remediation, auto.n_auto_failed) == (0.0, None, 2)


# ---------------------------------------------------------------- loading
def test_load_cases_jsonl_with_default_and_given_ids(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        '{"sentence": " First. ", "violation": "v1"}\n'
        "\n"
        '{"id": "x", "sentence": "Second.", "violation": "v2"}\n'
        '{"case_id": 7, "sentence": "Third.", "violation": "v3"}\n',
        encoding="utf-8",
    )
    cases = load_cases(path)
    assert [c.case_id for c in cases] == ["1", "x", "7"]
    assert cases[0] == NpovCase("1", "First.", "v1") and cases[0].key == "1"
    assert [c.case_id for c in load_cases(path, limit=2)] == ["1", "x"]


def test_load_cases_csv_and_tsv(tmp_path: Path) -> None:
    csv_path = tmp_path / "cases.csv"
    csv_path.write_text('sentence,violation\n"A, quoted sentence.",v1\nB.,v2\n', encoding="utf-8")
    assert load_cases(csv_path) == [NpovCase("1", "A, quoted sentence.", "v1"), NpovCase("2", "B.", "v2")]
    tsv_path = tmp_path / "cases.tsv"
    tsv_path.write_text("id\tsentence\tviolation\nk1\tA.\tv1\n", encoding="utf-8")
    assert load_cases(tsv_path) == [NpovCase("k1", "A.", "v1")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"sentence": "a", "violation": "b"}\n{not json\n', "line 2"),
        ('{"sentence": "a", "violation": "b"}\n{"sentence": "c"}\n', "line 2: missing field 'violation'"),
        ('{"sentence": "  ", "violation": "b"}\n', "line 1: field 'sentence' is empty"),
        ('["a", "b"]\n', "line 1"),
        ('{"id": "d", "sentence": "a", "violation": "b"}\n{"id": "d", "sentence": "c", "violation": "e"}\n', "line 2"),
    ],
)
def test_load_cases_errors_name_path_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BenchDataError, match=message) as info:
        load_cases(path)
    assert str(path) in str(info.value)


def test_load_cases_duplicate_id_and_csv_errors(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    path.write_text(
        '{"id": "d", "sentence": "a", "violation": "b"}\n{"id": "d", "sentence": "c", "violation": "e"}\n',
        encoding="utf-8",
    )
    with pytest.raises(BenchDataError, match="duplicate id 'd'"):
        load_cases(path)
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text("sentence,violation\nA.,v1\n,v2\n", encoding="utf-8")
    with pytest.raises(BenchDataError, match=r"row 2 \(line 3\): field 'sentence' is empty"):
        load_cases(csv_path)
    header = tmp_path / "header.csv"
    header.write_text("text,violation\nA.,v1\n", encoding="utf-8")
    with pytest.raises(BenchDataError, match="'sentence'"):
        load_cases(header)
    with pytest.raises(BenchDataError, match="not found"):
        load_cases(tmp_path / "missing.jsonl")


def test_shipped_examples_load() -> None:
    cases = load_cases(EXAMPLES / "npov_cases.jsonl")
    assert len(cases) == 12
    assert [c.case_id for c in cases] == [f"npov-{i:02d}" for i in range(1, 13)]
    assert all(c.sentence and c.violation for c in cases)
    policy = (EXAMPLES / "npov_policy.md").read_text(encoding="utf-8")
    assert policy.strip() and "illustrative example" in policy.splitlines()[0]
