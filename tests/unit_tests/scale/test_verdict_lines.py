"""One schema for a verdicts file's line: the bulk job writes it, the review page reads it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.review._files import ReviewError, read_verdicts
from langchain_tag.rules import Rule
from langchain_tag.scale.bulk import match_corpus, write_results
from langchain_tag.scale.verdict_lines import VerdictLine, VerdictLineError, VerdictPair
from langchain_tag.testing import FakeChatModel
from tests.helpers.judge_fakes import pair_of, scored_reply

TEXTS = ["def f(x=[]):\n\treturn x", "try:\n    run()\nexcept:\n    pass", "FAIL-ME", "x = 1"]


def _reply(prompt: str) -> str | tuple[str, float]:
    text, rule_id, _ = pair_of(prompt)
    if "FAIL-ME" in text and rule_id != "R-001":
        return "I cannot tell."  # unreadable: a failed pair
    return scored_reply(prompt)


@pytest.mark.parametrize("all_pairs", [False, True])
def test_a_line_the_bulk_job_writes_is_read_by_the_review_page_through_the_one_schema(
    tmp_path: Path, rules: list[Rule], all_pairs: bool
) -> None:
    retriever = ApplicabilityRetriever(
        llm=FakeChatModel(respond=_reply, with_logprobs=True), rules=rules, cache=InMemoryVerdictCache()
    )
    path = tmp_path / "verdicts.jsonl"
    write_results(match_corpus(TEXTS, retriever, all_pairs=all_pairs), path)
    written = path.read_text(encoding="utf-8").splitlines()
    lines = [VerdictLine.from_line(json.loads(text), f"{path}:{n}") for n, text in enumerate(written, start=1)]
    assert [json.dumps(line.to_line(), ensure_ascii=False) for line in lines] == written  # the same bytes again
    assert any(line.failed for line in lines) and any(line.matched for line in lines)
    records = read_verdicts(path)
    assert [r.line for r in records] == [1, 2, 3, 4]
    for record, line in zip(records, lines, strict=True):
        assert (record.id, record.matched, record.failed, record.pairs, record.error) == (
            line.id,
            line.matched,
            line.failed,
            line.pairs,
            line.error,
        )
    assert (records[0].pairs is not None) is all_pairs


def test_a_malformed_line_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.jsonl"
    good = VerdictLine("a", matched=[VerdictPair("R-001", True, 0.9, 0.8)]).to_line()
    bad = {"id": "b", "matched": [{"rule_id": "R-001", "score": "high", "p_yes": 0.8}], "failed": []}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(VerdictLineError, match=re.escape(f"{path}:2: expected a number or null, got 'high'")):
        VerdictLine.from_line(bad, f"{path}:2")
    with pytest.raises(ReviewError, match=re.escape(f"{path}:2: expected a number or null, got 'high'")):
        read_verdicts(path)
    with pytest.raises(VerdictLineError, match=re.escape(f"{path}:7: not a verdicts record")):
        VerdictLine.from_line(["not", "a", "record"], f"{path}:7")


def test_a_cascade_line_keeps_who_decided_each_pair() -> None:
    line = VerdictLine(
        "in-1",
        matched=[VerdictPair("R-002", True, None, None, judge="proxy")],
        pairs=[
            VerdictPair("R-001", False, 0.1, 0.1, judge="strong", proxy_score=0.2),
            VerdictPair("R-002", True, None, None, judge="proxy", proxy_score=0.9),
        ],
    )
    data = line.to_line()
    assert list(data) == ["id", "matched", "failed", "pairs"]
    assert data["matched"] == [{"rule_id": "R-002", "score": None, "p_yes": None, "judge": "proxy"}]
    assert list(data["pairs"][0]) == ["rule_id", "applies", "p_yes", "score", "judge", "proxy_score"]
    assert VerdictLine.from_line(json.loads(json.dumps(data)), "f:1") == line


def test_a_line_says_which_rules_it_judged_and_one_written_before_is_read_unverified() -> None:
    from langchain_tag.scale.verdict_lines import JudgedRules, VerdictLine, VerdictLineError

    judged = JudgedRules("applicability", {"R-001": "0123456789abcdef"})
    line = VerdictLine("a", judged=judged).to_line()
    assert line["judged"] == {"prompt": "applicability", "rules": {"R-001": "0123456789abcdef"}}
    assert VerdictLine.from_line(line, "v.jsonl:1").judged == judged
    assert VerdictLine.from_line({"id": "a", "matched": [], "failed": []}, "v.jsonl:1").judged is None
    with pytest.raises(VerdictLineError, match=r"v\.jsonl:2: judged must be"):
        VerdictLine.from_line({"id": "a", "matched": [], "judged": {"rules": {"R-001": 1}}}, "v.jsonl:2")
