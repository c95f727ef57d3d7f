"""What judging gives: one :class:`Judgment` per (input, rule) pair and a :class:`MatchResult` per input.

Every judge (chat model, decision model, cascade) returns raw judgments of this
one type; the scorer (:class:`~langchain_tag.judging.calibration.scorer.Scorer`)
returns them scored, as new objects.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from langchain_tag.errors import TagError
from langchain_tag.judging.logodds import logit, sigmoid

__all__ = ["Judgment", "JudgmentsFailedError", "MatchResult", "contrast_judgment"]


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
    ) -> None:
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

    def replace(self, **changes: Any) -> Judgment:
        """A copy with ``changes`` applied (the scorer's scored judgments are new objects)."""
        new = copy.copy(self)
        for name, value in changes.items():
            setattr(new, name, value)
        return new

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


class JudgmentsFailedError(TagError, RuntimeError):
    """Some judgments failed (unreadable replies or provider errors) and ``strict=True`` was asked for.

    Without ``strict`` these judgments are counted as NO, logged as a warning
    and reported in the result; with it the call raises this instead, so a
    verdict that was never read cannot pass for a NO.

    Attributes:
        failed_rule_ids: The rules whose judgment failed, in rule order.
        result: The whole match result (matched rules, failed judgments with
            their errors, token counts).
    """

    def __init__(self, message: str, *, failed_rule_ids: list[str], result: MatchResult) -> None:
        super().__init__(message)
        self.failed_rule_ids = failed_rule_ids
        self.result = result
