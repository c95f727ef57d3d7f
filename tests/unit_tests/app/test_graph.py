from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langchain_tag.app import (
    BELOW_THE_LINE,
    PROGRESS_EVENT,
    REVIEW_KIND,
    ContextError,
    InputError,
    build_app_graph,
)
from langchain_tag.errors import RuleFileError
from langchain_tag.judging.judge import Judge
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache
from langchain_tag.rules import Rule, save_rules
from langchain_tag.testing import FakeChatModel, HashingEmbeddings, judged_rule_id
from tests.helpers.app_fakes import STUBBORN, fake_models, given_ids, judge_reply

ROOT = Path(__file__).resolve().parents[3]
CODE = "def f(x=[]):  flag:R-004\n\ttry: pass  flag:R-003\nexcept: pass  flag:R-005"


def _rules(rules: list[Rule]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in rules]


def _ids(refs: list[dict[str, Any]]) -> list[str]:
    return [r["rule_id"] for r in refs]


def test_a_run_returns_the_output_schema_only(rules: list[Rule]) -> None:
    graph = build_app_graph(fake_models())
    out = graph.invoke({"input": CODE, "rules": _rules(rules)}, context={"check_rounds": 0})
    assert set(out) == {"output", "matched", "findings", "rounds", "mode", "review"}
    assert _ids(out["matched"]) == ["R-003", "R-004", "R-005"]
    assert all(r["score"] is not None and r["score"] > 0.5 for r in out["matched"])
    assert [r["action"] for r in out["matched"]] == [
        r.action for r in rules if r.rule_id in {"R-003", "R-004", "R-005"}
    ]
    assert given_ids(out["output"]) == ["R-003", "R-004", "R-005"]
    assert out["rounds"] == 1 and out["findings"] == [] and out["mode"] == "tag" and out["review"] is None


def test_the_check_reports_the_rules_the_output_still_breaks(rules: list[Rule]) -> None:
    out = build_app_graph(fake_models()).invoke({"input": CODE, "rules": _rules(rules)}, context={"check_rounds": 2})
    assert out["rounds"] == 3  # the stubborn rule holds after each round
    assert _ids(out["findings"]) == [STUBBORN]
    assert given_ids(out["output"]) == [STUBBORN]  # later rounds get only what still holds
    once = build_app_graph(fake_models()).invoke({"input": CODE, "rules": _rules(rules)})
    assert once["rounds"] == 2 and _ids(once["findings"]) == [STUBBORN]  # the default: one check round


@pytest.mark.parametrize(
    ("mode", "given"),
    [
        ("all_rules", ["R-001", "R-002", "R-003", "R-004", "R-005"]),
        ("none", []),
        ("relevance", ["R-003", "R-004", "R-005"]),
    ],
)
def test_the_mode_is_a_per_run_setting(rules: list[Rule], mode: str, given: list[str]) -> None:
    out = build_app_graph(fake_models()).invoke(
        {"input": CODE, "rules": _rules(rules)}, context={"mode": mode, "check_rounds": 0}
    )
    assert out["mode"] == mode and given_ids(out["output"]) == given


def test_the_similarity_mode_gives_the_rules_most_like_the_input(rules: list[Rule]) -> None:
    models = replace(fake_models(), embeddings=HashingEmbeddings)
    out = build_app_graph(models).invoke(
        {"input": "a function has a list as a default argument value", "rules": _rules(rules)},
        context={"mode": "similarity", "k": 1},
    )
    assert given_ids(out["output"]) == ["R-004"] and out["rounds"] == 1 and out["findings"] == []  # no check
    with pytest.raises(ValueError, match="similarity mode needs embeddings"):
        build_app_graph(fake_models()).invoke({"input": CODE, "rules": _rules(rules)}, context={"mode": "similarity"})


def test_failed_judgments_are_named_in_the_last_progress_event(rules: list[Rule]) -> None:
    def judge(prompt: str) -> Any:
        return RuntimeError("HTTP 500") if judged_rule_id(prompt) == "R-002" else judge_reply(prompt)

    models = replace(fake_models(), judge=lambda settings: FakeChatModel(respond=judge, with_logprobs=True))
    events = list(build_app_graph(models).stream({"input": CODE, "rules": _rules(rules)}, stream_mode="custom"))
    last = [e for e in events if e["stage"] == "match"][-1]
    assert last["failed"] == ["R-002"] and last["matched"] == 3


