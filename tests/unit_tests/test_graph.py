from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.documents import Document

from langchain_tag.graph import build_tag_graph, make_retriever
from langchain_tag.judging.results import JudgmentsFailedError
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import (
    FakeChatModel,
    HashingEmbeddings,
    asks_negation,
    fake_extraction_reply,
    fake_judge,
    judged_rule_id,
)

SOURCE = Document(
    page_content=(
        "Indentation\n===========\n\nUse four spaces per indentation level. Never mix tabs and spaces.\n\n"
        "Imports\n=======\n\nImports should be on separate lines. Wildcard imports should be avoided."
    ),
    id="style",
)


def _executor() -> FakeChatModel:
    return FakeChatModel(respond=lambda text: "DONE")


def _executor_prompt(llm: FakeChatModel) -> str:
    prompts = [p for p in llm.prompts if "INPUT:\n" in p and "RULE:" not in p]
    assert len(prompts) == 1
    return prompts[0]


@pytest.mark.parametrize(
    ("mode", "kind", "expected_ids"),
    [
        ("tag", "rules", ["R-003"]),
        ("all_rules", "rules", ["R-001", "R-002", "R-003", "R-004", "R-005"]),
        ("none", "none", []),
    ],
)
def test_modes_give_the_executor_what_they_should(
    rules: list[Rule], mode: str, kind: str, expected_ids: list[str]
) -> None:
    executor = _executor()
    graph = build_tag_graph(
        executor, judge_llm=fake_judge({"R-003"}), rules=[r.to_document() for r in rules], mode=mode, check_rounds=0
    )
    out = graph.invoke({"input": "def f():\n\treturn 1"})
    assert out["output"] == "DONE" and out["unit_kind"] == kind
    assert [d.metadata["rule_id"] for d in out["retrieved"]] == expected_ids
    prompt = _executor_prompt(executor)
    for rule in rules:
        assert (rule.action in prompt) == (rule.rule_id in expected_ids)
        assert rule.condition not in prompt  # the executor never sees conditions
        assert rule.source_text not in prompt


def test_relevance_mode_uses_the_relevance_judge(rules: list[Rule]) -> None:
    judge = FakeChatModel(respond=lambda t: "YES" if "relevant" in t and judged_rule_id(t) == "R-001" else "NO")
    graph = build_tag_graph(_executor(), judge_llm=judge, rules=[r.to_document() for r in rules], mode="relevance")
    assert [d.id for d in graph.invoke({"input": "q"})["retrieved"]] == ["R-001"]


def test_similarity_mode_gives_chunks_of_the_source(rules: list[Rule]) -> None:
    executor = _executor()
    graph = build_tag_graph(
        executor,
        rules=[r.to_document() for r in rules],
        documents=[SOURCE],
        mode="similarity",
        embeddings=HashingEmbeddings(),
        k=1,
    )
    out = graph.invoke({"input": "wildcard imports"})
    assert out["unit_kind"] == "chunks" and len(out["retrieved"]) == 1
    chunk = out["retrieved"][0]
    assert len(chunk.page_content) <= 500 and chunk.page_content in SOURCE.page_content
    assert chunk.page_content in _executor_prompt(executor)


def test_similarity_over_rules_when_no_source(rules: list[Rule]) -> None:
    graph = build_tag_graph(
        _executor(), rules=[r.to_document() for r in rules], mode="similarity", embeddings=HashingEmbeddings(), k=2
    )
    out = graph.invoke({"input": "a function has a list as a default argument value"})
    assert out["unit_kind"] == "rules" and out["retrieved"][0].metadata["rule_id"] == "R-004"


def test_mode_can_be_overridden_per_call(rules: list[Rule]) -> None:
    graph = build_tag_graph(_executor(), judge_llm=fake_judge({"R-002"}), rules=[r.to_document() for r in rules])
    assert len(graph.invoke({"input": "q", "mode": "all_rules"})["retrieved"]) == 5
    assert [d.id for d in graph.invoke({"input": "q"})["retrieved"]] == ["R-002"]
    with pytest.raises(ValueError, match="unknown mode 'bm25'"):
        graph.invoke({"input": "q", "mode": "bm25"})


