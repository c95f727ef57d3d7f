from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware.internal_call_transformer import INTERNAL_CALL_METADATA_KEY, internal_call_metadata
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tag import ApplicabilityRetriever, ChatDecisionModel, JudgmentsFailedError
from langchain_tag.agents import TagMiddleware
from langchain_tag.testing import FakeChatModel, fake_judge, judged_rule_id

from .fakes import RULES, AgentModel, RunRecorder, input_judge, lookup

SYSTEM = "You review Python code."
CODE = "def add(x, xs=[]):\n    print(x)\n    return xs"


def _ask(text: str = CODE) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _agent(model: AgentModel, middleware: TagMiddleware, **kwargs: Any) -> Any:
    return create_agent(model, tools=[lookup], system_prompt=SYSTEM, middleware=[middleware], **kwargs)


def test_the_model_gets_the_matched_actions_and_not_the_others() -> None:
    model = AgentModel()
    agent = _agent(model, TagMiddleware(rules=RULES, judge=fake_judge({"R1", "R3"}, with_logprobs=True)))
    state = agent.invoke(_ask())
    (system,) = model.systems
    assert system.startswith(SYSTEM + "\n\n")  # the user's system message, as it was, then the block
    assert RULES[0].action in system and RULES[2].action in system
    assert RULES[1].action not in system
    assert all(rule.condition not in system for rule in RULES)  # the model never sees a condition
    assert state["messages"][-1].content == "answer with R1,R3"


def test_no_match_leaves_the_system_message_as_it_was() -> None:
    model = AgentModel()
    agent = _agent(model, TagMiddleware(rules=RULES, judge=fake_judge(set(), with_logprobs=True)))
    agent.invoke(_ask())
    assert model.systems == [SYSTEM]


def test_the_state_key_holds_the_matches_with_id_score_and_action() -> None:
    agent = _agent(AgentModel(), TagMiddleware(rules=RULES, judge=fake_judge({"R2"}, with_logprobs=True)))
    state = agent.invoke(_ask())
    (match,) = state["tag_matches"]
    assert (match["rule_id"], match["action"]) == ("R2", RULES[1].action)
    assert isinstance(match["score"], float) and match["score"] > 0.5
    assert state["tag_failures"] == []


@pytest.mark.parametrize("cache", ["default", None])
def test_a_tool_loop_judges_each_rule_once_per_input(cache: str | None) -> None:
    judge = fake_judge({"R1"}, with_logprobs=True)
    options = {} if cache == "default" else {"cache": None}
    retriever = ApplicabilityRetriever(llm=judge, rules=RULES, **options)
    model = AgentModel(loops=3)
    state = _agent(model, TagMiddleware(retriever)).invoke(_ask())
    assert len(model.systems) == 4  # three tool calls, then the answer
    assert all(RULES[0].action in s for s in model.systems)  # every call is told the rule
    assert judge.calls == len(RULES)  # ... which was judged once
    assert [m.content for m in state["messages"] if m.type == "tool"] == [lookup.invoke({"n": i}) for i in range(3)]


def test_a_thread_judges_a_new_input_and_reuses_an_input_judged_before() -> None:
    judge = input_judge({"R1": "xs=[]", "R2": "except:"})
    model = AgentModel(loops=1)
    agent = _agent(model, TagMiddleware(ApplicabilityRetriever(llm=judge, rules=RULES, cache=None)),
                   checkpointer=InMemorySaver())  # fmt: skip
    thread = {"configurable": {"thread_id": "t1"}}
    assert agent.invoke(_ask(CODE), thread)["messages"][-1].content == "answer with R1"
    assert judge.calls == 3
    state = agent.invoke(_ask("try:\n    go()\nexcept:\n    pass"), thread)
    assert state["messages"][-1].content == "answer with R2"
    assert [m["rule_id"] for m in state["tag_matches"]] == ["R2"]
    assert judge.calls == 6  # a new input: judged
    agent.invoke(_ask("try:\n    go()\nexcept:\n    pass"), thread)
    assert judge.calls == 6  # the same input again: its matches come from the thread's state, no cache needed