def test_the_threshold_is_a_per_run_setting(rules: list[Rule]) -> None:
    graph = build_app_graph(fake_models())
    strict = graph.invoke({"input": CODE, "rules": _rules(rules)}, context={"threshold": 0.95, "check_rounds": 0})
    loose = graph.invoke({"input": CODE, "rules": _rules(rules)}, context={"threshold": 0.05, "check_rounds": 0})
    assert strict["matched"] == [] and len(loose["matched"]) == 5


def test_rules_come_from_a_rule_file_or_a_named_set(rules: list[Rule], tmp_path: Path) -> None:
    path = save_rules(rules[:3], tmp_path / "rules.jsonl")
    graph = build_app_graph(fake_models({"demo": rules[3:]}))
    from_file = graph.invoke({"input": CODE}, context={"rules_file": str(path), "check_rounds": 0})
    assert _ids(from_file["matched"]) == ["R-003"]
    shipped = graph.invoke({"input": CODE}, context={"rule_set": "demo", "check_rounds": 0})
    assert _ids(shipped["matched"]) == ["R-004", "R-005"]
    assert _ids(graph.invoke({"input": CODE}, context={"check_rounds": 0})["matched"]) == ["R-004", "R-005"]
    with pytest.raises(ContextError, match="'rule_set': 'mine' is not a shipped rule set"):
        graph.invoke({"input": CODE}, context={"rule_set": "mine"})
    path.write_text(path.read_text() + '{"rule_id": "R-9"}\n')
    with pytest.raises(RuleFileError, match=r"rules\.jsonl:4: field 'rule_name'"):
        graph.invoke({"input": CODE}, context={"rules_file": str(path)})


def test_a_later_run_on_a_thread_takes_its_own_rules(rules: list[Rule], tmp_path: Path) -> None:
    graph = build_app_graph(fake_models(), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"input": CODE, "rules": _rules(rules[3:])}, config, context={"check_rounds": 0})
    assert _ids(first["matched"]) == ["R-004", "R-005"]
    path = save_rules(rules[:3], tmp_path / "rules.jsonl")
    later = graph.invoke({"input": CODE}, config, context={"rules_file": str(path), "check_rounds": 0})
    assert _ids(later["matched"]) == ["R-003"] and later["review"] is None


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"mode": "bm25"}, "context key 'mode': 'bm25' is not a mode; choose one of: tag, relevance"),
        ({"threshold": 7}, "context key 'threshold': threshold must be a number within \\[0, 1\\], got 7.0"),
        ({"check_rounds": -1}, "context key 'check_rounds': check_rounds must be a whole number >= 0, got -1"),
        ({"thresold": 0.5}, "unknown context key 'thresold' \\(did you mean 'threshold'\\?\\)"),
        ({"review": "yes"}, "context key 'review': expected true or false"),
        ({"judge_model": "local:7b"}, "names no embedded model"),
        ({"judge_base_url": "ftp://x"}, "expected an http\\(s\\) URL"),
        ({"rules_file": "a.jsonl", "rule_set": "demo"}, "give one"),
    ],
)
def test_a_bad_setting_fails_the_run_with_a_clear_error(
    rules: list[Rule], context: dict[str, Any], message: str
) -> None:
    with pytest.raises(ContextError, match=message):
        build_app_graph(fake_models()).invoke({"input": CODE, "rules": _rules(rules)}, context=context)


def test_a_bad_input_fails_the_run_with_a_clear_error(rules: list[Rule]) -> None:
    graph = build_app_graph(fake_models())
    with pytest.raises(InputError, match="needs the task input as text"):
        graph.invoke({"input": "  ", "rules": _rules(rules)})
    with pytest.raises(InputError, match=r"input rules\[1\]: condition: Field required"):
        graph.invoke({"input": CODE, "rules": [_rules(rules)[0], {"rule_id": "X", "rule_name": "n", "action": "a"}]})
    with pytest.raises(InputError, match="input rules: duplicate rule_id 'R-001'"):
        graph.invoke({"input": CODE, "rules": _rules(rules[:1]) * 2})