def test_extract_node_runs_once_when_no_rules_are_given() -> None:
    def respond(text: str) -> str:
        if "RULE:\n" in text:
            return "YES" if "wildcard" in text.split("RULE:")[1].lower() else "NO"
        if 'Return {"' in text:
            return fake_extraction_reply(text)
        return "DONE"

    llm = FakeChatModel(respond=respond)
    graph = build_tag_graph(llm, documents=[SOURCE])
    out = graph.invoke({"input": "from os import *"})
    assert len(out["rules"]) == 4
    assert [d.metadata["rule_name"] for d in out["retrieved"]] == ["wildcard imports should be avoided"]
    calls = llm.calls
    graph.invoke({"input": "from os import *"})
    assert not any('Return {"spans"' in p for p in llm.prompts[calls:])  # rules are reused


async def test_async_graph_matches_sync(rules: list[Rule]) -> None:
    graph = build_tag_graph(
        _executor(), judge_llm=fake_judge({"R-001", "R-005"}, delay=0.01), rules=[r.to_document() for r in rules]
    )
    sync = graph.invoke({"input": "q"})
    async_ = await graph.ainvoke({"input": "q"})
    assert [d.id for d in sync["retrieved"]] == [d.id for d in async_["retrieved"]] == ["R-001", "R-005"]


def test_strict_graph_fails_the_run_when_a_judgment_failed(rules: list[Rule]) -> None:
    def respond(text: str) -> str:
        return "maybe?" if judged_rule_id(text) == "R-002" else "NO"

    graph = build_tag_graph(
        _executor(), retriever=ApplicabilityRetriever(llm=FakeChatModel(respond=respond), rules=rules, strict=True)
    )
    with pytest.raises(JudgmentsFailedError) as caught:
        graph.invoke({"input": "q"})
    assert caught.value.failed_rule_ids == ["R-002"]
    lenient = build_tag_graph(_executor(), judge_llm=FakeChatModel(respond=respond), rules=rules)
    assert lenient.invoke({"input": "q"})["retrieved"] == []
    retriever, _ = make_retriever(
        "relevance", retriever=ApplicabilityRetriever(llm=FakeChatModel(respond=respond), rules=rules, strict=True)
    )
    with pytest.raises(JudgmentsFailedError):
        retriever.invoke("q")  # type: ignore[union-attr]


def test_builder_errors() -> None:
    with pytest.raises(ValueError, match="needs rules= or documents="):
        build_tag_graph(_executor())
    with pytest.raises(ValueError, match="unknown mode"):
        build_tag_graph(_executor(), rules=[], mode="bm25")  # type: ignore[arg-type]


# ---------------------------------------------------------------- a graph as LangChain users run it
def test_judged_mode_retriever_is_built_once_so_its_cache_serves_repeated_calls(rules: list[Rule]) -> None:
    judge = fake_judge({"R-002"})
    graph = build_tag_graph(_executor(), judge_llm=judge, rules=[r.to_document() for r in rules], check_rounds=0)
    for _ in range(3):
        graph.invoke({"input": "same input"})
    assert judge.calls == len(rules)


def test_per_call_mode_does_not_persist_on_a_checkpointed_thread(rules: list[Rule]) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    graph = build_tag_graph(
        _executor(),
        judge_llm=fake_judge({"R-002"}),
        rules=[r.to_document() for r in rules],
        checkpointer=InMemorySaver(),
    )
    thread = {"configurable": {"thread_id": "t1"}}
    assert len(graph.invoke({"input": "q", "mode": "all_rules"}, thread)["retrieved"]) == 5
    assert [d.id for d in graph.invoke({"input": "q2"}, thread)["retrieved"]] == ["R-002"]
    per_call = {"configurable": {"thread_id": "t1", "mode": "all_rules"}}
    assert len(graph.invoke({"input": "q3"}, per_call)["retrieved"]) == 5
    assert [d.id for d in graph.invoke({"input": "q4"}, thread)["retrieved"]] == ["R-002"]


