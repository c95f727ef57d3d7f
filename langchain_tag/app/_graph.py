"""The TAG graph as a LangGraph application: match -> review -> execute -> check (-> execute ...).

:func:`build_app_graph` compiles the method's pipeline (the one :func:`~langchain_tag.graph.build_tag_graph`
builds for Python callers) for serving: its input and output are
:class:`~langchain_tag.app._schemas.TagInput` and :class:`~langchain_tag.app._schemas.TagOutput`, its per-run
settings LangGraph's runtime context (:class:`~langchain_tag.app._context.TagContext`), and

- ``match`` judges the run's rules with the run's judge and threshold, writing progress events to
  ``stream_mode="custom"`` (:mod:`langchain_tag.app._progress`);
- ``review`` (with ``review`` on in the context) interrupts with the matched rules and the closest ones below
  the line, and gives the executor exactly the rules the resume value approves (:mod:`langchain_tag.app._review`);
  a resume value that is no decision interrupts again, its payload's ``error`` saying why;
- ``execute`` runs the executor on the input and the approved rules' actions;
- ``check`` has the judge check the revision against those rules; while some still hold and rounds are left
  (``check_rounds``), the executor gets them and its revision again. The ``tag`` and ``relevance`` modes check.

``execute``, ``check`` and the route after it are :func:`~langchain_tag.graph.build_tag_graph`'s own steps
(:class:`~langchain_tag._pipeline_steps.PipelineSteps`, its check loop
:class:`~langchain_tag.judging._check_loop.CheckLoop`) over this graph's state; the app adds the match, the
review, the progress events and the run's context. A run builds its verdict cache, judge model, judges and
executor once for its settings, whichever node asks first.

The thread's state records the run's settings and rules, so a run interrupted for review resumes with them,
also in another process (any checkpointer; the SQLite one of ``langgraph-checkpoint-sqlite`` keeps it on disk).
Every node is synchronous: LangGraph runs it in a worker thread under an async server, so neither the judge's
calls nor the verdict cache's file block the server's event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManager
from langchain_core.documents import Document
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import get_runtime
from langgraph.types import interrupt
from pydantic import ValidationError
from typing_extensions import override

from langchain_tag._mode_retrievers import make_retriever
from langchain_tag._pipeline_steps import PipelineSteps
from langchain_tag.app._context import ContextError, RunSettings, TagContext, settings_from_context
from langchain_tag.app._models import AppModels
from langchain_tag.app._progress import JudgingProgress
from langchain_tag.app._review import ReviewError, apply_decision, review_request
from langchain_tag.app._run import RunResources
from langchain_tag.app._schemas import ReviewRequest, ReviewRule, RuleRef, TagInput, TagOutput, review_rule, rule_ref
from langchain_tag.errors import RuleFileError, TagError
from langchain_tag.judging._check_loop import CheckLoop, RevisionJudge
from langchain_tag.judging.results import MatchResult
from langchain_tag.rules import Rule, check_unique_rule_ids, load_rules

__all__ = ["BELOW_THE_LINE", "InputError", "build_app_graph"]

logger = logging.getLogger(__name__)

BELOW_THE_LINE = 5
"""How many of the closest unmatched rules a review shows."""

_JUDGED = ("tag", "relevance")


class InputError(TagError, ValueError):
    """A run's input is not what the graph takes (no task text, or a rule that is not a rule)."""


