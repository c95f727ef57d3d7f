from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from langchain_tag.errors import TagError
from langchain_tag.integrations.similarity import in_memory_chroma
from langchain_tag.judging.results import JudgmentsFailedError
from langchain_tag.retrievers import AllRulesRetriever, ApplicabilityRetriever, RelevanceRetriever
from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel, HashingEmbeddings, fake_judge, judged_rule_id


def test_returns_matched_rule_documents_with_verdict(rule_docs: list[Document]) -> None:
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-003", "R-005"}), rules=rule_docs)
    docs = retriever.invoke("def f():\n\ttry: pass\n\texcept: pass")
    assert [d.metadata["rule_id"] for d in docs] == ["R-003", "R-005"]
    assert all(d.metadata["tag_verdict"] == "YES" for d in docs)
    assert all("tag_score" not in d.metadata for d in docs)  # no logprobs, no probability
    assert Rule.from_document(docs[0]).action == "ACTION<indent with four spaces>"


def test_accepts_rule_objects(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-001"}), rules=rules)
    assert [d.id for d in retriever.invoke("q")] == ["R-001"]


_GRADED = {"R-001": 0.6, "R-002": 0.9, "R-003": 0.8, "R-004": 0.1, "R-005": 0.7}


def _graded(text: str) -> tuple[str, float]:
    """A judge reply with P(YES) from ``_GRADED`` for the rule in the prompt."""
    p_yes = _GRADED[judged_rule_id(text) or ""]
    return ("YES" if p_yes > 0.5 else "NO", p_yes)


def test_k_caps_by_probability(rules: list[Rule]) -> None:
    llm = FakeChatModel(respond=_graded, with_logprobs=True)
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, k=2)
    docs = retriever.invoke("q")
    assert [d.id for d in docs] == ["R-002", "R-003"]
    assert docs[0].metadata["tag_score"] == pytest.approx(0.9)
    assert [d.id for d in retriever.invoke("q", k=3)] == ["R-002", "R-003", "R-005"]


def test_failures_are_reported_in_metadata(rules: list[Rule]) -> None:
    def respond(text: str) -> str:
        if judged_rule_id(text) == "R-004":
            return "¯\\_(ツ)_/¯"
        return "YES" if judged_rule_id(text) == "R-001" else "NO"

    docs = ApplicabilityRetriever(llm=FakeChatModel(respond=respond), rules=rules).invoke("q")
    assert [d.id for d in docs] == ["R-001"]
    assert docs[0].metadata["tag_failed_rule_ids"] == "R-004"


def _garbled(rule_ids: set[str], yes: set[str] = frozenset()) -> FakeChatModel:  # type: ignore[assignment]
    """A judge whose replies for ``rule_ids`` cannot be read; YES for ``yes``, NO for the rest."""

    def respond(text: str) -> str:
        rule_id = judged_rule_id(text)
        return "¯\\_(ツ)_/¯" if rule_id in rule_ids else ("YES" if rule_id in yes else "NO")

    return FakeChatModel(respond=respond)


class _Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data))


def test_failed_ids_reach_the_caller_when_nothing_matched(rules: list[Rule], caplog: pytest.LogCaptureFixture) -> None:
    retriever = ApplicabilityRetriever(llm=_garbled({"R-002", "R-004"}), rules=rules)
    events = _Events()
    with caplog.at_level("WARNING", logger="langchain_tag.judging.chat"):
        docs = retriever.invoke("q", config={"callbacks": [events]})
    assert docs == []
    assert retriever.last_match is not None
    assert [j.rule_id for j in retriever.last_match.failed] == ["R-002", "R-004"]
    assert "R-002, R-004" in caplog.text and "counted as NO" in caplog.text
    assert [(name, data["failed_rule_ids"]) for name, data in events.events] == [
        ("tag_judgments_failed", ["R-002", "R-004"])
    ]


async def test_async_failed_ids_reach_the_caller_when_nothing_matched(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=_garbled({"R-003"}), rules=rules)
    events = _Events()
    assert await retriever.ainvoke("q", config={"callbacks": [events]}) == []
    assert retriever.last_match is not None and [j.rule_id for j in retriever.last_match.failed] == ["R-003"]
    assert [data["failed_rule_ids"] for _, data in events.events] == [["R-003"]]