def test_judge_calls_are_internal_nostream_calls() -> None:
    recorder = RunRecorder()
    agent = _agent(AgentModel(), TagMiddleware(rules=RULES, judge=fake_judge({"R1"}, with_logprobs=True)))
    agent.invoke(_ask(), {"callbacks": [recorder]})
    judge_runs = [(tags, meta) for tags, meta in recorder.runs if "tag_rule_id" in meta]
    model_runs = [(tags, meta) for tags, meta in recorder.runs if "tag_rule_id" not in meta]
    assert len(judge_runs) == len(RULES) and len(model_runs) == 1
    marker = internal_call_metadata()[INTERNAL_CALL_METADATA_KEY]
    for tags, meta in judge_runs:
        assert "nostream" in tags
        assert meta[INTERNAL_CALL_METADATA_KEY] == marker
        assert meta["lc_source"] == "tag_rules"
    ((tags, meta),) = model_runs
    assert "nostream" not in tags and INTERNAL_CALL_METADATA_KEY not in meta


def _decision_judge(yes: set[str]) -> ChatDecisionModel:
    """A decision-model judge: its own calls carry no ``nostream`` tag, so only the middleware keeps them quiet."""
    chat = FakeChatModel(respond=lambda p: "YES" if any(f"(rule {r})" in p for r in yes) else "NO", with_logprobs=True)
    return ChatDecisionModel(llm=chat)


@pytest.mark.parametrize("kind", ["chat", "decisions"])
def test_streaming_messages_yields_the_models_tokens_and_no_judge_tokens(kind: str) -> None:
    judge = fake_judge({"R1"}, with_logprobs=True) if kind == "chat" else _decision_judge({"R1"})
    agent = _agent(AgentModel(loops=1), TagMiddleware(rules=RULES, judge=judge))
    streamed = [(chunk, meta) for chunk, meta in agent.stream(_ask(), stream_mode="messages")]
    texts = [str(chunk.content) for chunk, _ in streamed if isinstance(chunk, AIMessage | AIMessageChunk)]
    assert "answer with R1" in texts[-1]
    assert not [t for t in texts if t.strip().upper() in {"YES", "NO"}]
    assert not [meta for _, meta in streamed if meta.get("lc_source") == "tag_rules"]


async def test_async_agent_matches_judges_once_and_streams_no_judge_tokens() -> None:
    judge = fake_judge({"R1", "R3"}, with_logprobs=True)
    model = AgentModel(loops=2)
    agent = _agent(model, TagMiddleware(rules=RULES, judge=judge))
    state = await agent.ainvoke(_ask())
    assert state["messages"][-1].content == "answer with R1,R3"
    assert len(model.systems) == 3 and all(RULES[2].action in s for s in model.systems)
    assert RULES[1].action not in model.systems[0]
    assert judge.calls == len(RULES)
    assert [m["rule_id"] for m in state["tag_matches"]] == ["R1", "R3"]
    streamed = [chunk async for chunk, _ in agent.astream(_ask("x = 1"), stream_mode="messages")]
    assert not [c for c in streamed if str(c.content).strip() in {"YES", "NO"}]
    assert any("answer with" in str(c.content) for c in streamed)


def _failing_judge() -> FakeChatModel:
    def respond(prompt: str) -> Any:
        rule_id = judged_rule_id(prompt)
        if rule_id == "R2":
            return ConnectionError("judge unreachable")
        return "YES" if rule_id in {"R1", "R3"} else "NO"

    return FakeChatModel(respond=respond, with_logprobs=True)