def test_judge_tokens_stay_out_of_message_streams(rules: list[Rule]) -> None:
    graph = build_tag_graph(
        FakeChatModel(respond=lambda text: "EXECUTED"), judge_llm=fake_judge({"R-002"}), rules=rules
    )
    streamed = [message.content for message, _ in graph.stream({"input": "q"}, stream_mode="messages")]
    assert streamed and all("EXECUTED" in str(c) for c in streamed)


def test_judge_runs_are_named_and_carry_their_rule_id(rules: list[Rule]) -> None:
    from langchain_core.tracers.context import collect_runs

    graph = build_tag_graph(_executor(), judge_llm=fake_judge({"R-002"}), rules=rules, check_rounds=0)
    with collect_runs() as collector:
        graph.invoke({"input": "q"})
    judged: list[Any] = []
    stack = list(collector.traced_runs)
    while stack:
        run = stack.pop()
        stack.extend(run.child_runs)
        if run.run_type in ("llm", "chat_model") and "tag_judge" in (run.tags or []):
            judged.append(run)
    assert sorted(r.extra["metadata"]["tag_rule_id"] for r in judged) == [r.rule_id for r in rules]
    assert {r.name for r in judged} == {f"tag_judge {r.rule_id}" for r in rules}


@pytest.mark.parametrize("state", [{}, {"input": ""}, {"input": 3}])
def test_missing_input_is_a_clear_error(rules: list[Rule], state: dict[str, Any]) -> None:
    graph = build_tag_graph(_executor(), judge_llm=fake_judge(set()), rules=rules)
    with pytest.raises(ValueError, match="needs the task input"):
        graph.invoke(state)


@pytest.mark.parametrize("mode", ["tag", "all_rules", "similarity"])
def test_rule_objects_work_in_every_mode(rules: list[Rule], mode: Any) -> None:
    graph = build_tag_graph(
        _executor(), judge_llm=fake_judge({"R-004"}), rules=rules, mode=mode, embeddings=HashingEmbeddings(), k=1
    )
    out = graph.invoke({"input": "a function has a list as a default argument value"})
    assert out["retrieved"] and all(isinstance(d, Document) for d in out["retrieved"])
    assert all(d.metadata["rule_id"] == "R-004" for d in out["retrieved"]) or mode == "all_rules"


def test_reference_inputs_reach_the_tag_modes_judge(monkeypatch: pytest.MonkeyPatch, rules: list[Rule]) -> None:
    from langchain_tag.judging.calibration import defaults as module
    from langchain_tag.judging.prompts import JUDGE_PROMPTS

    version = JUDGE_PROMPTS["applicability"].version
    domain = {"method": "threshold", "standardise": True, "threshold": 0.6, "prompt_version": version}
    monkeypatch.setitem(module.DOMAIN_REFERENCE_CALIBRATIONS, "fakechatmodel", domain)
    sample = ["a = 1", "b = 2", "c = 3", "d = 4"]
    judge = fake_judge({"R-003"}, with_logprobs=True)  # says YES to R-003 whatever the input
    graph = build_tag_graph(
        _executor(), retriever=ApplicabilityRetriever(llm=judge, rules=rules, reference_inputs=sample)
    )
    assert graph.invoke({"input": "q"})["retrieved"] == []  # R-003 is as likely on the sample: nothing stands out
    assert judge.calls == len(rules) * (len(sample) + 1)
    plain = build_tag_graph(_executor(), judge_llm=fake_judge({"R-003"}, with_logprobs=True), rules=rules)
    assert [d.id for d in plain.invoke({"input": "q"})["retrieved"]] == ["R-003"]
    retriever, _ = make_retriever(
        "tag", retriever=ApplicabilityRetriever(llm=judge, rules=rules, reference_inputs=sample)
    )
    assert retriever.judge.calibration.reference_inputs == tuple(sample)  # type: ignore[union-attr]


