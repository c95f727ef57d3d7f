"""The decision-model judge: every rule of an input one yes/no question of a single request.

A LangChain decision model (``langchain_core.decisions.BaseDecisionModel``, or
``langchain_openai.decisions.OpenAIDecisions`` for OpenAI's Decisions API)
answers many yes/no questions about one state in one request, with P(yes) for
each. :class:`DecisionJudge` asks it, per input, one question per rule (split
at ``max_questions``), named by the rule id, whose instructions are the judge
predicate applied to the rule (the rule as the chat judge renders it, then the
predicate's question). The answers' probabilities are the raw P(YES); the
verdict cache, calibration, threshold, callbacks and async work as for the
chat judge (:class:`~langchain_tag.judging.judge.Judge`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from langchain_core.callbacks import Callbacks

from langchain_tag.calls._runner import CallRunner, Outcome, Request
from langchain_tag.errors import ParseError
from langchain_tag.judging._admission import admitted_key, asked_model
from langchain_tag.judging._pairs import PairRequest, combine_halves
from langchain_tag.judging.decision_interfaces import answered_by, answers_of, is_openai_decisions, question_request
from langchain_tag.judging.judge import Batch, Judge
from langchain_tag.judging.prompts import rule_question
from langchain_tag.judging.results import Reading
from langchain_tag.judging.verdict_cache import VerdictStore, verdict_key
from langchain_tag.rules import Rule

__all__ = ["DECISION_FORMAT", "DecisionJudge"]

DECISION_FORMAT = "decision-v1"
"""The reply format part of a decision judgment's cache key and scoring version (bump when the question wording
built here changes)."""

_Asked = list[tuple[PairRequest, str, str]]
"""Pair requests, each with its question's name (the rule id; ``not:`` before it for a negated half) and text."""

_Planned = tuple[list[PairRequest], list[tuple[_Asked, Request[Outcome[dict[str, Reading]]]]], dict[str, Reading]]
"""One batch planned: its pair requests, the decision requests with the questions each asks, and the cached
verdicts."""

NEGATED_PREFIX = "not:"
"""Question-name prefix of a contrast prompt's negated half (the statement half is named by the rule id)."""


instructions = rule_question
"""A rule as one yes/no question (:func:`~langchain_tag.judging.prompts.rule_question`)."""