@pytest.mark.parametrize("run", ["sync", "async"])
async def test_a_failing_judge_without_strict_goes_on_with_the_judged_rules_and_records_the_failure(run: str) -> None:
    model = AgentModel()
    agent = _agent(model, TagMiddleware(rules=RULES, judge=_failing_judge(), strict=False))
    recorder = RunRecorder()
    config: Any = {"callbacks": [recorder]}
    state = agent.invoke(_ask(), config) if run == "sync" else await agent.ainvoke(_ask(), config)
    assert state["messages"][-1].content == "answer with R1,R3"
    assert [f["rule_id"] for f in state["tag_failures"]] == ["R2"]
    assert "judge unreachable" in state["tag_failures"][0]["error"]
    ((name, data),) = recorder.events
    assert name == "tag_judgments_failed" and data["failed_rule_ids"] == ["R2"] and data["query"] == CODE


async def test_a_failing_judge_with_strict_fails_the_run() -> None:
    model = AgentModel()
    agent = _agent(model, TagMiddleware(rules=RULES, judge=_failing_judge(), strict=True))
    with pytest.raises(JudgmentsFailedError) as raised:
        agent.invoke(_ask())
    assert raised.value.failed_rule_ids == ["R2"]
    with pytest.raises(JudgmentsFailedError):
        await agent.ainvoke(_ask())
    assert model.systems == []  # the model was never called without its rules


def test_after_a_failure_the_next_call_asks_again_and_the_cache_answers_the_rest() -> None:
    judge = _failing_judge()
    model = AgentModel(loops=1)
    _agent(model, TagMiddleware(rules=RULES, judge=judge)).invoke(_ask())
    # first call: R1, R3 once and R2 twice (a retry); second call: R2 again twice, R1 and R3 from the cache
    assert judge.calls == 2 + 2 + 2


def test_judging_the_latest_tool_result() -> None:
    judge = input_judge({"R1": "xs=[]", "R3": "print("})
    model = AgentModel(loops=2)
    agent = _agent(model, TagMiddleware(rules=RULES, judge=judge, judge_input="tool"))
    state = agent.invoke(_ask("please call print(1) twice"))
    first, *after_tools = model.systems
    assert RULES[2].action in first and RULES[0].action not in first  # the human message
    assert all(RULES[0].action in s and RULES[2].action not in s for s in after_tools)  # each tool result
    assert judge.calls == 3 * len(RULES)  # three different inputs
    assert [m["rule_id"] for m in state["tag_matches"]] == ["R1"]


def test_judging_a_function_of_the_state() -> None:
    judge = input_judge({"R2": "except:"})
    model = AgentModel()
    middleware = TagMiddleware(rules=RULES, judge=judge, judge_input=lambda state: "try: go()\nexcept: pass")
    _agent(model, middleware).invoke(_ask("hello"))
    assert RULES[1].action in model.systems[0]


def test_no_input_means_no_rules_and_no_judgment() -> None:
    judge = fake_judge({"R1"}, with_logprobs=True)
    model = AgentModel()
    state = _agent(model, TagMiddleware(rules=RULES, judge=judge, judge_input=lambda state: None)).invoke(_ask())
    assert model.systems == [SYSTEM] and judge.calls == 0 and state["tag_matches"] == []


def test_the_check_is_off_by_default() -> None:
    judge = fake_judge({"R1"}, with_logprobs=True)
    model = AgentModel()
    state = _agent(model, TagMiddleware(rules=RULES, judge=judge)).invoke(_ask())
    assert "tag_check" not in state and len(model.systems) == 1 and judge.calls == len(RULES)


@pytest.mark.parametrize("run", ["sync", "async"])
async def test_the_check_asks_once_for_a_revision_worded_as_the_judges_reading(run: str) -> None:
    judge = fake_judge({"R1"}, with_logprobs=True)  # reads R1 as holding for any text: the answer too
    model = AgentModel()
    agent = _agent(model, TagMiddleware(rules=RULES, judge=judge, check=True, check_note="right 7 of 15 times"))
    state = agent.invoke(_ask()) if run == "sync" else await agent.ainvoke(_ask())
    assert len(model.systems) == 2  # the answer, then one revision; not a third
    (request,) = [m for m in state["messages"] if isinstance(m, HumanMessage) and m.name == "tag_check"]
    text = str(request.content)
    assert "judge's reading, not a certainty (right 7 of 15 times)" in text
    assert RULES[0].action in text and "judge's score 0.90" in text
    assert RULES[0].action in model.systems[1]  # the revision request was not judged as a new input
    # the input's rules, then the matched rule on the answer; the revised answer is the same text (the cache's)
    assert judge.calls == len(RULES) + 1
    check = state["tag_check"]
    assert check["revision_asked"] and [h["rule_id"] for h in check["holding"]] == ["R1"]