def test_a_verdict_cache_given_to_the_graph_is_shared_by_its_judged_modes(rules: list[Document]) -> None:
    from langchain_tag.judging.verdict_cache import InMemoryVerdictCache

    cache = InMemoryVerdictCache()
    judge = fake_judge({"R-001"})
    graph = build_tag_graph(
        _executor(),
        retriever=ApplicabilityRetriever(llm=judge, rules=rules, cache=cache, threshold=0.5),
        check_rounds=0,
    )
    graph.invoke({"input": "q"})
    calls = judge.calls
    again = build_tag_graph(
        _executor(),
        retriever=ApplicabilityRetriever(llm=judge, rules=rules, cache=cache, threshold=0.5),
        check_rounds=0,
    )
    again.invoke({"input": "q"})
    assert calls == len(rules) and judge.calls == calls  # the second graph read every verdict from the cache
    retriever, _ = make_retriever("relevance", retriever=ApplicabilityRetriever(llm=judge, rules=rules, cache=None))
    assert retriever.cache is None  # type: ignore[union-attr]


# ---------------------------------------------------------------- revise, then check
# A rule "holds" while the text contains its marker; the executor removes the markers of the rules it is given and
# can fix, and leaves the others.
MARKERS = {"R-001": "WILDCARD", "R-003": "TABBED", "R-004": "MUTABLE"}
BROKEN = "x = 1  # WILDCARD TABBED"


def _judged_input(prompt: str) -> str:
    return prompt.split("INPUT:\n<<<\n", 1)[1].split("\n>>>", 1)[0]


def _marker_judge(**kwargs: Any) -> FakeChatModel:
    """A judge that says YES to a rule while the judged text contains the rule's marker."""

    def respond(text: str) -> str:
        rule_id = judged_rule_id(text)
        if rule_id is None:
            return "I cannot tell."
        holds = rule_id in MARKERS and MARKERS[rule_id] in _judged_input(text)
        return "YES" if holds != asks_negation(text) else "NO"

    return FakeChatModel(respond=respond, **kwargs)


def _given_rule_ids(prompt: str) -> list[str]:
    return re.findall(r"^\[(R-\d+)\] ", prompt.split("INPUT:\n", 1)[0], re.MULTILINE)


def _fixing_executor(fixes: set[str], *, introduces: dict[str, str] | None = None) -> FakeChatModel:
    """Revises its input: the marker of each rule it is given and can fix is replaced (by ``introduces``' text)."""

    def respond(text: str) -> str:
        revision = text.split("INPUT:\n", 1)[1]
        for rule_id in _given_rule_ids(text):
            if rule_id in fixes:
                revision = revision.replace(MARKERS[rule_id], (introduces or {}).get(rule_id, "ok"))
        return revision

    return FakeChatModel(respond=respond)


def _ids(docs: list[Document]) -> list[str]:
    return sorted(d.metadata["rule_id"] for d in docs)


def test_a_revision_that_still_breaks_a_rule_gets_one_more_round_with_that_rule_only(rules: list[Rule]) -> None:
    executor, judge = _fixing_executor({"R-001"}), _marker_judge()
    graph = build_tag_graph(executor, judge_llm=judge, rules=rules, check_rounds=1)
    out = graph.invoke({"input": BROKEN})
    assert _ids(out["retrieved"]) == _ids(out["checked"]) == ["R-001", "R-003"]
    assert out["rounds"] == 2 and executor.calls == 2  # exactly one more round
    first, second = executor.prompts
    assert _given_rule_ids(first) == ["R-001", "R-003"] or _given_rule_ids(first) == ["R-003", "R-001"]
    assert _given_rule_ids(second) == ["R-003"]  # only the rule that still holds
    assert "[R-001]" not in second and second.split("INPUT:\n", 1)[1] == "x = 1  # ok TABBED"  # the revision
    assert _ids(out["remaining"]) == ["R-003"] and out["remaining"][0].metadata["tag_verdict"] == "YES"
    assert out["output"] == "x = 1  # ok TABBED"
    # the input against every rule, the first revision against the two (the second equals it: the cache answers)
    assert judge.calls == len(rules) + 2