def test_progress_events_count_the_rules_judged_and_the_matches(rules: list[Rule]) -> None:
    graph = build_app_graph(fake_models())
    events = [e for e in graph.stream({"input": CODE, "rules": _rules(rules)}, stream_mode="custom")]
    assert all(e["event"] == PROGRESS_EVENT for e in events)
    match = [e for e in events if e["stage"] == "match"]
    assert [e["judged"] for e in match] == [0, 1, 2, 3, 4, 5, 5]
    assert {e["total"] for e in match} == {5}
    assert match[-1]["done"] and match[-1]["matched"] == 3
    assert [e["matched"] for e in match[:-1]] == sorted(e["matched"] for e in match[:-1])  # only grows
    check = [e for e in events if e["stage"] == "check"]
    assert check[0]["total"] == 3 and check[0]["round"] == 1 and check[-1]["done"] and check[-1]["matched"] == 1


def _reviewed(rules: list[Rule], checkpointer: Any, thread: str = "t1") -> tuple[Any, dict[str, Any]]:
    graph = build_app_graph(fake_models(), checkpointer=checkpointer)
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"input": CODE, "rules": _rules(rules)}, config, context={"review": True, "check_rounds": 0})
    return graph, config


def test_review_interrupts_with_the_matched_rules_and_the_closest_below_the_line(rules: list[Rule]) -> None:
    graph, config = _reviewed(rules, InMemorySaver())
    state = graph.get_state(config)
    assert state.next == ("review",)
    (pending,) = state.interrupts
    payload = pending.value
    assert payload["kind"] == REVIEW_KIND and payload["input"] == CODE
    assert _ids(payload["matched"]) == ["R-003", "R-004", "R-005"]
    assert _ids(payload["below"]) == ["R-001", "R-002"] and len(payload["below"]) <= BELOW_THE_LINE
    assert all(r["score"] < 0.5 for r in payload["below"])
    assert "resume with" in payload["resume"]


def test_resuming_with_an_edited_list_gives_the_executor_exactly_it(rules: list[Rule]) -> None:
    graph, config = _reviewed(rules, InMemorySaver())
    decision = {"drop": ["R-004"], "add": ["R-001"], "reviewer": "ana", "note": "R-004 is fine here"}
    out = graph.invoke(Command(resume=decision), config)
    assert given_ids(out["output"]) == ["R-003", "R-005", "R-001"]
    assert _ids(out["matched"]) == ["R-003", "R-005", "R-001"]
    assert out["matched"][2]["score"] < 0.5  # added below the line: its score kept
    review = out["review"]
    assert (review["reviewer"], review["added"], review["dropped"]) == ("ana", ["R-001"], ["R-004"])
    assert review["proposed"] == ["R-003", "R-004", "R-005"] and review["note"] == "R-004 is fine here"
    assert graph.get_state(config).values["review"] == review  # the thread's state records it


def test_resuming_with_approval_or_a_whole_list(rules: list[Rule]) -> None:
    graph, config = _reviewed(rules, InMemorySaver())
    assert given_ids(graph.invoke(Command(resume=True), config)["output"]) == ["R-003", "R-004", "R-005"]
    graph, config = _reviewed(rules, InMemorySaver(), thread="t2")
    out = graph.invoke(Command(resume=["R-002"]), config)
    assert given_ids(out["output"]) == ["R-002"] and out["review"]["reviewer"] == "anonymous"


def test_a_bad_resume_value_asks_again_saying_why(rules: list[Rule]) -> None:
    graph, config = _reviewed(rules, InMemorySaver())
    graph.invoke(Command(resume=["R-404"]), config)
    (pending,) = graph.get_state(config).interrupts
    assert pending.value["error"] == "review: no rule 'R-404' in this run's rules"
    assert _ids(pending.value["matched"]) == ["R-003", "R-004", "R-005"]
    graph.invoke(Command(resume=42), config)
    assert "cannot read the resume value 42" in graph.get_state(config).interrupts[0].value["error"]
    out = graph.invoke(Command(resume={"rule_ids": ["R-001"], "reviewer": "cy"}), config)
    assert given_ids(out["output"]) == ["R-001"] and out["review"]["reviewer"] == "cy"


