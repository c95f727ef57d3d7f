from __future__ import annotations

import ast
from pathlib import Path

import langchain_tag
from langchain_tag.judging.results import Judgment, MatchResult

PACKAGE = Path(langchain_tag.__file__).parent


def _result() -> MatchResult:
    return MatchResult(
        "def f(): ...",
        "applicability",
        [
            Judgment(rule_id="R1", applies=True, score=0.9),
            Judgment(rule_id="R2", error="HTTP 500"),
            Judgment(rule_id="R3", error="no YES/NO verdict in reply: 'maybe'"),
        ],
    )


def test_the_failure_event_names_the_query_the_failed_rules_and_why_each_failed() -> None:
    assert _result().failure_event() == {
        "query": "def f(): ...",
        "failed_rule_ids": ["R2", "R3"],
        "errors": {"R2": "HTTP 500", "R3": "no YES/NO verdict in reply: 'maybe'"},
    }


def test_the_failure_event_names_the_judge_of_each_failed_pair_when_given() -> None:
    event = _result().failure_event(judges={"R2": "strong", "R3": "cheap"})
    assert event["judges"] == {"R2": "strong", "R3": "cheap"} and event["failed_rule_ids"] == ["R2", "R3"]


def test_the_package_builds_the_failure_event_in_one_place() -> None:
    builders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict) and any(
                isinstance(key, ast.Constant) and key.value == "failed_rule_ids" for key in node.keys
            ):
                builders.append(path.relative_to(PACKAGE).as_posix())
    assert builders == ["judging/results.py"]