def test_the_check_asks_nothing_when_the_judge_reads_no_rule_as_holding() -> None:
    judge = input_judge({"R1": "xs=[]"})  # the answer ("answer with R1") has no list default
    model = AgentModel()
    state = _agent(model, TagMiddleware(rules=RULES, judge=judge, check=True)).invoke(_ask())
    assert len(model.systems) == 1
    assert state["tag_check"]["holding"] == [] and not state["tag_check"]["revision_asked"]


def test_constructor_errors() -> None:
    with pytest.raises(ValueError, match="retriever="):
        TagMiddleware()
    retriever = ApplicabilityRetriever(llm=fake_judge(set()), rules=RULES)
    with pytest.raises(ValueError, match="not both"):
        TagMiddleware(retriever, rules=RULES)
    with pytest.raises(ValueError, match="judge_input"):
        TagMiddleware(retriever, judge_input="assistant")  # type: ignore[arg-type]


def test_a_cascade_retriever_works_as_the_middlewares_retriever() -> None:
    from langchain_tag.cascade_retriever import CascadeRetriever

    cheap_judge, strong_judge = fake_judge({"R1"}, with_logprobs=True), fake_judge({"R1", "R2"}, with_logprobs=True)
    cheap = ApplicabilityRetriever(llm=cheap_judge, rules=RULES, calibration=None)
    strong = ApplicabilityRetriever(llm=strong_judge, rules=RULES, calibration=None)
    model = AgentModel(loops=1)
    retriever = CascadeRetriever(cheap=cheap, strong=strong, low=0.05, high=0.2)  # the cheap NOs (0.1) go on
    state = _agent(model, TagMiddleware(retriever)).invoke(_ask())
    assert [m["rule_id"] for m in state["tag_matches"]] == ["R1", "R2"]  # R2: the strong judge's YES
    assert all(RULES[1].action in s for s in model.systems)
    assert (cheap_judge.calls, strong_judge.calls) == (3, 2)  # once per input, through the tool loop


def test_rules_drawn_from_a_vector_store_are_given_and_the_check_skips_what_it_cannot_find() -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_tag.testing import HashingEmbeddings

    store = InMemoryVectorStore(HashingEmbeddings())
    store.add_documents([r.to_document(content="search") for r in RULES])
    judge = fake_judge({"R1", "R2", "R3"}, with_logprobs=True)
    retriever = ApplicabilityRetriever(llm=judge, vectorstore=store, candidates=2)
    model = AgentModel()
    state = _agent(model, TagMiddleware(retriever, check=True)).invoke(_ask())
    assert len(state["tag_matches"]) == 2 and judge.calls == 2  # the 2 candidates, judged
    assert len(model.systems) == 1 and "tag_check" not in state  # their rules are not the retriever's to check


# ---------------------------------------------------------------------------------------------------- 1. an outage
def _down_judge() -> FakeChatModel:
    """A judge whose endpoint is down: every call raises."""
    return FakeChatModel(respond=lambda prompt: ConnectionError("connection refused"), with_logprobs=True)


@pytest.mark.parametrize("run", ["sync", "async"])
async def test_a_judge_outage_without_strict_goes_on_without_rules_and_records_it(run: str) -> None:
    model = AgentModel(loops=1)
    recorder = RunRecorder()
    config: Any = {"callbacks": [recorder]}
    agent = _agent(model, TagMiddleware(rules=RULES, judge=_down_judge()))
    state = agent.invoke(_ask(), config) if run == "sync" else await agent.ainvoke(_ask(), config)
    assert state["messages"][-1].content == "answer with no rules"
    assert model.systems == [SYSTEM, SYSTEM]
    assert [f["rule_id"] for f in state["tag_failures"]] == [r.rule_id for r in RULES]
    assert all("connection refused" in f["error"] for f in state["tag_failures"])
    ((name, data),) = recorder.events  # one event for the input, not one per model call
    assert name == "tag_judgments_failed" and data["failed_rule_ids"] == [r.rule_id for r in RULES]


