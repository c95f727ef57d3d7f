"""The judging core: one (input, rule) pair rendered to a request, one reply read into a raw P(YES).

Everything here is pure and serialisable: no model, cache, retry or
calibration. It is the unit any engine can run, an in-process chat model
(:class:`~langchain_tag.judging.chat.ChatJudge`), a Ray Data pipeline or a
provider batch API alike:

1. :func:`render_pairs` turns an input and its rules into
   :class:`PairRequest` objects (OpenAI-style chat messages, the verdict-cache
   key, the rule id and which half of a contrast prompt it asks);
2. an engine sends each request and gets back a reply text and, where the
   provider offers them, the first token's logprobs;
3. the one reader (:func:`~langchain_tag.judging._read.read_reply`) reads that
   into a :class:`~langchain_tag.judging.results.Reading` (raw P(YES), the
   reply's word), and :func:`combine_halves` makes one per pair of a
   contrast prompt's two halves.

Scoring (reference judgments, calibration, the threshold, ``applies``) is
the scorer's job (:class:`~langchain_tag.judging.calibration._scorer.Scorer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_tag.judging.prompts import (
    QUESTION_PROMPT_VERSION,
    JudgePrompt,
    VerdictFormat,
    fence_input,
    question_messages,
)
from langchain_tag.judging.results import Reading, contrast
from langchain_tag.judging.verdict_cache import verdict_key
from langchain_tag.rules import Rule

__all__ = [
    "PairRequest",
    "combine_halves",
    "question_pair",
    "render_pairs",
    "render_questions",
]


@dataclass(frozen=True)
class PairRequest:
    """One judgment to make, as plain data.

    Attributes:
        key: The verdict-cache key (model, prompt version, reply format, input and rule as rendered).
        rule_id: The rule judged.
        prompt_version: The version of the prompt that rendered it (a contrast's negated half: the negation's).
        negated: Whether this is the negated half of a contrast prompt.
        messages: The chat messages, OpenAI style: ``({"role": "system", "content": ...}, {"role": "user", ...})``.
    """

    key: str
    rule_id: str
    prompt_version: str
    negated: bool
    messages: tuple[Mapping[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON-ready data."""
        return {
            "key": self.key,
            "rule_id": self.rule_id,
            "prompt_version": self.prompt_version,
            "negated": self.negated,
            "messages": [dict(m) for m in self.messages],
        }


def render_pairs(
    prompt: JudgePrompt,
    query: str,
    rules: Sequence[Rule],
    *,
    model: str,
    verdict_format: VerdictFormat = "token",
) -> list[PairRequest]:
    """The requests that judge ``query`` against each rule: one per rule, and with a negation prompt two.

    Requests come input-major (every rule for this input, then every negated
    half), so an engine with a prefix cache evaluates the input's prefix once.

    Args:
        prompt: The judge prompt.
        query: The input.
        rules: The rules, in the order the judgments are wanted.
        model: The judge model's identity (part of each cache key).
        verdict_format: ``"token"`` (a bare YES/NO) or ``"json"``.
    """
    halves = [(prompt, False)] + ([(prompt.negation, True)] if prompt.negation is not None else [])
    fenced = fence_input(query) if "<<<" in query or ">>>" in query else query  # nothing to escape: as it is
    requests = []
    for half, negated in halves:
        for rule in rules:
            rule_text = half.render_rule(rule)
            requests.append(
                PairRequest(
                    key=verdict_key(
                        model=model,
                        prompt_version=half.version,
                        verdict_format=verdict_format,
                        query=query,
                        rule_text=rule_text,
                    ),
                    rule_id=rule.rule_id,
                    prompt_version=half.version,
                    negated=negated,
                    messages=half.compose(fenced, rule_text, verdict_format),
                )
            )
    return requests


def question_pair(
    *, model: str, query: str, name: str, question: str, yes_means: str = "", no_means: str = "", negated: bool = False
) -> PairRequest:
    """One yes/no ``question`` about ``query`` as a chat request (:func:`~.prompts.question_messages`).

    The request a :class:`~langchain_tag.judging.chat_decision_model.ChatDecisionModel` sends for a ``Noul`` question,
    and a chat judge for a rule asked as a question (:func:`render_questions`): one cache key for both.

    Args:
        model: The judge model's identity (part of the cache key).
        query: The input text.
        name: The question's name (a rule id).
        question: The question's full instructions.
        yes_means: What counts as yes, when the question says so.
        no_means: What counts as no, when the question says so.
        negated: Whether this is the negated half of a contrast prompt.
    """
    key = verdict_key(
        model=model,
        prompt_version=QUESTION_PROMPT_VERSION,
        verdict_format="token",
        query=query,
        rule_text="\n".join((question, yes_means, no_means)),
    )
    messages = tuple(question_messages(query, question, yes_means, no_means))
    return PairRequest(
        key=key, rule_id=name, prompt_version=QUESTION_PROMPT_VERSION, negated=negated, messages=messages
    )


def render_questions(prompt: JudgePrompt, query: str, rules: Sequence[Rule], *, model: str) -> list[PairRequest]:
    """The requests that ask each rule of ``query`` as a yes/no question (:func:`question_pair`), input-major.

    The rule's question is :func:`~langchain_tag.judging.prompts.rule_question` (a contrast prompt's negated half
    asks its negation's), in the order :func:`render_pairs` gives.
    """
    halves = [(prompt, False)] + ([(prompt.negation, True)] if prompt.negation is not None else [])
    return [
        question_pair(
            model=model,
            query=query,
            name=rule.rule_id,
            question=f"{half.render_rule(rule)}\n{half.question}",
            negated=negated,
        )  # the question is rule_question(half, rule), written out: this runs for every rule
        for half, negated in halves
        for rule in rules
    ]


def combine_halves(requests: Sequence[PairRequest], readings: Sequence[Reading]) -> list[Reading]:
    """One reading per rule from the readings of :func:`render_pairs`' requests, in the same order.

    Without negated halves the readings are returned as they are; with them, each rule's two halves become one
    (:func:`~langchain_tag.judging.results.contrast`).
    """
    statements = [r for q, r in zip(requests, readings, strict=True) if not q.negated]
    negations = [r for q, r in zip(requests, readings, strict=True) if q.negated]
    if not negations:
        return statements
    return [contrast(a, b) for a, b in zip(statements, negations, strict=True)]
