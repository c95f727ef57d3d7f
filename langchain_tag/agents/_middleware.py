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
from langchain_tag.agents._config import (
    OutagePolicy,
    Retriever,
    build_retriever,
    outage_policy,
    state_prefix,
    text,
)
from langchain_tag.agents._cost import state_cost
from langchain_tag.agents._inputs import InputSource, judged_input, summarised
from langchain_tag.agents._internal import ainternal_callbacks, internal_callbacks
from langchain_tag.agents._state import JudgeFailure, RuleMatch, StateKeys, TagAgentState, state_schema
from langchain_tag.cascade_retriever import CascadeRetriever
from langchain_tag.errors import ProviderError
from langchain_tag.judging.cascade import CascadeResult
from langchain_tag.judging.results import Judgment, MatchResult
from langchain_tag.retrievers import FAILED_EVENT, ApplicabilityRetriever
from langchain_tag.rules import Rule, rule_documents

__all__ = ["TagMiddleware"]

logger = logging.getLogger(__name__)

ASKED_AGAIN = 1
"""How many later model calls of the same input ask again a judgment that failed (the cache answers the others)."""

Judged = MatchResult | CascadeResult | ProviderError | None
"""What judging an input gave: its result, the judge's outage (every judgment failed), or nothing (no input)."""


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


def _failures(result: MatchResult | CascadeResult) -> list[JudgeFailure]:
    return [JudgeFailure(rule_id=j.rule_id, error=str(j.error)) for j in result.judgments if j.error is not None]


def _failure_event(result: MatchResult | CascadeResult) -> dict[str, Any]:
    """The data of the ``tag_judgments_failed`` event (:meth:`MatchResult.failure_event`) of a judged input."""
    return (result.result if isinstance(result, CascadeResult) else result).failure_event()


def _outage(query: str, rule_ids: Sequence[str], error: ProviderError) -> tuple[list[JudgeFailure], dict[str, Any]]:
    """The failures and the ``tag_judgments_failed`` event of an outage: every rule failed (``*``: rules unknown)."""
    ids = list(rule_ids) or ["*"]
    failed = MatchResult(query, "applicability", [Judgment(rule_id=rule_id, error=str(error)) for rule_id in ids])
    return [JudgeFailure(rule_id=rule_id, error=str(error)) for rule_id in ids], failed.failure_event()


def _documents(
    retriever: ApplicabilityRetriever | CascadeRetriever, result: MatchResult | CascadeResult
) -> list[Document]:
    """The documents the retriever returns for a judged input's result."""
    if isinstance(retriever, CascadeRetriever):
        return list(retriever.documents(cast("CascadeResult", result)))
    return retriever.documents(cast("MatchResult", result))


def _respond(
    response: ModelResponse[Any], update: dict[str, Any] | None
) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
    """The model's response, with the state update that keeps the input's matches when there is one."""
    if update is None:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=update))


