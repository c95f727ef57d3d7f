from __future__ import annotations

from typing import Any

import pytest

from langchain_tag.app._review import ReviewError, apply_decision, review_request

PROPOSED = ["R1", "R2", "R3"]
KNOWN = ["R1", "R2", "R3", "R4", "R5"]
AT = "2026-11-27T17:00:00+00:00"


@pytest.mark.parametrize(
    ("decision", "approved", "added", "dropped"),
    [
        (True, PROPOSED, [], []),
        ("approve", PROPOSED, [], []),
        ([], [], [], PROPOSED),
        (["R4", "R1", "R4"], ["R4", "R1"], ["R4"], ["R2", "R3"]),
        ({"rule_ids": ["R3"]}, ["R3"], [], ["R1", "R2"]),
        ({"drop": ["R2"], "add": ["R5", "R1"]}, ["R1", "R3", "R5"], ["R5"], ["R2"]),
        ({"add": ["R4"]}, ["R1", "R2", "R3", "R4"], ["R4"], []),
    ],
)
def test_a_decision_gives_the_approved_list_and_what_changed(
    decision: Any, approved: list[str], added: list[str], dropped: list[str]
) -> None:
    got, record = apply_decision(decision, PROPOSED, known=KNOWN, at=AT)
    assert got == approved == record["approved"]
    assert (record["added"], record["dropped"], record["proposed"], record["at"]) == (added, dropped, PROPOSED, AT)
    assert record["reviewer"] == "anonymous" and record["note"] == ""


def test_the_reviewer_and_note_are_recorded() -> None:
    _, record = apply_decision({"rule_ids": ["R1"], "reviewer": " ana ", "note": "ok"}, PROPOSED, known=KNOWN, at=AT)
    assert (record["reviewer"], record["note"]) == ("ana", "ok")


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        (["R9"], "no rule 'R9' in this run's rules"),
        ({"drop": ["R9"]}, "no rule 'R9'"),
        ({"rule_ids": "R1"}, "'rule_ids' must be a list of rule ids"),
        ({"rule_ids": ["R1"], "add": ["R2"]}, "not both"),
        ({"keep": ["R1"]}, "unknown key(s) 'keep'"),
        ({"reviewer": 3}, "'reviewer' must be text"),
        (None, "cannot read the resume value None"),
        ([1], "must be a list of rule ids"),
    ],
)
def test_a_bad_decision_says_why(decision: Any, message: str) -> None:
    with pytest.raises(ReviewError) as caught:
        apply_decision(decision, PROPOSED, known=KNOWN, at=AT)
    assert message in str(caught.value)


def test_the_request_tells_how_to_resume() -> None:
    ref = {"rule_id": "R1", "rule_name": "n", "action": "a", "score": 0.9}
    request = review_request("x", [ref], [])  # type: ignore[list-item]
    assert request["kind"] == "tag_review" and request["matched"] == [ref] and "rule_ids" in request["resume"]