def test_no_failure_no_event_and_last_match_is_kept(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-001"}), rules=rules)
    assert retriever.last_match is None
    events = _Events()
    retriever.invoke("q", config={"callbacks": [events]})
    assert events.events == []
    assert retriever.last_match is not None and retriever.last_match.failed == []
    assert [j.rule_id for j in retriever.last_match.matched] == ["R-001"]


def test_strict_raises_with_the_failed_ids_and_the_result(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=_garbled({"R-004"}, yes={"R-001"}), rules=rules, strict=True)
    with pytest.raises(JudgmentsFailedError, match=r"1 of 5 judgments .* failed after 2 attempt\(s\): R-004") as caught:
        retriever.invoke("q")
    assert isinstance(caught.value, TagError)
    assert caught.value.failed_rule_ids == ["R-004"]
    assert [j.rule_id for j in caught.value.result.matched] == ["R-001"]
    assert retriever.last_match is caught.value.result
    with pytest.raises(JudgmentsFailedError):
        retriever.match("q")


async def test_strict_raises_on_the_async_path(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=_garbled({"R-005"}), rules=rules, strict=True)
    with pytest.raises(JudgmentsFailedError) as caught:
        await retriever.ainvoke("q")
    assert caught.value.failed_rule_ids == ["R-005"]


def test_strict_passes_when_every_judgment_was_read(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-002"}), rules=rules, strict=True)
    assert [d.id for d in retriever.invoke("q")] == ["R-002"]


def test_match_gives_full_result(rules: list[Rule]) -> None:
    result = ApplicabilityRetriever(llm=fake_judge({"R-002"}), rules=rules).match("q")
    assert len(result.judgments) == 5 and [j.rule_id for j in result.matched] == ["R-002"]


async def test_async_matches_sync(rule_docs: list[Document]) -> None:
    retriever = ApplicabilityRetriever(
        llm=fake_judge({"R-001", "R-004"}, delay=0.01), rules=rule_docs, max_concurrency=2
    )
    sync_ids = [d.id for d in retriever.invoke("q")]
    async_ids = [d.id for d in await retriever.ainvoke("q")]
    assert sync_ids == async_ids == ["R-001", "R-004"]


def test_max_concurrency_reaches_the_model(rule_docs: list[Document]) -> None:
    llm = fake_judge(set(), delay=0.03)
    ApplicabilityRetriever(llm=llm, rules=rule_docs, max_concurrency=2).invoke("q")
    assert llm.max_in_flight == 2


class _Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.retriever_runs: list[UUID] = []
        self.llm_parents: list[UUID | None] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any) -> None:
        self.retriever_runs.append(run_id)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self.llm_parents.append(parent_run_id)


def test_callbacks_are_passed_down_to_each_judgment(rule_docs: list[Document]) -> None:
    recorder = _Recorder()
    ApplicabilityRetriever(llm=fake_judge({"R-001"}), rules=rule_docs).invoke("q", config={"callbacks": [recorder]})
    assert len(recorder.retriever_runs) == 1
    assert len(recorder.llm_parents) == 5
    # Every judgment is a child run of the retriever run.
    assert set(recorder.llm_parents) == {recorder.retriever_runs[0]}


def test_relevance_retriever_sees_actions(rule_docs: list[Document]) -> None:
    llm = FakeChatModel(respond=lambda t: "YES" if "four spaces" in t else "NO")
    assert [d.id for d in RelevanceRetriever(llm=llm, rules=rule_docs).invoke("q")] == ["R-003"]
    assert [d.id for d in ApplicabilityRetriever(llm=llm, rules=rule_docs).invoke("q")] == []


def test_all_rules_retriever(rule_docs: list[Document]) -> None:
    assert len(AllRulesRetriever(rules=rule_docs).invoke("q")) == 5
    assert [d.id for d in AllRulesRetriever(rules=rule_docs, k=2).invoke("q")] == ["R-001", "R-002"]


def test_from_chroma_judges_every_stored_rule(rule_docs: list[Document]) -> None:
    store = in_memory_chroma(rule_docs, HashingEmbeddings())
    llm = fake_judge({"R-005"})
    retriever = ApplicabilityRetriever.from_vectorstore(llm, store)
    assert [d.metadata["rule_id"] for d in retriever.invoke("try: x\nexcept: pass")] == ["R-005"]
    assert llm.calls == 5


def test_from_chroma_with_candidates_judges_only_top_n(rules: list[Rule]) -> None:
    store = in_memory_chroma([r.to_document(content="search") for r in rules], HashingEmbeddings())
    llm = fake_judge({"R-003", "R-001"})
    retriever = ApplicabilityRetriever.from_vectorstore(llm, store, candidates=2)
    docs = retriever.invoke("a line is indented with tab characters")
    assert llm.calls == 2
    assert [d.metadata["rule_id"] for d in docs] == ["R-003"]  # R-001 not among the 2 candidates


def test_constructor_errors(rule_docs: list[Document]) -> None:
    with pytest.raises(ValueError, match="needs rules="):
        ApplicabilityRetriever(llm=fake_judge(set()))
    with pytest.raises(ValueError, match="candidates= needs a vectorstore"):
        ApplicabilityRetriever(llm=fake_judge(set()), rules=rule_docs, candidates=3)
    with pytest.raises(ValueError, match="not a rule document"):
        ApplicabilityRetriever(llm=fake_judge(set()), rules=[Document(page_content="plain chunk")])


def test_drop_in_replacement_in_an_lcel_chain(rule_docs: list[Document]) -> None:
    """The retriever slots into the usual {"context": retriever, ...} | prompt | llm chain."""
    answer_llm = FakeChatModel(
        respond=lambda text: "ANSWER using " + ("tabs rule" if "four spaces" in text else "nothing")
    )
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-003"}), rules=rule_docs)
    prompt = ChatPromptTemplate.from_template("Rules:\n{context}\n\nCode:\n{question}")

    def fmt(docs: list[Document]) -> str:
        return "\n".join(d.metadata["action"] for d in docs)

    chain = {"context": retriever | fmt, "question": RunnablePassthrough()} | prompt | answer_llm | StrOutputParser()
    assert chain.invoke("def f():\n\treturn 1") == "ANSWER using tabs rule"


def test_documents_of_a_match_result_are_what_invoke_returns(rules: list[Rule]) -> None:
    probs = {"R-001": 0.6, "R-002": 0.9, "R-003": 0.8, "R-004": 0.1, "R-005": 0.2}

    def respond(text: str) -> tuple[str, float]:
        rid = judged_rule_id(text)
        return ("YES" if probs[rid] > 0.5 else "NO", probs[rid])

    llm = FakeChatModel(respond=respond, with_logprobs=True)
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, k=2)
    from_match = retriever.documents(retriever.match("q"))
    calls = llm.calls
    invoked = retriever.invoke("q")  # answered from the verdict cache
    assert llm.calls == calls
    assert [(d.id, d.metadata) for d in from_match] == [(d.id, d.metadata) for d in invoked]
    assert [d.metadata["rule_id"] for d in invoked] == ["R-002", "R-003"]


