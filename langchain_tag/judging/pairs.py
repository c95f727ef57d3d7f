"""The judging core: one (input, rule) pair rendered to a request, one reply read into a raw P(YES).

Everything here is pure and serialisable: no model, cache, retry or
calibration. It is the unit any engine can run, an in-process chat model
(:class:`~langchain_tag.judging.chat.PairwiseJudge`), a Ray Data pipeline or a
provider batch API alike:

1. :func:`render_pairs` turns an input and its rules into
   :class:`PairRequest` objects (OpenAI-style chat messages, the verdict-cache
   key, the rule id and which half of a contrast prompt it asks);
2. an engine sends each request and gets back a reply text and, where the
   provider offers them, the first token's logprobs;
3. :func:`read_reply` reads that into a :class:`~langchain_tag.judging.read.Verdict`
   (raw P(YES), or a text verdict), and :func:`raw_judgment` /
   :func:`combine_halves` make the pair's raw :class:`Judgment`.

Scoring (reference judgments, calibration, the threshold, ``applies``) is
the scorer's job (:class:`~langchain_tag.judging.calibration.scorer.Scorer`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_tag.calls.verdict_cache import verdict_key
from langchain_tag.judging.logodds import logit, sigmoid
from langchain_tag.judging.prompts import JudgePrompt, VerdictFormat
from langchain_tag.judging.read import Verdict, parse_reply
from langchain_tag.rules import Rule

__all__ = [
    "Judgment",
    "MatchResult",
    "PairRequest",
    "combine_halves",
    "contrast_judgment",
    "read_reply",
    "render_pairs",
    "to_messages",
]

_UNSET: Any = object()


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
    requests = []
    for half, negated in halves:
        for rule in rules:
            messages = half.messages(query, rule, verdict_format)
            requests.append(
                PairRequest(
                    key=verdict_key(
                        model=model,
                        prompt_version=half.version,
                        verdict_format=verdict_format,
                        query=query,
                        rule_text=half.render_rule(rule),
                    ),
                    rule_id=rule.rule_id,
                    prompt_version=half.version,
                    negated=negated,
                    messages=tuple({"role": _role(m), "content": str(m.content)} for m in messages),
                )
            )
    return requests


def _role(message: BaseMessage) -> str:
    return "system" if isinstance(message, SystemMessage) else "user"


def to_messages(request: PairRequest) -> list[BaseMessage]:
    """A request's messages as LangChain messages, for a chat model in process."""
    return [
        SystemMessage(m["content"]) if m["role"] == "system" else HumanMessage(m["content"]) for m in request.messages
    ]


def read_reply(text: str, logprobs: Mapping[str, Any] | None = None) -> Verdict:
    """Read one reply: P(YES) from the first token's logprobs where given, else a YES/NO in the text.

    Args:
        text: The reply text.
        logprobs: The OpenAI chat-completions ``logprobs`` object of the reply, if any.

    Raises:
        ParseError: When neither gives a verdict, or the logprobs are malformed.
    """
    return parse_reply(text, logprobs)


