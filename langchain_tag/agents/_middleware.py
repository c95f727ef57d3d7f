"""The TAG middleware for LangChain agents: before each model call, only the rules whose condition holds."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from langchain.agents.middleware.internal_call_transformer import InternalCallTransformer
from langchain.agents.middleware.types import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import override

from langchain_tag.agents._block import DEFAULT_HEADING, rules_block, with_block
from langchain_tag.agents._check import CHECK_LOOP, DEFAULT_CHECK_NOTE, check_rules, reading, revision_request
from langchain_tag.agents._inputs import InputSource, judged_input
from langchain_tag.agents._internal import ainternal_callbacks, internal_callbacks
from langchain_tag.agents._state import (
    CHECK_KEY,
    FAILURES_KEY,
    JUDGED_KEY,
    MATCHES_KEY,
    JudgeFailure,
    RuleMatch,
    TagAgentState,
)
from langchain_tag.cascade_retriever import CascadeRetriever
from langchain_tag.judging.cascade import CascadeResult
from langchain_tag.judging.results import MatchResult
from langchain_tag.retrievers import FAILED_EVENT, ApplicabilityRetriever
from langchain_tag.rules import Rule, rule_documents

__all__ = ["TagMiddleware"]

logger = logging.getLogger(__name__)

Retriever = ApplicabilityRetriever | CascadeRetriever


def _digest(text: str | None, rule_ids: Sequence[str]) -> str:
    """What identifies a judged input: its text and the rules it was judged against."""
    if text is None:
        return ""
    return hashlib.sha256("\x00".join([text, *rule_ids]).encode("utf-8")).hexdigest()[:32]


def _matches(documents: Sequence[Document]) -> list[RuleMatch]:
    return [
        RuleMatch(
            rule_id=str(doc.metadata["rule_id"]),
            score=doc.metadata.get("tag_score"),
            action=str(doc.metadata.get("action") or doc.page_content),
        )
        for doc in documents
    ]


def _failures(result: Any) -> list[JudgeFailure]:
    return [JudgeFailure(rule_id=j.rule_id, error=str(j.error)) for j in result.judgments if j.error is not None]


def _failure_event(result: MatchResult | CascadeResult) -> dict[str, Any]:
    """The data of the ``tag_judgments_failed`` event (:meth:`MatchResult.failure_event`) of a judged input."""
    return (result.result if isinstance(result, CascadeResult) else result).failure_event()


class TagMiddleware(AgentMiddleware[TagAgentState, Any, Any]):
    r"""Give the agent's model only the rules whose condition holds for the input, in its system message.

    Before each model call the middleware takes the input to judge (by default the latest human message), has
    the retriever's judge decide for each rule whether its condition holds, and adds the matched rules' ids and
    actions to the system message as one block (the user's system message is otherwise left as it was; no match,
    no block). The judge never sees an action; the model never sees a condition.

    **Once per input.** The matches are kept in the agent's state with a digest of the input they belong to, so
    the later model calls of a tool-calling loop on the same input reuse them and call no judge; the retriever's
    verdict cache also answers a pair judged before. A loop of many model calls costs one judgment per rule per
    new input. After a failed judgment the next call asks again (the cache answers the judgments that worked).

    **State.** ``tag_matches``: the rules the model was told to follow, each ``{"rule_id", "score", "action"}``
    (``score`` is the judge's calibrated score); ``tag_failures``: the judgments that failed (``{"rule_id",
    "error"}``), counted as NO. Both are in the agent's output; ``state_schema`` is :class:`TagAgentState`.

    **Internal calls.** The judge's calls run under the model call's run (a trace shows them), tagged
    ``nostream`` and marked with LangChain's internal-call metadata (``lc_source="tag_rules"``), so
    ``stream_mode="messages"`` and ``run.messages`` carry none of their tokens.

    **Failures** follow the retriever's ``strict``: with ``strict=False`` (the default) the agent goes on with
    the rules that were judged and the failure is recorded in ``tag_failures``, logged, and sent to callbacks as
    the retriever sends it (the custom event ``tag_judgments_failed``); with ``strict=True``
    the call raises :class:`~langchain_tag.judging.results.JudgmentsFailedError`.

    **Check** (``check=True``, off by default): after a final answer (no tool calls), the judge reads the
    answer against the matched rules; when it reads some as still holding, the middleware asks the model once,
    for this input, to revise, naming those rules with the judge's score and saying how reliable such readings
    are (``check_note``). The reading of the last answer is kept under ``tag_check``. It is the judge's reading,
    not a fact: a small judge is near chance at it.

    Args:
        retriever: An :class:`~langchain_tag.retrievers.ApplicabilityRetriever` (any judge it takes: a chat
            model, a decision model) or a :class:`~langchain_tag.cascade_retriever.CascadeRetriever`.
        rules: Instead of ``retriever``: the rules (``Rule`` objects or rule documents) ...
        judge: ... and the judge model; an ``ApplicabilityRetriever`` is built from them and ``retriever_options``.
        judge_input: What the judge reads: ``"human"`` (the latest human message), ``"tool"`` (the latest tool
            result, or the human message when newer), or a function of the agent state returning the text.
        heading: The first line of the rules block.
        check: Run the after-model check.
        check_note: How reliable the check's readings are, as the revision request says it.
        **retriever_options: Other ``ApplicabilityRetriever`` fields with ``rules`` and ``judge`` (``strict``,
            ``threshold``, ``cache``, ...).

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_tag import Rule
        >>> from langchain_tag.agents import TagMiddleware
        >>> from langchain_tag.testing import FakeChatModel, fake_judge
        >>> rule = Rule(rule_id="R1", rule_name="bare except", condition="an except clause names no class",
        ...             action="catch the specific exception class")
        >>> model = FakeChatModel(respond=lambda prompt: prompt.split("\n\n")[0].splitlines()[-1])
        >>> judge = fake_judge({"R1"}, with_logprobs=True)
        >>> agent = create_agent(model, middleware=[TagMiddleware(rules=[rule], judge=judge)])
        >>> state = agent.invoke({"messages": [{"role": "user", "content": "try: f()\nexcept: pass"}]})
        >>> state["messages"][-1].content
        '- R1: catch the specific exception class'
        >>> [(m["rule_id"], m["score"] > 0.5) for m in state["tag_matches"]]
        [('R1', True)]
    """

    state_schema = TagAgentState
    transformers = (InternalCallTransformer,)

    def __init__(
        self,
        retriever: Retriever | None = None,
        *,
        rules: Sequence[Rule | Document] | None = None,
        judge: BaseChatModel | Any = None,
        judge_input: InputSource = "human",
        heading: str = DEFAULT_HEADING,
        check: bool = False,
        check_note: str = DEFAULT_CHECK_NOTE,
        **retriever_options: Any,
    ) -> None:
        super().__init__()
        if retriever is None:
            if rules is None or judge is None:
                raise ValueError("TagMiddleware needs a retriever=, or rules= and judge=")
            retriever = ApplicabilityRetriever(llm=judge, rules=list(rules), **retriever_options)
        elif rules is not None or judge is not None or retriever_options:
            raise ValueError("TagMiddleware takes a retriever= or rules= and judge= (with retriever options), not both")
        if not (callable(judge_input) or judge_input in ("human", "tool")):
            raise ValueError(f"unknown judge_input {judge_input!r}: use 'human', 'tool' or a function of the state")
        self.retriever: Retriever = retriever
        self.judge_input: InputSource = judge_input
        self.heading = heading
        self.check = check
        self.check_note = check_note

    # ------------------------------------------------------------------ before each model call
    def _rule_ids(self) -> list[str]:
        return [str(doc.metadata.get("rule_id", "")) for doc in rule_documents(self.retriever.rules)]

    def _plan(self, request: ModelRequest[Any]) -> tuple[str | None, str, list[RuleMatch] | None]:
        """The input to judge, its digest, and the matches to reuse (``None``: judge it)."""
        state = cast("Mapping[str, Any]", request.state)
        text = judged_input(self.judge_input, request.messages, state)
        digest = _digest(text, self._rule_ids())
        if state.get(JUDGED_KEY) == digest and not state.get(FAILURES_KEY):
            matches: list[RuleMatch] = list(state.get(MATCHES_KEY) or [])
            logger.debug("input already judged in this thread: reusing its %d matched rules", len(matches))
            return text, digest, matches
        return text, digest, None

    def _update(self, digest: str, result: Any) -> tuple[list[RuleMatch], dict[str, Any]]:
        """The matches of a judged input (``result``; ``None``: no input) and the state update that keeps them."""
        matches = _matches(self.retriever.documents(result)) if result is not None else []
        failures = _failures(result) if result is not None else []
        if failures:
            logger.warning(
                "%d judgment(s) failed and were counted as NO: %s", len(failures), [f["rule_id"] for f in failures]
            )
        return matches, {MATCHES_KEY: matches, FAILURES_KEY: failures, JUDGED_KEY: digest}

    def _request(self, request: ModelRequest[Any], matches: Sequence[RuleMatch]) -> ModelRequest[Any]:
        if not matches:
            return request
        return request.override(system_message=with_block(request.system_message, rules_block(matches, self.heading)))

    @staticmethod
    def _respond(
        response: ModelResponse[Any], update: dict[str, Any] | None
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        if update is None:
            return response
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Judge the input (unless judged before in this thread), add the matched rules, call the model."""
        text, digest, matches = self._plan(request)
        update = None
        if matches is None:
            result = None if text is None else self.retriever.match(text, callbacks=internal_callbacks())
            matches, update = self._update(digest, result)
            if update[FAILURES_KEY] and result is not None:
                dispatch_custom_event(FAILED_EVENT, _failure_event(result))
        return self._respond(handler(self._request(request, matches)), update)

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        text, digest, matches = self._plan(request)
        update = None
        if matches is None:
            result = None if text is None else await self.retriever.amatch(text, callbacks=ainternal_callbacks())
            matches, update = self._update(digest, result)
            if update[FAILURES_KEY] and result is not None:
                await adispatch_custom_event(FAILED_EVENT, _failure_event(result))
        return self._respond(await handler(self._request(request, matches)), update)

    # ------------------------------------------------------------------ the optional check after the model
    def _to_check(self, state: TagAgentState) -> tuple[str, list[RuleMatch], list[Rule], bool] | None:
        """What the check judges: the answer, the matches, their rules, whether a revision was asked already."""
        if not self.check or not state["messages"]:
            return None
        last = state["messages"][-1]
        matches = list(state.get(MATCHES_KEY) or [])
        if not isinstance(last, AIMessage) or last.tool_calls or not matches or not last.text.strip():
            return None
        rules = check_rules(self.retriever.rules, matches)
        if not rules:  # rules drawn from a vector store per input: not known here
            logger.warning("the check found none of the matched rules among the retriever's rules; nothing checked")
            return None
        previous = state.get(CHECK_KEY)
        digest = state.get(JUDGED_KEY, "")
        asked = previous is not None and previous["input"] == digest and previous["revision_asked"]
        return last.text, matches, rules, asked

    def _checked(
        self, state: TagAgentState, asked: bool, matches: list[RuleMatch], result: MatchResult
    ) -> dict[str, Any]:
        found = reading(state.get(JUDGED_KEY, ""), result, revision_asked=asked, note=self.check_note)
        if not CHECK_LOOP.again(found["holding"], rounds=2 if asked else 1):  # one revision per input
            return {CHECK_KEY: found}
        found["revision_asked"] = True
        request = revision_request(found["holding"], matches, self.check_note)
        return {CHECK_KEY: found, "messages": [request], "jump_to": "model"}

    @hook_config(can_jump_to=["model"])
    @override
    def after_model(self, state: TagAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """With ``check=True``: the judge reads a final answer against the matched rules (see the class)."""
        plan = self._to_check(state)
        if plan is None:
            return None
        answer, matches, rules, asked = plan
        result = CHECK_LOOP.check(self.retriever.judge, answer, rules, callbacks=internal_callbacks())
        return self._checked(state, asked, matches, result)

    @hook_config(can_jump_to=["model"])
    @override
    async def aafter_model(self, state: TagAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async twin of :meth:`after_model`."""
        plan = self._to_check(state)
        if plan is None:
            return None
        answer, matches, rules, asked = plan
        result = await CHECK_LOOP.acheck(self.retriever.judge, answer, rules, callbacks=ainternal_callbacks())
        return self._checked(state, asked, matches, result)
