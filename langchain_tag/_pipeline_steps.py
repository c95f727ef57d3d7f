"""The pipeline's execute, check and route steps, shared by every graph built on them (the method's, the app's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from langchain_core.callbacks.manager import adispatch_custom_event, dispatch_custom_event
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.graph import END

from langchain_tag.judging._check_loop import CheckLoop, RevisionJudge
from langchain_tag.judging.results import MatchResult
from langchain_tag.retrievers import (
    FAILED_EVENT,
)
from langchain_tag.rules import Rule

__all__ = ["PipelineSteps"]


StateT = TypeVar("StateT", bound=Mapping[str, Any])


class PipelineSteps(Generic[StateT]):
    """The pipeline's execute, check and route nodes, for every graph built on it.

    :func:`build_tag_graph`'s graph runs them over :class:`TagState`; the served app's graph
    (:mod:`langchain_tag.app`) runs the same nodes over its own state. What differs is a hook each: what the
    executor gets (:meth:`_payload`) and which executor (:meth:`_executor`), the rules a revision is checked
    against (:meth:`_to_check`) and by which judge (:meth:`_check_judge`), how the check is judged
    (:meth:`_judge_check`: the app adds its progress events there), what the check adds to the state
    (:meth:`_checked`), and the run's check loop (:meth:`_loop`). Every revision is checked and routed through
    :class:`~langchain_tag.judging._check_loop.CheckLoop`.

    The state keys the nodes read and write: ``input``, ``output`` (the revision), ``rounds`` (execute rounds
    run) and ``remaining`` (what the last check found still holding).
    """

    # -- hooks
    def _executor(self, state: StateT) -> Runnable[dict[str, Any], str]:
        """The executor chain of this run."""
        raise NotImplementedError

    def _payload(self, state: StateT) -> dict[str, Any]:
        """The executor's input (``input``, ``documents``, ``unit_kind``) for the next round."""
        raise NotImplementedError

    def _to_check(self, state: StateT) -> list[Rule]:
        """The rules the revision is checked against (none: no check)."""
        raise NotImplementedError

    def _check_judge(self, state: StateT, rules: Sequence[Rule]) -> RevisionJudge:
        """The judge of the check."""
        raise NotImplementedError

    def _loop(self, state: StateT) -> CheckLoop:
        """The run's check loop (its ``check_rounds``)."""
        raise NotImplementedError

    def _checked(self, state: StateT, rules: Sequence[Rule], result: MatchResult) -> dict[str, Any]:
        """The check's state update: ``remaining``, what still holds of ``rules`` by ``result``."""
        raise NotImplementedError

    def _judge_check(self, state: StateT, config: RunnableConfig, rules: Sequence[Rule]) -> MatchResult:
        """Judge the revision against ``rules`` (the check loop's step), under the node's callbacks."""
        judge = self._check_judge(state, rules)
        return self._loop(state).check(judge, _revision(state), rules, callbacks=config.get("callbacks"))

    async def _ajudge_check(self, state: StateT, config: RunnableConfig, rules: Sequence[Rule]) -> MatchResult:
        """Async twin of :meth:`_judge_check`."""
        judge = self._check_judge(state, rules)
        return await self._loop(state).acheck(judge, _revision(state), rules, callbacks=config.get("callbacks"))

    # -- execute
    def execute(self, state: StateT, config: RunnableConfig) -> dict[str, Any]:
        """Run the executor: the input and what it was given, or its last revision and the rules still holding."""
        output = self._executor(state).invoke(self._payload(state), config)
        return {"output": output, "rounds": (state.get("rounds") or 0) + 1}

    async def aexecute(self, state: StateT, config: RunnableConfig) -> dict[str, Any]:
        """Async twin of :meth:`execute`."""
        output = await self._executor(state).ainvoke(self._payload(state), config)
        return {"output": output, "rounds": (state.get("rounds") or 0) + 1}

    # -- check
    def check(self, state: StateT, config: RunnableConfig) -> dict[str, Any]:
        """Judge the revision against the rules to check; a failed judgment is sent as ``tag_judgments_failed``."""
        rules = self._to_check(state)
        if not rules:
            return self._checked(state, rules, MatchResult(query=_revision(state), predicate=""))
        result = self._judge_check(state, config, rules)
        if result.failed:
            dispatch_custom_event(FAILED_EVENT, result.failure_event(), config=config)
        return self._checked(state, rules, result)

    async def acheck(self, state: StateT, config: RunnableConfig) -> dict[str, Any]:
        """Async twin of :meth:`check`."""
        rules = self._to_check(state)
        if not rules:
            return self._checked(state, rules, MatchResult(query=_revision(state), predicate=""))
        result = await self._ajudge_check(state, config, rules)
        if result.failed:
            await adispatch_custom_event(FAILED_EVENT, result.failure_event(), config=config)
        return self._checked(state, rules, result)

    # -- route
    def route(self, state: StateT) -> str:
        """After a check: another execute round while rules remain and rounds are left, else the end."""
        return "execute" if self._loop(state).again(state.get("remaining") or [], state.get("rounds") or 1) else END


def _revision(state: Mapping[str, Any]) -> str:
    return str(state.get("output") or "")