def test_a_revision_that_fixes_every_rule_ends_after_one_round(rules: list[Rule]) -> None:
    executor, judge = _fixing_executor({"R-001", "R-003"}), _marker_judge()
    out = build_tag_graph(executor, judge_llm=judge, rules=rules, check_rounds=1).invoke({"input": BROKEN})
    assert out["rounds"] == 1 and executor.calls == 1
    assert _ids(out["checked"]) == ["R-001", "R-003"] and out["remaining"] == []
    assert judge.calls == len(rules) + 2


def test_the_loop_stops_at_the_configured_rounds(rules: list[Rule]) -> None:
    executor, judge = _fixing_executor(set()), _marker_judge()
    out = build_tag_graph(executor, judge_llm=judge, rules=rules, check_rounds=2).invoke({"input": BROKEN})
    assert out["rounds"] == 3 and executor.calls == 3
    assert _ids(out["remaining"]) == ["R-001", "R-003"]
    assert judge.calls == len(rules)  # the revisions equal the input: the tag mode's verdict cache answers the checks


def test_check_rounds_zero_runs_no_check(rules: list[Rule]) -> None:
    executor, judge = _fixing_executor(set()), _marker_judge()
    graph = build_tag_graph(executor, judge_llm=judge, rules=rules, check_rounds=0)
    out = graph.invoke({"input": BROKEN})
    assert judge.calls == len(rules) and executor.calls == 1
    assert out["rounds"] == 1 and out["checked"] == [] and out["remaining"] == []
    assert "check" not in graph.get_graph().nodes
    with pytest.raises(ValueError, match="check_rounds"):
        build_tag_graph(executor, judge_llm=judge, rules=rules, check_rounds=-1)


def test_the_check_gives_one_more_round_by_default(rules: list[Rule]) -> None:
    executor = _fixing_executor(set())  # never fixes anything: every matched rule still holds
    graph = build_tag_graph(executor, judge_llm=_marker_judge(), rules=rules)
    out = graph.invoke({"input": BROKEN})
    assert "check" in graph.get_graph().nodes
    assert out["rounds"] == 2 and executor.calls == 2 and out["remaining"]


def test_check_all_rules_catches_a_rule_the_revision_broke(rules: list[Rule]) -> None:
    def run(**kwargs: Any) -> dict[str, Any]:
        executor = _fixing_executor({"R-001"}, introduces={"R-001": "MUTABLE"})
        return build_tag_graph(executor, judge_llm=_marker_judge(), rules=rules, check_rounds=1, **kwargs).invoke(
            {"input": "x = 1  # WILDCARD"}
        )

    matched_only = run()
    assert matched_only["rounds"] == 1 and _ids(matched_only["checked"]) == ["R-001"]
    assert matched_only["remaining"] == []
    every = run(check_all_rules=True)
    assert len(every["checked"]) == len(rules) and every["rounds"] == 2
    assert _ids(every["remaining"]) == ["R-004"]  # the executor cannot fix what it introduced


def test_modes_without_a_judge_skip_the_check(rules: list[Rule]) -> None:
    executor = _fixing_executor(set())
    out = build_tag_graph(executor, rules=rules, mode="all_rules", check_rounds=1).invoke({"input": BROKEN})
    assert out["checked"] == [] and out["rounds"] == 1 and executor.calls == 1  # the executor is not a judge
    judge = _marker_judge()
    given = build_tag_graph(_fixing_executor(set()), judge_llm=judge, rules=rules, mode="all_rules", check_rounds=1)
    out = given.invoke({"input": BROKEN})
    assert len(out["checked"]) == len(rules) and _ids(out["remaining"]) == ["R-001", "R-003"]
    assert out["rounds"] == 2 and judge.calls == len(rules)  # the checks only (the second from the cache)