class TagMiddleware(AgentMiddleware[TagAgentState, Any, Any]):
    r"""Give the agent's model only the rules whose condition holds for the input, in its system message.

    Before each model call the middleware takes the input to judge (by default the latest human message), has
    the retriever's judge decide for each rule whether its condition holds, and adds the matched rules' ids and
    actions to the system message as one block (the user's system message is otherwise left as it was; no match,
    no block). The judge never sees an action; the model never sees a condition.

    How it behaves (once per input, the first input's cost, state, several policies, internal calls,
    failures and outages, configuration, the check): :mod:`langchain_tag.agents`.

    Args:
        retriever: An :class:`~langchain_tag.retrievers.ApplicabilityRetriever` (any judge it takes: a chat
            model, a decision model) or a :class:`~langchain_tag.cascade_retriever.CascadeRetriever`.
        rules: Instead of ``retriever``: the rules (``Rule`` objects, rule documents, or mappings of a rule's
            fields) ...
        judge: ... and the judge model, or a model string (``"openai:gpt-4o-mini"``, made with LangChain's
            ``init_chat_model``); an ``ApplicabilityRetriever`` is built from them and ``retriever_options``.
        judge_input: What the judge reads: ``"human"`` (the latest human message), ``"tool"`` (the latest tool
            result, or the human message when newer), or a function of the agent state returning the text.
        heading: The first line of the rules block.
        check: Run the after-model check.
        check_note: How reliable the check's readings are, as the revision request says it (the default names
            no domain and no figure for your rules: give your judge's own measured figure).
        on_outage: What an outage of the judge does: ``"continue"`` or ``"error"`` (default: as ``strict``).
        name: The middleware's name, and the middle of its state keys (an identifier); needed to put several
            middlewares in one agent.
        **retriever_options: Other ``ApplicabilityRetriever`` fields with ``rules`` and ``judge`` (``strict``,
            ``threshold``, ``cache``, ...).

    Raises:
        TypeError: When the retriever is not an ``ApplicabilityRetriever`` or a ``CascadeRetriever``, or a text is
            not a string.
        ValueError: When neither or both of ``retriever`` and ``rules``/``judge`` are given, on a rule missing a
            field, an option out of its range, an unknown ``judge_input`` or ``on_outage``, or a ``name`` that
            is not an identifier.

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
        >>> TagMiddleware(rules=[rule], judge=judge, name="security").keys.matches
        'tag_security_matches'
    """

    state_schema = TagAgentState
    transformers = (InternalCallTransformer,)

    def __init__(
        self,
        retriever: Retriever | None = None,
        *,
        rules: Sequence[Rule | Document | Mapping[str, Any]] | None = None,
        judge: BaseChatModel | str | Any = None,
        judge_input: InputSource = "human",
        heading: str = DEFAULT_HEADING,
        check: bool = False,
        check_note: str = DEFAULT_CHECK_NOTE,
        on_outage: OutagePolicy | None = None,
        name: str | None = None,
        **retriever_options: Any,
    ) -> None:
        super().__init__()
        self.retriever: Retriever = build_retriever(retriever, rules, judge, retriever_options)
        if not (callable(judge_input) or judge_input in ("human", "tool")):
            raise ValueError(f"unknown judge_input {judge_input!r}: use 'human', 'tool' or a function of the state")
        if not isinstance(check, bool):
            raise TypeError(f"check must be True or False, got {check!r}")
        self.judge_input: InputSource = judge_input
        self.heading = text("heading", heading, empty=False)
        self.check = check
        self.check_note = text("check_note", check_note, empty=False)
        self.on_outage: OutagePolicy = outage_policy(on_outage, self.retriever)
        prefix = state_prefix(name, type(self))
        self._name = name if name is not None else type(self).__name__
        self.keys = StateKeys.of(prefix)
        """This middleware's state keys (``tag_matches``, ...; ``tag_<name>_matches``, ... when named)."""
        self.state_schema = cast("type[TagAgentState]", state_schema(self.keys))  # its keys: a schema of its own

    @property
    @override
    def name(self) -> str:
        """The middleware's name: ``name=``, else the class name (two middlewares in one agent need two names)."""
        return self._name

    # ------------------------------------------------------------------ before each model call
    def _rule_ids(self) -> list[str]:
        return [str(doc.metadata.get("rule_id", "")) for doc in rule_documents(self.retriever.rules)]

    def _plan(self, request: ModelRequest[Any]) -> tuple[str | None, str, int, list[RuleMatch] | None]:
        """The input to judge, its digest, how often it was judged, and the matches to reuse (``None``: judge it)."""
        state = cast("Mapping[str, Any]", request.state)
        keys = self.keys
        text = judged_input(self.judge_input, request.messages, state)
        kept: list[RuleMatch] = list(state.get(keys.matches) or [])
        if text is None and not callable(self.judge_input) and state.get(keys.judged) and summarised(request.messages):
            logger.debug("the input was summarised away: its %d matched rules stand", len(kept))
            return text, str(state[keys.judged]), 0, kept
        digest = _digest(text, self._rule_ids())
        asked = int(state.get(keys.asked) or 1) if state.get(keys.judged) == digest else 0
        if asked and (not state.get(keys.failures) or asked > ASKED_AGAIN):
            logger.debug("input already judged in this thread: reusing its %d matched rules", len(kept))
            return text, digest, asked, kept
        return text, digest, asked, None

    def _outage(self, error: ProviderError) -> ProviderError:
        """The judge's outage, raised with ``on_outage="error"``, else kept to go on without rules."""
        if self.on_outage == "error":
            raise error
        return error

    def _update(
        self, text: str | None, digest: str, asked: int, result: Judged
    ) -> tuple[list[RuleMatch], dict[str, Any], dict[str, Any] | None]:
        """The matches of a judged input, the state update that keeps them, and the failure event to send."""
        matches: list[RuleMatch] = []
        failures: list[JudgeFailure] = []
        event = None
        if isinstance(result, ProviderError):
            failures, event = _outage(text or "", self._rule_ids(), result)
            logger.warning("the judge failed every judgment; going on without rules (on_outage='continue'): %s", result)
        elif result is not None:
            matches, failures = _matches(_documents(self.retriever, result)), _failures(result)
            if failures:
                event = _failure_event(result)
                logger.warning(
                    "%d judgment(s) failed and were counted as NO: %s", len(failures), [f["rule_id"] for f in failures]
                )
        asked = ASKED_AGAIN + 1 if isinstance(result, ProviderError) else asked + 1  # an outage: not asked again
        keys = self.keys
        return matches, {keys.matches: matches, keys.failures: failures, keys.judged: digest, keys.asked: asked}, event

    def _request(self, request: ModelRequest[Any], matches: Sequence[RuleMatch]) -> ModelRequest[Any]:
        if not matches:
            return request
        return request.override(system_message=with_block(request.system_message, rules_block(matches, self.heading)))

    def _judge(self, text: str | None) -> Judged:
        if text is None:
            return None
        state_cost(self.retriever)
        try:
            return self.retriever.match(text, callbacks=internal_callbacks())
        except ProviderError as error:
            return self._outage(error)

    async def _ajudge(self, text: str | None) -> Judged:
        if text is None:
            return None
        state_cost(self.retriever)
        try:
            return await self.retriever.amatch(text, callbacks=ainternal_callbacks())
        except ProviderError as error:
            return self._outage(error)

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Judge the input (unless judged before in this thread), add the matched rules, call the model."""
        text, digest, asked, matches = self._plan(request)
        update = None
        if matches is None:
            matches, update, event = self._update(text, digest, asked, self._judge(text))
            if event is not None:
                dispatch_custom_event(FAILED_EVENT, event)
        return _respond(handler(self._request(request, matches)), update)

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        text, digest, asked, matches = self._plan(request)
        update = None
        if matches is None:
            matches, update, event = self._update(text, digest, asked, await self._ajudge(text))
            if event is not None:
                await adispatch_custom_event(FAILED_EVENT, event)
        return _respond(await handler(self._request(request, matches)), update)

    # ------------------------------------------------------------------ the optional check after the model
    def _to_check(self, state: Mapping[str, Any]) -> tuple[str, list[RuleMatch], list[Rule], bool] | None:
        """What the check judges: the answer, the matches, their rules, whether a revision was asked already."""
        if not self.check or not state["messages"]:
            return None
        last = state["messages"][-1]
        matches = list(state.get(self.keys.matches) or [])
        if not isinstance(last, AIMessage) or last.tool_calls or not matches or not last.text.strip():
            return None
        rules = check_rules(self.retriever.rules, matches)
        if not rules:  # rules drawn from a vector store per input: not known here
            logger.warning("the check found none of the matched rules among the retriever's rules; nothing checked")
            return None
        previous = state.get(self.keys.check)
        digest = state.get(self.keys.judged, "")
        asked = previous is not None and previous["input"] == digest and previous["revision_asked"]
        return last.text, matches, rules, asked

    def _checked(
        self, state: Mapping[str, Any], asked: bool, matches: list[RuleMatch], result: MatchResult
    ) -> dict[str, Any]:
        found = reading(state.get(self.keys.judged, ""), result, revision_asked=asked, note=self.check_note)
        if not CHECK_LOOP.again(found["holding"], rounds=2 if asked else 1):  # one revision per input
            return {self.keys.check: found}
        found["revision_asked"] = True
        request = revision_request(found["holding"], matches, self.check_note)
        return {self.keys.check: found, "messages": [request], "jump_to": "model"}

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