class _AppState(TagInput, TagOutput, total=False):
    """The graph's state: the input and output keys, and what the nodes pass on (not shown as input or output).

    Attributes:
        settings: The run's settings (:meth:`RunSettings.as_dict`), recorded so a resumed run keeps them.
        rule_list: The run's rules, as JSON.
        proposed: The rule ids the matching proposed, highest score first.
        below: The closest unmatched rules.
        scores: The match's calibrated score of each judged rule.
        given: The rule ids the executor gets in its first round (after review).
        unit_kind: ``"rules"``, or ``"none"`` in the ``none`` mode.
        remaining: The given rule ids the last check found still holding.
    """

    settings: dict[str, Any]
    rule_list: list[dict[str, Any]]
    proposed: list[str]
    below: list[RuleRef]
    scores: dict[str, float | None]
    given: list[str]
    unit_kind: str
    remaining: list[str]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _input_rules(given: Any) -> list[Rule]:
    if not isinstance(given, list):
        raise InputError(f"input 'rules' must be a list of rule objects, got {type(given).__name__}")
    rules: list[Rule] = []
    for index, item in enumerate(given):
        try:
            rules.append(Rule.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the rule"
            raise InputError(f"input rules[{index}]: {where}: {first['msg']}") from None
    try:
        check_unique_rule_ids([rule.rule_id for rule in rules], where="input rules")
    except RuleFileError as exc:
        raise InputError(str(exc)) from None
    return rules


def _rule_file(given: str) -> list[Rule]:
    """The rules of the context's ``rules_file``; a file that cannot be read fails as the setting it is.

    A missing file or a directory is the run's setting at fault, not the server: the error names the key and
    the path (a relative one with the folder the server read it from).
    """
    try:
        return load_rules(given)
    except OSError as exc:
        path = Path(given)
        where = repr(given) if path.is_absolute() else f"{given!r} ({path.absolute()})"
        if isinstance(exc, FileNotFoundError):
            what = "no such file on the server"
        elif isinstance(exc, IsADirectoryError):
            what = "a directory, not a rule file"
        else:
            cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
            what = f"cannot read it ({cause.strerror or cause})"
        raise ContextError(f"context key 'rules_file': {where}: {what}") from None


def _refs(ids: Sequence[str], rules: dict[str, Rule], scores: dict[str, float | None]) -> list[RuleRef]:
    return [rule_ref(rules[rule_id], scores.get(rule_id)) for rule_id in ids]


def _offered(ids: Sequence[str], rules: dict[str, Rule], scores: dict[str, float | None]) -> list[ReviewRule]:
    return [review_rule(rules[rule_id], scores.get(rule_id)) for rule_id in ids]


def _started(progress: JudgingProgress, config: RunnableConfig) -> RunnableConfig:
    """The node's config with ``progress`` hearing the judge's replies (the node's callbacks, and the counter)."""
    progress.start()
    return {**config, "callbacks": CallbackManager.configure(config.get("callbacks"), [progress])}


def _finished(progress: JudgingProgress, result: MatchResult) -> None:
    failed = [j.rule_id for j in result.failed]
    if failed:
        logger.warning("%d judgment(s) failed and count as NO: rules %s", len(failed), ", ".join(failed))
    progress.finish(matched=len(result.matched), failed=failed)


class _App(PipelineSteps[_AppState]):
    """The nodes: the pipeline's execute, check and route steps over the app's state, and the app's own.

    The steps are :func:`~langchain_tag.graph.build_tag_graph`'s
    (:class:`~langchain_tag._pipeline_steps.PipelineSteps`);
    the app adds the match, the review and the progress events, over the resources a run's settings get once.
    """

    def __init__(self, models: AppModels) -> None:
        self.models = models
        self.run = RunResources(models)

    # -- the run's rules and settings
    def _rules(self, state: _AppState, settings: RunSettings) -> list[Rule]:
        if state.get("rules") is not None:
            return _input_rules(state.get("rules"))
        if settings.rules_file is not None:
            return _rule_file(settings.rules_file)
        return self.models.rule_set(settings.rule_set, self.run.cache(settings))

    @staticmethod
    def _recorded(state: _AppState) -> tuple[RunSettings, dict[str, Rule]]:
        rules = [Rule.model_validate(data) for data in state.get("rule_list") or []]
        return RunSettings.from_dict(state.get("settings") or {}), {rule.rule_id: rule for rule in rules}

    # -- nodes of the app's own
    def match(self, state: _AppState, config: RunnableConfig) -> dict[str, Any]:
        """Check the input and the run's settings (the run's context), then choose the rules the executor gets."""
        text = state.get("input")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"the TAG graph needs the task input as text: {{'input': '...'}} (got {text!r})")
        settings = settings_from_context(get_runtime(TagContext).context)
        rules = self._rules(state, settings)
        by_id = {rule.rule_id: rule for rule in rules}
        scores: dict[str, float | None] = {}
        below: list[str] = []
        unit_kind = "rules"
        if settings.mode in _JUDGED and rules:
            retriever = self.run.retriever(
                settings, rules, "relevance" if settings.mode == "relevance" else "applicability"
            )
            progress = JudgingProgress(get_stream_writer(), stage="match", total=len(rules))
            result = retriever.match(text, callbacks=_started(progress, config).get("callbacks"))
            _finished(progress, result)
            scores = {j.rule_id: j.score for j in result.judgments}
            proposed = [j.rule_id for j in result.matched]
            unmatched = [j for j in result.judgments if not j.applies and j.score is not None]
            below = [j.rule_id for j in sorted(unmatched, key=lambda j: -(j.score or 0.0))[:BELOW_THE_LINE]]
        elif settings.mode == "all_rules":
            proposed = list(by_id)
        elif settings.mode == "similarity" and rules:
            found, _ = make_retriever("similarity", rules=rules, embeddings=self.models.embeddings(), k=settings.k)
            assert found is not None
            proposed = [str(doc.metadata["rule_id"]) for doc in found.invoke(text, config)]
        else:
            proposed, unit_kind = [], "none" if settings.mode == "none" else "rules"
        return {
            "rules": None,  # this run's: cleared once read, so a later run on the thread takes its own
            "settings": settings.as_dict(),
            "rule_list": [rule.model_dump(mode="json") for rule in rules],
            "mode": settings.mode,
            "scores": scores,
            "proposed": proposed,
            "below": _refs(below, by_id, scores),
            "given": proposed,
            "matched": _refs(proposed, by_id, scores),
            "unit_kind": unit_kind,
            "output": "",
            "rounds": 0,
            "remaining": [],
            "findings": [],
            "review": None,
        }

    def review(self, state: _AppState) -> dict[str, Any]:
        """With review on: stop for a person, then give the executor exactly the rules they approved."""
        settings, rules = self._recorded(state)
        if not settings.review or state.get("unit_kind") == "none":
            return {}
        proposed = list(state.get("proposed") or [])
        scores = state.get("scores") or {}
        below = [ref["rule_id"] for ref in state.get("below") or []]
        request = review_request(state["input"], _offered(proposed, rules, scores), _offered(below, rules, scores))
        decision = interrupt(request)
        while True:  # a value that is no decision asks again, saying why (each answer stays in the thread)
            try:
                approved, record = apply_decision(decision, proposed, known=list(rules), at=_now())
                break
            except ReviewError as exc:
                decision = interrupt(ReviewRequest(**request, error=str(exc)))
        logger.info("review by %s: added %s, dropped %s", record["reviewer"], record["added"], record["dropped"])
        return {"given": approved, "matched": _refs(approved, rules, scores), "review": record}

    # -- the pipeline's steps (execute, check, route) over the app's state
    @override
    def _executor(self, state: _AppState) -> Runnable[dict[str, Any], str]:
        return self.run.executor(self._recorded(state)[0])

    @override
    def _payload(self, state: _AppState) -> dict[str, Any]:
        """The input and the given rules' actions, or the last revision and the given rules still holding."""
        _, rules = self._recorded(state)
        if state.get("rounds"):
            text, ids, kind = state.get("output") or "", state.get("remaining") or [], "rules"
        else:
            text, ids, kind = state["input"], state.get("given") or [], state.get("unit_kind") or "rules"
        documents: list[Document] = [rules[rule_id].to_document() for rule_id in ids]
        return {"input": text, "documents": documents, "unit_kind": kind}

    @override
    def _to_check(self, state: _AppState) -> list[Rule]:
        """The given rules, in the judged modes with check rounds."""
        settings, rules = self._recorded(state)
        if settings.mode not in _JUDGED or not settings.check_rounds:
            return []
        return [rules[rule_id] for rule_id in state.get("given") or []]

    @override
    def _check_judge(self, state: _AppState, rules: Sequence[Rule]) -> RevisionJudge:
        """The run's applicability judge (the ``relevance`` mode's too), over the run's rules."""
        settings, by_id = self._recorded(state)
        return self.run.retriever(settings, list(by_id.values()), "applicability").judge

    @override
    def _loop(self, state: _AppState) -> CheckLoop:
        return CheckLoop(RunSettings.from_dict(state.get("settings") or {}).check_rounds)

    @override
    def _judge_check(self, state: _AppState, config: RunnableConfig, rules: Sequence[Rule]) -> MatchResult:
        """The check, with its progress events."""
        progress = JudgingProgress(get_stream_writer(), stage="check", total=len(rules), round=state.get("rounds", 1))
        result = super()._judge_check(state, _started(progress, config), rules)
        _finished(progress, result)
        return result

    @override
    def _checked(self, state: _AppState, rules: Sequence[Rule], result: MatchResult) -> dict[str, Any]:
        """The given rules still holding, by id, and as the findings."""
        _, by_id = self._recorded(state)
        scores = {j.rule_id: j.score for j in result.judgments}
        remaining = [j.rule_id for j in result.matched]
        return {"remaining": remaining, "findings": _refs(remaining, by_id, scores)}