def test_review_resumes_from_a_sqlite_checkpoint_in_a_second_process(rules: list[Rule], tmp_path: Path) -> None:
    sqlite = pytest.importorskip("langgraph.checkpoint.sqlite")
    import sqlite3

    db = tmp_path / "threads.sqlite"
    saver = sqlite.SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    graph = build_app_graph(fake_models({"demo": rules}), checkpointer=saver)
    config = {"configurable": {"thread_id": "review-1"}}
    graph.invoke({"input": CODE}, config, context={"review": True, "check_rounds": 1})
    assert graph.get_state(config).next == ("review",)
    saver.conn.close()
    decision = {"rule_ids": ["R-004", STUBBORN], "reviewer": "bo"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.helpers.app_fakes", str(db), "review-1", json.dumps(decision), json.dumps(_rules(rules))],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["review"]["approved"] == ["R-004", STUBBORN] and out["review"]["reviewer"] == "bo"
    assert out["rounds"] == 2 and given_ids(out["output"]) == [STUBBORN]  # the recorded check_rounds held
    assert _ids(out["findings"]) == [STUBBORN]


def test_a_run_builds_its_judge_cache_and_judge_state_once_across_its_nodes(
    rules: list[Rule], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = fake_models()
    caches: list[Any] = []
    judges: list[Any] = []
    states: list[Any] = []

    def cache() -> InMemoryVerdictCache:
        caches.append(InMemoryVerdictCache())
        return caches[-1]

    def judge(settings: Any) -> Any:
        judges.append(base.judge(settings))
        return judges[-1]

    made = Judge.__init__

    def counting(self: Judge, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        states.append(self.state)  # kept, so no two states share an id

    monkeypatch.setattr(Judge, "__init__", counting)
    models = replace(base, cache=cache, judge=judge)
    out = build_app_graph(models).invoke({"input": CODE, "rules": _rules(rules)}, context={"check_rounds": 2})
    assert out["rounds"] == 3  # a match and three checks, each judging
    assert (len(caches), len(judges), len({id(state) for state in states})) == (1, 1, 1)


@pytest.mark.parametrize("where", ["missing", "directory"])
def test_a_rules_file_that_cannot_be_read_fails_the_run_naming_the_key_and_path(tmp_path: Path, where: str) -> None:
    path = tmp_path / "no-such-rules.jsonl" if where == "missing" else tmp_path
    graph = build_app_graph(fake_models())
    with pytest.raises(ContextError) as raised:
        graph.invoke({"input": CODE}, context={"rules_file": str(path)})
    message = str(raised.value)
    assert message.startswith("context key 'rules_file': ") and str(path) in message
    assert ("no such file" if where == "missing" else "a directory") in message


def test_a_relative_rules_file_names_where_the_server_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ContextError, match=r"'rules\.jsonl'") as raised:
        build_app_graph(fake_models()).invoke({"input": CODE}, context={"rules_file": "rules.jsonl"})
    assert str(tmp_path / "rules.jsonl") in str(raised.value)


def test_the_review_offers_each_rules_condition_and_source_span(rules: list[Rule]) -> None:
    spanned = [r.model_copy(update={"document_id": "style.md", "source_start": 10, "source_end": 30}) for r in rules]
    graph, config = _reviewed(spanned, InMemorySaver())
    (pending,) = graph.get_state(config).interrupts
    by_id = {r.rule_id: r for r in spanned}
    for offered in pending.value["matched"] + pending.value["below"]:
        rule = by_id[offered["rule_id"]]
        assert offered["condition"] == rule.condition and offered["action"] == rule.action
        assert offered["source"] == {"text": rule.source_text, "document_id": "style.md", "start": 10, "end": 30}
    out = graph.invoke(Command(resume=True), config)
    assert set(out["matched"][0]) == {"rule_id", "rule_name", "action", "score"}  # the output's refs stay short