def test_a_judge_outage_raises_when_the_user_chose_to() -> None:
    from langchain_tag import ProviderError

    for middleware in (
        TagMiddleware(rules=RULES, judge=_down_judge(), on_outage="error"),
        TagMiddleware(rules=RULES, judge=_down_judge(), strict=True),
    ):
        with pytest.raises(ProviderError):
            _agent(AgentModel(), middleware).invoke(_ask())
    with pytest.raises(ValueError, match="on_outage"):
        TagMiddleware(rules=RULES, judge=_down_judge(), on_outage="ignore")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------- 2. summaries
def test_a_summary_of_the_conversation_is_not_judged_and_the_inputs_rules_are_kept() -> None:
    from langchain.agents.middleware import SummarizationMiddleware

    summarizer = FakeChatModel(respond=lambda prompt: "The user asked for a review; lookups were made.")
    summarization = SummarizationMiddleware(model=summarizer, trigger=("messages", 5), keep=("messages", 2))
    judge = fake_judge({"R1"}, with_logprobs=True)
    model = AgentModel(loops=6)
    agent = create_agent(model, tools=[lookup], system_prompt=SYSTEM,
                         middleware=[summarization, TagMiddleware(rules=RULES, judge=judge)])  # fmt: skip
    state = agent.invoke(_ask())
    assert any(m.additional_kwargs.get("lc_source") == "summarization" for m in state["messages"])
    assert len(model.systems) == 7
    assert all(RULES[0].action in s for s in model.systems)  # every call of the turn is told the rule
    assert judge.calls == len(RULES)  # the input was judged once; the summary never


# ---------------------------------------------------------------------------------------------------- 3. two policies
def test_two_named_middlewares_share_an_agent_each_with_its_own_state() -> None:
    security = TagMiddleware(rules=RULES[:2], judge=fake_judge({"R1"}, with_logprobs=True), name="security")
    style = TagMiddleware(rules=RULES[2:], judge=fake_judge({"R3"}, with_logprobs=True), name="style")
    assert (security.name, style.name) == ("security", "style")
    model = AgentModel(loops=1)
    agent = create_agent(model, tools=[lookup], system_prompt=SYSTEM, middleware=[security, style])
    state = agent.invoke(_ask())
    assert [m["rule_id"] for m in state["tag_security_matches"]] == ["R1"]
    assert [m["rule_id"] for m in state["tag_style_matches"]] == ["R3"]
    assert "tag_matches" not in state
    assert all(RULES[0].action in s and RULES[2].action in s for s in model.systems)


def test_a_subclass_beside_the_middleware_keeps_its_own_state() -> None:
    class StyleRules(TagMiddleware):
        pass

    model = AgentModel()
    middleware = [
        TagMiddleware(rules=RULES[:2], judge=fake_judge({"R1"}, with_logprobs=True)),
        StyleRules(rules=RULES[2:], judge=fake_judge({"R3"}, with_logprobs=True)),
    ]
    state = create_agent(model, tools=[lookup], middleware=middleware).invoke(_ask())
    assert [m["rule_id"] for m in state["tag_matches"]] == ["R1"]
    assert [m["rule_id"] for m in state["tag_StyleRules_matches"]] == ["R3"]


def test_a_name_must_be_usable_in_a_state_key() -> None:
    with pytest.raises(ValueError, match="name"):
        TagMiddleware(rules=RULES, judge=fake_judge(set()), name="two words")