class DecisionJudge(Judge):
    """Judge an input's rules with a decision model: one request per input (per ``max_questions`` rules).

    Takes the :class:`~langchain_tag.judging.judge.Judge` settings (``verdict_format`` does not apply: the
    model answers with probabilities), and:

    Args:
        llm: A ``BaseDecisionModel`` or ``OpenAIDecisions``.
        predicate: The judge prompt whose rule rendering and question make each rule's instructions.
        max_questions: Most questions in one request; an input with more rules is asked in several.
        **settings: The other :class:`~langchain_tag.judging.judge.Judge` settings.

    Raises:
        ValueError: When ``max_questions`` is below 1, or on a bad setting of the judge.
    """

    def __init__(self, llm: Any, predicate: Any = "applicability", *, max_questions: int = 64, **settings: Any):
        super().__init__(llm, predicate, **settings)
        if max_questions < 1:
            raise ValueError(f"max_questions must be >= 1, got {max_questions}")
        self.max_questions = max_questions
        self.runner: CallRunner = CallRunner(
            _sender(llm),
            model=llm,
            limits=self.settings.limits,
            gate=self.state.gate(self.settings.limits),
        )
        self._store = VerdictStore(self.settings.cache) if self.settings.cache is not None else None
        self._asked_model = asked_model(llm)
        """The model name the judge asks for (answers another model gave are kept apart: :meth:`_admitted`)."""

    @property
    def scoring_version(self) -> str:
        """The prompt's scoring version and the decision format: a chat judge's calibration does not apply."""
        return f"{self.prompt.scoring_version}+{DECISION_FORMAT}"

    def requests_for(self, judgments: int) -> int:
        """One request per ``max_questions`` judgments of an input."""
        return -(-judgments // self.max_questions)

    def requests(self, query: str, rules: Sequence[Rule]) -> list[PairRequest]:
        """One question per rule (and per negated half), each with its verdict-cache key; no chat messages."""
        return [pair for pair, _, _ in self._asked(query, rules)]

    def _asked(self, query: str, rules: Sequence[Rule]) -> _Asked:
        """:meth:`requests`, each with its question's name and text."""
        halves = [(self.prompt, False)] + ([(self.prompt.negation, True)] if self.prompt.negation else [])
        asked: _Asked = []
        for half, negated in halves:
            for rule in rules:
                text = instructions(half, rule)
                key = verdict_key(
                    model=self.model_identity,
                    prompt_version=half.version,
                    verdict_format=DECISION_FORMAT,
                    query=query,
                    rule_text=text,
                )
                pair = PairRequest(
                    key=key, rule_id=rule.rule_id, prompt_version=half.version, negated=negated, messages=()
                )
                asked.append((pair, f"{NEGATED_PREFIX}{rule.rule_id}" if negated else rule.rule_id, text))
        return asked

    def _plan_requests(self, batches: Sequence[Batch]) -> list[_Planned]:
        """Each batch's pair requests, the decision requests for the pairs the cache lacks, and their cached ones."""
        store = self._store
        planned: list[_Planned] = []
        for query, rules in batches:
            asked = self._asked(query, rules)
            cached = {
                p.key: found for p, _, _ in asked if store is not None and (found := store.get(p.key)) is not None
            }
            pending = list({p.key: (p, name, text) for p, name, text in asked if p.key not in cached}.values())
            calls: list[tuple[_Asked, Request[Outcome[dict[str, Reading]]]]] = []
            for start in range(0, len(pending), self.max_questions):
                chunk = pending[start : start + self.max_questions]
                request: Request[Outcome[dict[str, Reading]]] = Request(
                    messages=question_request(self.llm, query, {name: text for _, name, text in chunk}),
                    parse=partial(_read, chunk, store, self._asked_model, self._admitted),
                    blank=Outcome(),
                    run_name=f"tag_judge {len(chunk)} questions",
                    tags=["tag_judge"],
                    metadata={"tag_rule_ids": [p.rule_id for p, _, _ in chunk], "tag_predicate": self.prompt.name},
                )
                calls.append((chunk, request))
            planned.append(([p for p, _, _ in asked], calls, cached))
        return planned

    def _admitted(self, key: str, response: Any) -> str:
        """The key an answer of ``response`` is kept under (:func:`~langchain_tag.judging._admission.admitted_key`)."""
        return admitted_key(self, key, answered_by(response), asked=self._asked_model)

    def _call(self, batches: Sequence[Batch], callbacks: Callbacks) -> list[list[Reading]]:
        planned = self._plan_requests(batches)
        outcomes = self.runner.run([c for _, calls, _ in planned for _, c in calls], callbacks=callbacks)
        return _readings(planned, outcomes, self.prompt.negation is not None)

    async def _acall(self, batches: Sequence[Batch], callbacks: Callbacks) -> list[list[Reading]]:
        planned = self._plan_requests(batches)
        outcomes = await self.runner.arun([c for _, calls, _ in planned for _, c in calls], callbacks=callbacks)
        return _readings(planned, outcomes, self.prompt.negation is not None)


def _readings(
    planned: Sequence[_Planned], outcomes: Sequence[Outcome[dict[str, Reading]]], halves: bool
) -> list[list[Reading]]:
    """Each batch's readings, from the cache and from the answers (cached as they arrived).

    Every pair a request asked about gets a reading; its calls and tokens count on the first. A pair the
    response left unanswered fails alone (its reply says so); a request that failed fails them all. With
    ``halves`` (a contrast prompt), each rule's two halves become one reading.
    """
    found: list[list[Reading]] = []
    outcome_of = iter(outcomes)
    for pairs, calls, cached in planned:
        answered: dict[str, Reading] = {}
        for chunk, _ in calls:
            outcome = next(outcome_of)
            values = outcome.value if outcome.error is None and (outcome.cached or outcome.attempts > 0) else None
            for i, (pair, name, _) in enumerate(chunk):
                reading = values.get(pair.key) if values is not None else None
                if reading is None and values is not None:
                    reading = Reading(reply="no answer", error=f"the decision model gave no probability for {name}")
                elif reading is None:
                    reading = Reading(reply=outcome.reply, error=outcome.error)
                answered[pair.key] = replace(
                    reading,
                    attempts=outcome.attempts if i == 0 else 0,
                    prompt_tokens=outcome.prompt_tokens if i == 0 else 0,
                    completion_tokens=outcome.completion_tokens if i == 0 else 0,
                )
        readings = [replace(cached[p.key], cached=True) if p.key in cached else answered[p.key] for p in pairs]
        found.append(combine_halves(pairs, readings) if halves else readings)
    return found


def _sender(llm: Any) -> Any:
    """What the runner calls: an ``OpenAIDecisions`` whose replies keep the answers given twice; else ``llm``."""
    if not is_openai_decisions(llm):
        return llm
    from langchain_tag.judging._openai_decisions import CheckedDecisions

    return CheckedDecisions.of(llm) or llm


def _read(
    chunk: _Asked, store: VerdictStore | None, asked: str | None, admitted: Callable[[str, Any], str], response: Any
) -> Outcome[dict[str, Reading]]:
    """One decision response read into a reading per answered pair key, each cached as it arrives.

    Each is cached under the key ``admitted`` gives it: its own, or, when another model than the one asked for
    answered, apart (:func:`~langchain_tag.judging._admission.admitted_key`).

    A question the response leaves out (or refused) gets no reading: that pair alone fails. A question its body
    answered more than once, differently, gets a failed reading naming the answers, as the batch import treats
    two replies to one request: neither is kept. A response with no usable answer fails the request, which the
    runner then retries.
    """
    found, conflicts = answers_of(response)
    readings: dict[str, Reading] = {}
    for pair, name, _ in chunk:
        if name in conflicts:
            error = f"the decision model {_conflict(name, conflicts[name])}: neither is kept"
            readings[pair.key] = Reading(reply="; ".join(conflicts[name]), error=error)
        elif (p_yes := found.get(name)) is not None:
            readings[pair.key] = Reading(p_yes=p_yes, word=p_yes >= 0.5, reply=f"P(yes)={p_yes:.6g}")
    usable = {key: reading for key, reading in readings.items() if reading.error is None}
    if not usable:
        why = [_conflict(n, conflicts[n]) if n in conflicts else f"{n} not answered" for _, n, _ in chunk]
        more = f"; and {len(why) - 3} more" if len(why) > 3 else ""
        raise ParseError(f"the decision model gave no usable answer: {'; '.join(why[:3])}{more}")
    if store is not None:
        # A response that names the very model asked for (or none) is stored as it comes; any other name is
        # decided by the one admission step (a dated snapshot of the asked model, or another model, kept apart).
        answered = answered_by(response)
        as_asked = asked is None or not answered or answered == asked
        for key, reading in usable.items():
            store.put(key if as_asked else admitted(key, response), reading)
    return Outcome(value=readings)


def _conflict(name: str, answers: Sequence[str]) -> str:
    """A question answered more than once, differently: ``answered R1 twice, differently (P(yes)=0.9 and ...)``."""
    times = "twice" if len(answers) == 2 else f"{len(answers)} times"
    return f"answered {name} {times}, differently ({' and '.join(answers)})"