def test_the_check_uses_the_configured_retrievers_judge(rules: list[Rule]) -> None:
    from langchain_tag.judging.verdict_cache import InMemoryVerdictCache

    cache = InMemoryVerdictCache()
    judge = _marker_judge()
    retriever = ApplicabilityRetriever(llm=judge, rules=rules, cache=cache)
    out = build_tag_graph(_fixing_executor({"R-001"}), retriever=retriever, check_rounds=1).invoke({"input": BROKEN})
    assert _ids(out["remaining"]) == ["R-003"] and judge.calls == len(rules) + 2
    again = build_tag_graph(_fixing_executor({"R-001"}), retriever=retriever, check_rounds=1)
    assert _ids(again.invoke({"input": BROKEN})["remaining"]) == ["R-003"]
    assert judge.calls == len(rules) + 2  # every check verdict came from the retriever's cache


def test_streaming_yields_the_check_updates(rules: list[Rule]) -> None:
    graph = build_tag_graph(_fixing_executor({"R-001"}), judge_llm=_marker_judge(), rules=rules, check_rounds=1)
    updates = list(graph.stream({"input": BROKEN}, stream_mode="updates"))
    assert [next(iter(u)) for u in updates] == ["retrieve", "execute", "check", "execute", "check"]
    assert _ids(updates[2]["check"]["remaining"]) == ["R-003"] and updates[3]["execute"]["rounds"] == 2


async def test_async_check_loop_gives_the_state_sync_gives(rules: list[Rule]) -> None:
    def graph() -> Any:
        return build_tag_graph(
            _fixing_executor({"R-001"}), judge_llm=_marker_judge(delay=0.001), rules=rules, check_rounds=2
        )

    sync, async_ = graph().invoke({"input": BROKEN}), await graph().ainvoke({"input": BROKEN})
    assert sync["output"] == async_["output"] and sync["rounds"] == async_["rounds"] == 3
    for key in ("retrieved", "checked", "remaining"):
        assert _ids(sync[key]) == _ids(async_[key])
    updates = [next(iter(u)) async for u in graph().astream({"input": BROKEN}, stream_mode="updates")]
    assert updates == ["retrieve", "execute", "check", "execute", "check", "execute", "check"]


def test_the_drawing_shows_the_check_loop(rules: list[Rule]) -> None:
    graph = build_tag_graph(_executor(), judge_llm=_marker_judge(), rules=rules, check_rounds=1)
    drawn = graph.get_graph().draw_mermaid()
    assert "check(check)" in drawn and "execute --> check;" in drawn
    assert "check -.-> execute;" in drawn and "check -.-> __end__;" in drawn  # the conditional edge


def test_a_new_call_on_a_thread_starts_its_own_rounds(rules: list[Rule]) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    executor = _fixing_executor({"R-001"})
    graph = build_tag_graph(
        executor, judge_llm=_marker_judge(), rules=rules, check_rounds=1, checkpointer=InMemorySaver()
    )
    thread = {"configurable": {"thread_id": "t1"}}
    assert graph.invoke({"input": BROKEN}, thread)["rounds"] == 2
    out = graph.invoke({"input": "y = 2  # WILDCARD"}, thread)
    assert out["rounds"] == 1 and out["remaining"] == [] and out["output"] == "y = 2  # ok"
    assert executor.prompts[-1].split("INPUT:\n", 1)[1] == "y = 2  # WILDCARD"


def test_a_failed_check_judgment_is_reported_not_silent(rules: list[Rule]) -> None:
    from langchain_core.callbacks import BaseCallbackHandler

    events: list[tuple[str, Any]] = []

    class Events(BaseCallbackHandler):
        def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            events.append((name, data))

    marker = _marker_judge()

    def respond(text: str) -> Any:
        revised = judged_rule_id(text) == "R-003" and "ok" in _judged_input(text)
        return "maybe?" if revised else marker.respond(text)

    graph = build_tag_graph(
        _fixing_executor({"R-001"}), judge_llm=FakeChatModel(respond=respond), rules=rules, check_rounds=1
    )
    out = graph.invoke({"input": BROKEN}, {"callbacks": [Events()]})
    assert out["remaining"] == [] and out["rounds"] == 1  # counted as NO, as the retrieval does
    assert [(name, data["failed_rule_ids"]) for name, data in events] == [("tag_judgments_failed", ["R-003"])]