def build_app_graph(
    models: AppModels, *, checkpointer: Any = None, name: str = "tag"
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the served TAG graph (see the module docstring).

    Args:
        models: Where a run gets its executor, judge, embeddings, verdict cache and named rule sets
            (:func:`~langchain_tag.app._models.env_models` for the package's environment variables).
        checkpointer: A LangGraph checkpointer (needed for review; a server brings its own).
        name: The graph's name.

    Returns:
        The compiled graph: input :class:`TagInput`, output :class:`TagOutput`, context :class:`TagContext`.

    Example:
        >>> from langchain_tag.app._models import AppModels
        >>> from langchain_tag.testing import FakeChatModel, fake_judge
        >>> models = AppModels(executor=lambda s: FakeChatModel(respond=lambda p: "done"),
        ...                    judge=lambda s: fake_judge({"R1"}))
        >>> rules = [{"rule_id": "R1", "rule_name": "bare except", "condition": "an except names no class",
        ...           "action": "catch the specific class"}]
        >>> out = build_app_graph(models).invoke({"input": "except: pass", "rules": rules},
        ...                                      context={"check_rounds": 0})
        >>> out["output"], [r["rule_id"] for r in out["matched"]]
        ('done', ['R1'])
    """
    app = _App(models)
    graph = StateGraph(_AppState, context_schema=TagContext, input_schema=TagInput, output_schema=TagOutput)
    graph.add_node("match", app.match)
    graph.add_node("review", app.review)
    graph.add_node("execute", app.execute)
    graph.add_node("check", app.check)
    graph.add_edge(START, "match")
    graph.add_edge("match", "review")
    graph.add_edge("review", "execute")
    graph.add_edge("execute", "check")
    graph.add_conditional_edges("check", app.route, {"execute": "execute", END: END})
    return graph.compile(checkpointer=checkpointer, name=name)
