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
from typing import Any

from langchain_core.callbacks import Callbacks

from langchain_tag.calls.runner import CallRunner, Outcome, Request
from langchain_tag.errors import ParseError
from langchain_tag.judging.decision_interfaces import (
    conflicting_answers,
    is_openai_decisions,
    probabilities,
    question_request,
)
from langchain_tag.judging.judge import Batch, Judge
from langchain_tag.judging.pairs import PairRequest, combine_halves
from langchain_tag.judging.prompts import rule_question
from langchain_tag.judging.results import Reading
from langchain_tag.judging.verdict_cache import VerdictStore, verdict_key
from langchain_tag.rules import Rule

__all__ = ["DECISION_FORMAT", "DecisionJudge"]

DECISION_FORMAT = "decision-v1"
"""The reply format part of a decision judgment's cache key and scoring version (bump when the question wording
built here changes)."""

_Planned = tuple[
    list[PairRequest], list[tuple[list[PairRequest], Request[Outcome[dict[str, Reading]]]]], dict[str, Reading]
]
"""One batch planned: its pair requests, the decision requests with the pairs each asks, and the cached verdicts."""

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

    @property
    def scoring_version(self) -> str:
        """The prompt's scoring version and the decision format: a chat judge's calibration does not apply."""
        return f"{self.prompt.scoring_version}+{DECISION_FORMAT}"

    def requests_for(self, judgments: int) -> int:
        """One request per ``max_questions`` judgments of an input."""
        return -(-judgments // self.max_questions)

    def requests(self, query: str, rules: Sequence[Rule]) -> list[PairRequest]:
        """One question per rule (and per negated half), each with its verdict-cache key; no chat messages."""
        halves = [(self.prompt, False)] + ([(self.prompt.negation, True)] if self.prompt.negation else [])
        return [
            PairRequest(
                key=verdict_key(
                    model=self.model_identity,
                    prompt_version=half.version,
                    verdict_format=DECISION_FORMAT,
                    query=query,
                    rule_text=instructions(half, rule),
                ),
                rule_id=rule.rule_id,
                prompt_version=half.version,
                negated=negated,
                messages=(),
            )
            for half, negated in halves
            for rule in rules
        ]

    def _questions(self, query: str, rules: Sequence[Rule]) -> _Planned:
        """The query's pair requests, the decision requests for the pairs the cache lacks, and their cached ones."""
        pairs = self.requests(query, rules)
        store = VerdictStore(self.settings.cache) if self.settings.cache is not None else None
        cached = {p.key: found for p in pairs if store is not None and (found := store.get(p.key)) is not None}
        texts = {
            p.key: instructions(self.prompt.negation or self.prompt if p.negated else self.prompt, r)
            for p, r in _with_rules(pairs, rules)
        }
        pending = list({p.key: p for p in pairs if p.key not in cached}.values())
        calls: list[tuple[list[PairRequest], Request[Outcome[dict[str, Reading]]]]] = []
        for start in range(0, len(pending), self.max_questions):
            chunk = pending[start : start + self.max_questions]
            questions = {_name(p): texts[p.key] for p in chunk}
            calls.append(
                (
                    chunk,
                    Request(
                        messages=question_request(self.llm, query, questions),
                        parse=_reader(chunk, store),
                        blank=Outcome(),
                        run_name=f"tag_judge {len(chunk)} questions",
                        tags=["tag_judge"],
                        metadata={"tag_rule_ids": [p.rule_id for p in chunk], "tag_predicate": self.prompt.name},
                    ),
                )
            )
        return pairs, calls, cached

    def _call(self, batches: Sequence[Batch], callbacks: Callbacks) -> list[list[Reading]]:
        planned = [self._questions(text, rules) for text, rules in batches]
        outcomes = self.runner.run([c for _, calls, _ in planned for _, c in calls], callbacks=callbacks)
        return _readings(planned, outcomes)

    async def _acall(self, batches: Sequence[Batch], callbacks: Callbacks) -> list[list[Reading]]:
        planned = [self._questions(text, rules) for text, rules in batches]
        outcomes = await self.runner.arun([c for _, calls, _ in planned for _, c in calls], callbacks=callbacks)
        return _readings(planned, outcomes)


def _readings(planned: Sequence[_Planned], outcomes: Sequence[Outcome[dict[str, Reading]]]) -> list[list[Reading]]:
    """Each batch's readings, from the cache and from the answers (cached as they arrived)."""
    found: list[list[Reading]] = []
    start = 0
    for pairs, calls, cached in planned:
        answered: dict[str, Reading] = {}
        for (chunk, _), outcome in zip(calls, outcomes[start : start + len(calls)], strict=True):
            answered.update(_answers(chunk, outcome))
        start += len(calls)
        found.append(combine_halves(pairs, [replace(cached[p.key], cached=True) if p.key in cached
                                            else answered[p.key] for p in pairs]))  # fmt: skip
    return found


def _sender(llm: Any) -> Any:
    """What the runner calls: an ``OpenAIDecisions`` whose replies keep the answers given twice; else ``llm``."""
    if not is_openai_decisions(llm):
        return llm
    from langchain_tag.judging._openai_decisions import CheckedDecisions

    return CheckedDecisions.of(llm) or llm


def _with_rules(pairs: Sequence[PairRequest], rules: Sequence[Rule]) -> list[tuple[PairRequest, Rule]]:
    by_id = {r.rule_id: r for r in rules}
    return [(p, by_id[p.rule_id]) for p in pairs]


def _name(pair: PairRequest) -> str:
    return f"{NEGATED_PREFIX}{pair.rule_id}" if pair.negated else pair.rule_id


def _reader(chunk: Sequence[PairRequest], store: VerdictStore | None) -> Callable[[Any], Outcome[dict[str, Reading]]]:
    """Reads one decision response into a reading per answered pair key, caching each as it arrives.

    A question the response leaves out (or refused) gets no reading: that pair alone fails. A question its body
    answered more than once, differently, gets a failed reading naming the answers, as the batch import treats
    two replies to one request: neither is kept. A response with no usable answer fails the request, which the
    runner then retries.
    """

    def read(response: Any) -> Outcome[dict[str, Reading]]:
        found = probabilities(response)
        conflicts = conflicting_answers(response)
        readings: dict[str, Reading] = {}
        for pair in chunk:
            name = _name(pair)
            if name in conflicts:
                error = f"the decision model {_conflict(name, conflicts[name])}: neither is kept"
                readings[pair.key] = Reading(reply="; ".join(conflicts[name]), error=error)
            elif (p_yes := found.get(name)) is not None:
                readings[pair.key] = Reading(p_yes=p_yes, word=p_yes >= 0.5, reply=f"P(yes)={p_yes:.6g}")
        usable = {key: reading for key, reading in readings.items() if reading.error is None}
        if not usable:
            why = [_conflict(n, conflicts[n]) if n in conflicts else f"{n} not answered" for n in map(_name, chunk)]
            more = f"; and {len(why) - 3} more" if len(why) > 3 else ""
            raise ParseError(f"the decision model gave no usable answer: {'; '.join(why[:3])}{more}")
        if store is not None:
            for key, reading in usable.items():
                store.put(key, reading)
        return Outcome(value=readings)

    return read


def _conflict(name: str, answers: Sequence[str]) -> str:
    """A question answered more than once, differently: ``answered R1 twice, differently (P(yes)=0.9 and ...)``."""
    times = "twice" if len(answers) == 2 else f"{len(answers)} times"
    return f"answered {name} {times}, differently ({' and '.join(answers)})"


def _answers(chunk: Sequence[PairRequest], outcome: Outcome[dict[str, Reading]]) -> dict[str, Reading]:
    """The reading of every pair one request asked about; its calls and tokens count on the first.

    A pair the response left unanswered fails alone (its reply says so); a request that failed fails them all.
    """
    answered = outcome.value if outcome.ok and outcome.value is not None else None
    readings = {}
    for i, pair in enumerate(chunk):
        found = answered.get(pair.key) if answered is not None else None
        if found is None and answered is not None:
            found = Reading(reply="no answer", error=f"the decision model gave no probability for {_name(pair)}")
        elif found is None:
            found = Reading(reply=outcome.reply, error=outcome.error)
        first = i == 0
        readings[pair.key] = replace(
            found,
            attempts=outcome.attempts if first else 0,
            prompt_tokens=outcome.prompt_tokens if first else 0,
            completion_tokens=outcome.completion_tokens if first else 0,
        )
    return readings