# ---------------------------------------------------------------- the user's documents
def test_returns_the_users_documents_with_verdict_keys_added() -> None:
    mine = Document(
        page_content="Catch the specific exception class (see the style guide).",
        metadata={
            "rule_id": "R-7",
            "rule_name": "bare except",
            "condition": "an except clause names no exception class",
            "action": "catch the specific exception class",
            "severity": "high",
            "url": "https://example.org/style#except",
        },
        id="style-7",
    )
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-7"}), rules=[mine])
    (doc,) = retriever.invoke("try: pass\nexcept: pass")
    assert doc.page_content == mine.page_content and doc.id == "style-7"
    assert doc.metadata["severity"] == "high" and doc.metadata["url"] == "https://example.org/style#except"
    assert doc.metadata["tag_verdict"] == "YES"
    assert doc is not mine and "tag_verdict" not in mine.metadata  # a copy: the user's document is untouched


def test_user_metadata_kept_for_rules_drawn_from_a_vector_store() -> None:
    rule = Rule(rule_id="R-1", rule_name="n", condition="c holds", action="do a", severity="low")  # type: ignore[call-arg]
    doc = rule.to_document()
    doc.metadata["chroma_extra"] = "kept"
    doc.page_content = "do a (my wording)"
    store = in_memory_chroma([doc], HashingEmbeddings())
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-1"}), vectorstore=store, candidates=1)
    (found,) = retriever.invoke("q")
    assert found.metadata["chroma_extra"] == "kept" and found.metadata["severity"] == "low"
    assert found.page_content == "do a (my wording)"