class Judgment:
    """The verdict for one (input, rule) pair.

    Attributes:
        rule_id: The rule judged.
        applies: Final decision, made by the scorer (``False`` when the judgment failed).
        p_yes: The judge's raw P(YES) from logprobs, when available. With a
            contrast prompt (:attr:`JudgePrompt.negation`), the contrast of
            its two answers: ``sigmoid(logit(statement_p_yes) - logit(negation_p_yes))``.
        score: The calibrated score the threshold was applied to (``p_yes``
            without a calibration), when available.
        error: Why the judgment failed, if it did (then counted as NO).
        attempts: How many calls were made for this pair.
        prompt_tokens: Prompt tokens reported by the model, summed over attempts.
        completion_tokens: Completion tokens, summed over attempts.
        reply: The last reply text.
        cached: Whether the verdict came from the verdict cache (no call made).
        says_yes: The verdict read from the reply before scoring (the text
            verdict when there are no logprobs).
        statement_p_yes: With a contrast prompt: P(YES) that the rule's condition holds.
        negation_p_yes: With a contrast prompt: P(YES) that its negation holds.
    """

    __slots__ = (
        "applies",
        "attempts",
        "cached",
        "completion_tokens",
        "error",
        "negation_p_yes",
        "p_yes",
        "prompt_tokens",
        "reply",
        "rule_id",
        "says_yes",
        "score",
        "statement_p_yes",
    )

    def __init__(
        self,
        rule_id: str,
        applies: bool = False,
        p_yes: float | None = None,
        score: float | None = None,
        error: str | None = None,
        attempts: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        reply: str = "",
        cached: bool = False,
        says_yes: bool | None = None,
        statement_p_yes: float | None = None,
        negation_p_yes: float | None = None,
        *,
        probability: float | None = _UNSET,
        statement_probability: float | None = _UNSET,
        negation_probability: float | None = _UNSET,
    ) -> None:
        if probability is not _UNSET:
            _renamed("probability", "p_yes")
            p_yes = probability
        if statement_probability is not _UNSET:
            _renamed("statement_probability", "statement_p_yes")
            statement_p_yes = statement_probability
        if negation_probability is not _UNSET:
            _renamed("negation_probability", "negation_p_yes")
            negation_p_yes = negation_probability
        self.rule_id = rule_id
        self.applies = applies
        self.p_yes = p_yes
        self.score = score
        self.error = error
        self.attempts = attempts
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.reply = reply
        self.cached = cached
        self.says_yes = applies if says_yes is None else says_yes
        self.statement_p_yes = statement_p_yes
        self.negation_p_yes = negation_p_yes

    @property
    def probability(self) -> float | None:
        """Deprecated alias of :attr:`p_yes`."""
        return self.p_yes

    @property
    def statement_probability(self) -> float | None:
        """Deprecated alias of :attr:`statement_p_yes`."""
        return self.statement_p_yes

    @property
    def negation_probability(self) -> float | None:
        """Deprecated alias of :attr:`negation_p_yes`."""
        return self.negation_p_yes

    def __repr__(self) -> str:
        return (
            f"Judgment(rule_id={self.rule_id!r}, applies={self.applies}, p_yes={self.p_yes}, score={self.score}, "
            f"error={self.error!r}, attempts={self.attempts}, cached={self.cached})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Judgment):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]


def _renamed(old: str, new: str) -> None:
    warnings.warn(f"Judgment({old}=...) is deprecated; use {new}=", DeprecationWarning, stacklevel=3)


def raw_judgment(rule_id: str, verdict: Verdict, *, reply: str) -> Judgment:
    """A pair's raw judgment from one read reply (not yet scored)."""
    return Judgment(rule_id=rule_id, applies=verdict.applies, p_yes=verdict.probability, reply=reply)


def contrast_judgment(statement: Judgment, negation: Judgment) -> Judgment:
    """One pair's judgment from its two halves: the condition asked, and its negation asked.

    P(YES) is ``sigmoid(logit(p) - logit(q))`` for ``p`` on the condition and
    ``q`` on its negation, so a judge that leans to YES on both halves, or an
    input that lifts both, moves it little. Without logprobs the verdict is
    YES when the condition got YES and its negation NO. A failed half fails
    the pair; calls and tokens are summed.
    """
    error = statement.error or (f"negation: {negation.error}" if negation.error else None)
    p, q = statement.p_yes, negation.p_yes
    p_yes = sigmoid(logit(p) - logit(q)) if error is None and p is not None and q is not None else None
    says_yes = error is None and statement.says_yes and not negation.says_yes
    return Judgment(
        rule_id=statement.rule_id,
        applies=says_yes,
        p_yes=p_yes,
        error=error,
        attempts=statement.attempts + negation.attempts,
        prompt_tokens=statement.prompt_tokens + negation.prompt_tokens,
        completion_tokens=statement.completion_tokens + negation.completion_tokens,
        reply=f"{statement.reply} | negation: {negation.reply}",
        cached=statement.cached and negation.cached,
        says_yes=says_yes,
        statement_p_yes=p,
        negation_p_yes=q,
    )


def combine_halves(requests: Sequence[PairRequest], judgments: Sequence[Judgment]) -> list[Judgment]:
    """One judgment per rule from the judgments of :func:`render_pairs`' requests, in the same order.

    Without negated halves the judgments are returned as they are; with them,
    each rule's two halves become one :func:`contrast_judgment`.
    """
    statements = [j for r, j in zip(requests, judgments, strict=True) if not r.negated]
    negations = [j for r, j in zip(requests, judgments, strict=True) if r.negated]
    if not negations:
        return statements
    return [contrast_judgment(a, b) for a, b in zip(statements, negations, strict=True)]


@dataclass
class MatchResult:
    """All judgments for one input, in rule order."""

    query: str
    predicate: str
    judgments: list[Judgment] = field(default_factory=list)

    @property
    def matched(self) -> list[Judgment]:
        """Judgments that said YES, highest (calibrated) score first, then rule order."""
        yes = [j for j in self.judgments if j.applies]
        order = {id(j): i for i, j in enumerate(yes)}
        return sorted(yes, key=lambda j: (-(j.score if j.score is not None else 1.0), order[id(j)]))

    @property
    def failed(self) -> list[Judgment]:
        """Judgments that failed after the retry and were counted as NO."""
        return [j for j in self.judgments if j.error is not None]

    @property
    def calls(self) -> int:
        """LLM calls made."""
        return sum(j.attempts for j in self.judgments)

    @property
    def cache_hits(self) -> int:
        """Judgments answered from the verdict cache."""
        return sum(1 for j in self.judgments if j.cached)

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens over all calls."""
        return sum(j.prompt_tokens for j in self.judgments)

    @property
    def completion_tokens(self) -> int:
        """Completion tokens over all calls."""
        return sum(j.completion_tokens for j in self.judgments)