# ---------------------------------------------------------------------------------------------------- 4. configuration
def test_configuration_is_checked_when_the_middleware_is_built() -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_tag.testing import HashingEmbeddings

    store = InMemoryVectorStore(HashingEmbeddings())
    with pytest.raises(TypeError, match="ApplicabilityRetriever"):
        TagMiddleware(store.as_retriever())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="heading"):
        TagMiddleware(rules=RULES, judge=fake_judge(set()), heading=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="check_note"):
        TagMiddleware(rules=RULES, judge=fake_judge(set()), check_note=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold must be a number within"):
        TagMiddleware(rules=RULES, judge=fake_judge(set()), threshold=2)


def test_rules_given_as_dicts_are_read_as_rules() -> None:
    rules = [rule.model_dump() for rule in RULES]
    model = AgentModel()
    state = _agent(model, TagMiddleware(rules=rules, judge=fake_judge({"R2"}, with_logprobs=True))).invoke(_ask())
    assert [m["rule_id"] for m in state["tag_matches"]] == ["R2"]
    with pytest.raises(ValueError, match="condition"):
        TagMiddleware(rules=[{"rule_id": "R9", "action": "do it"}], judge=fake_judge(set()))


@pytest.mark.filterwarnings("ignore:A test tried to use socket")  # langchain-openai probes socket options, offline
def test_a_judge_given_as_a_model_string(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_core.language_models import BaseChatModel

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    middleware = TagMiddleware(rules=RULES, judge="openai:gpt-4o-mini")
    assert isinstance(middleware.retriever, ApplicabilityRetriever)
    assert isinstance(middleware.retriever.llm, BaseChatModel)


# ---------------------------------------------------------------------------------------------------- 5. cost and retries
@pytest.mark.parametrize("run", ["sync", "async"])
async def test_a_rule_that_keeps_failing_is_not_asked_again_on_every_call_of_an_input(
    run: str, caplog: pytest.LogCaptureFixture
) -> None:
    judge = _failing_judge()
    model = AgentModel(loops=3)
    recorder = RunRecorder()
    config: Any = {"callbacks": [recorder]}
    agent = _agent(model, TagMiddleware(rules=RULES, judge=judge))
    with caplog.at_level(logging.WARNING, logger="langchain_tag"):
        state = agent.invoke(_ask(), config) if run == "sync" else await agent.ainvoke(_ask(), config)
    assert len(model.systems) == 4
    # R2 is asked at the first call (and retried once by the judge), and once more at the next call; not after
    assert judge.calls == 2 + 2 + 2
    assert len(recorder.events) == 2
    assert len([r for r in caplog.records if r.name == "langchain_tag.agents._middleware"]) == 2
    assert [f["rule_id"] for f in state["tag_failures"]] == ["R2"]
    assert all(RULES[0].action in s for s in model.systems)


def test_the_first_inputs_reference_judgments_are_stated(caplog: pytest.LogCaptureFixture) -> None:
    from langchain_tag.judging.calibration import Calibration

    references = ("x = 1", "print(2)", "def f(): pass")
    calibration = Calibration(method="platt", reference_inputs=references)
    judge = fake_judge({"R1"}, with_logprobs=True)
    agent = _agent(AgentModel(), TagMiddleware(rules=RULES, judge=judge, calibration=calibration),
                   checkpointer=InMemorySaver())  # fmt: skip
    with caplog.at_level(logging.INFO, logger="langchain_tag.agents"):
        agent.invoke(_ask(), {"configurable": {"thread_id": "a"}})
        agent.invoke(_ask("y = 2"), {"configurable": {"thread_id": "a"}})
    assert judge.calls == len(RULES) * (1 + len(references)) + len(RULES)
    (stated,) = [r.getMessage() for r in caplog.records if "reference" in r.getMessage()]
    assert "9 reference judgments" in stated and "once" in stated


def test_the_default_check_note_names_no_domain() -> None:
    from langchain_tag.agents._check import DEFAULT_CHECK_NOTE

    assert "code" not in DEFAULT_CHECK_NOTE and "ruff" not in DEFAULT_CHECK_NOTE