def test_format_docs_chain_hands_the_executor_actions_never_conditions(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-001", "R-003"}), rules=rules)
    seen: list[str] = []

    def executor(text: str) -> str:
        seen.append(text)
        return "ok"

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    prompt = ChatPromptTemplate.from_template("Rules:\n{context}\n\nInput:\n{question}")
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | FakeChatModel(respond=executor)
        | StrOutputParser()
    )
    assert chain.invoke("q") == "ok"
    by_id = {r.rule_id: r for r in rules}
    for rule_id in ("R-001", "R-003"):
        assert by_id[rule_id].action in seen[0]
        assert by_id[rule_id].condition not in seen[0]


# ---------------------------------------------------------------- misconfiguration refused
@pytest.mark.parametrize(
    ("option", "named"),
    [
        ({"treshold": 0.9}, "did you mean threshold"),
        ({"search_kwargs": {"k": 1}}, "search_kwargs"),
        ({"top_k": 1}, "k="),
    ],
)
def test_unknown_options_are_refused(rules: list[Rule], option: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match="unknown option") as info:
        ApplicabilityRetriever(llm=fake_judge(set()), rules=rules, **option)
    assert named in str(info.value)
    with pytest.raises(ValueError, match="unknown option"):
        AllRulesRetriever(rules=rules, **option)


def test_base_retriever_fields_still_accepted(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-001"}), rules=rules, tags=["mine"], metadata={"team": "a"})
    assert retriever.tags == ["mine"] and retriever.metadata == {"team": "a"}
    assert [d.id for d in retriever.invoke("q")] == ["R-001"]


def test_per_call_threshold_and_k(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=FakeChatModel(respond=_graded, with_logprobs=True), rules=rules)
    assert [d.id for d in retriever.invoke("q", threshold=0.75)] == ["R-002", "R-003"]
    assert [d.id for d in retriever.invoke("q")] == ["R-002", "R-003", "R-005", "R-001"]  # not kept
    assert [d.id for d in retriever.invoke("q", threshold=0.65, k=2)] == ["R-002", "R-003"]
    with pytest.raises(ValueError, match="k must be"):
        retriever.invoke("q", k=-1)


async def test_per_call_threshold_async(rules: list[Rule]) -> None:
    def respond(text: str) -> tuple[str, float]:
        return ("YES", 0.9) if judged_rule_id(text) == "R-002" else ("YES", 0.6)

    retriever = ApplicabilityRetriever(llm=FakeChatModel(respond=respond, with_logprobs=True), rules=rules)
    assert [d.id for d in await retriever.ainvoke("q", threshold=0.8)] == ["R-002"]


@pytest.mark.parametrize("use_async", [False, True])
async def test_config_max_concurrency_is_honoured(rules: list[Rule], use_async: bool) -> None:
    llm = fake_judge({"R-001"}, delay=0.02)
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, max_concurrency=8)
    if use_async:
        await retriever.ainvoke("q", config={"max_concurrency": 1})
    else:
        retriever.invoke("q", config={"max_concurrency": 1})
    assert llm.calls == len(rules) and llm.max_in_flight == 1


def test_a_field_changed_after_construction_takes_effect(rules: list[Rule]) -> None:
    retriever = ApplicabilityRetriever(llm=fake_judge({"R-001"}, with_logprobs=True), rules=rules, calibration=None)
    assert [d.metadata["rule_id"] for d in retriever.invoke("q")] == ["R-001"]
    retriever.threshold = 1.0  # a fake P(YES) for YES is below 1
    assert retriever.invoke("q") == []
    retriever.threshold = None
    retriever.k = 0
    assert retriever.invoke("q") == []
    retriever.k = None
    retriever.strict = True
    retriever.llm = FakeChatModel(respond=lambda text: "YES" if judged_rule_id(text) == "R-002" else "maybe")
    with pytest.raises(JudgmentsFailedError):
        retriever.invoke("another query")
    with pytest.raises(ValueError):
        retriever.threshold = 2.0


def test_first_contrast_query_with_references_builds_one_judge(
    rules: list[Rule], monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_tag.judging.calibration import defaults as module
    from langchain_tag.judging.calibration.model import Calibration
    from langchain_tag.judging.chat import ChatJudge

    shipped = Calibration(
        reference_inputs=("x = 1", "y = 2"),
        centre_per_input=True,
        prompt_version="judge-applicability-v5+judge-applicability-negated-v1",
    )
    monkeypatch.setitem(module.DEFAULT_CALIBRATIONS, "fakechatmodel#contrast", shipped)
    built: list[ChatJudge] = []
    original = ChatJudge.__init__

    def counting(self: ChatJudge, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        original(self, *args, **kwargs)

    llm = fake_judge({"R-001"}, with_logprobs=True)
    retriever = ApplicabilityRetriever(llm=llm, rules=rules, predicate="applicability-contrast")
    monkeypatch.setattr(ChatJudge, "__init__", counting)
    retriever.invoke("from m import *")
    assert len(built) == 1
    assert llm.calls == 2 * len(rules) * 3  # the query and two references, each rule asked both ways
    assert retriever.judge.reference_log_odds(rules[0])[0] is not None


# ---------------------------------------------------------------- a copy judges with its own settings, never a stale judge
def _used(rules: list[Rule], **kwargs: Any) -> ApplicabilityRetriever:
    """A retriever whose judge has been built (as its first call builds it)."""
    retriever = ApplicabilityRetriever(rules=rules, **kwargs)
    assert retriever.judge is retriever.judge
    return retriever


def test_a_copy_with_a_lower_concurrency_caps_the_calls_in_flight(rules: list[Rule]) -> None:
    from langchain_tag.scale.bulk import match_corpus

    llm = fake_judge({"R-001"}, delay=0.05)
    retriever = _used(rules, llm=llm, max_concurrency=8, cache=None)
    list(match_corpus(["a", "b", "c"], retriever, max_concurrency=2))
    assert llm.max_in_flight <= 2


def test_a_copy_with_a_higher_threshold_judges_with_it(rules: list[Rule]) -> None:
    retriever = _used(rules, llm=fake_judge({r.rule_id for r in rules}, with_logprobs=True), calibration=None)
    assert len(retriever.invoke("q")) == len(rules)  # every rule at P(YES) 0.9
    strict = retriever.model_copy(update={"threshold": 0.99})
    assert strict.invoke("q") == []
    assert len(retriever.invoke("q")) == len(rules)  # the original keeps its own threshold


def test_a_copy_with_another_model_sends_every_call_to_that_model(rules: list[Rule]) -> None:
    old, cheap = fake_judge({"R-001"}), fake_judge({"R-002"})
    retriever = _used(rules, llm=old, cache=None)
    calls_before = old.calls
    copy = retriever.model_copy(update={"llm": cheap})
    assert [d.id for d in copy.invoke("q")] == ["R-002"]
    assert old.calls == calls_before
    assert cheap.calls == len(rules)


def test_an_assignment_takes_effect_at_the_next_call(rules: list[Rule]) -> None:
    retriever = _used(rules, llm=fake_judge({r.rule_id for r in rules}, with_logprobs=True), calibration=None)
    retriever.threshold = 0.99
    assert retriever.invoke("q") == []
    assert retriever.judge.settings.threshold == 0.99


def test_a_copy_with_other_rules_judges_those_rules(rules: list[Rule]) -> None:
    retriever = _used(rules, llm=fake_judge({"R-001", "R-002"}))
    copy = retriever.model_copy(update={"rules": rules[1:]})
    assert [d.id for d in copy.invoke("q")] == ["R-002"]
    assert [d.id for d in retriever.invoke("q")] == ["R-001", "R-002"]
