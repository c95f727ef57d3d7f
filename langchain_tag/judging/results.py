"""What judging gives: a :class:`Reading` of each reply, a scored :class:`Judgment` per pair, a :class:`MatchResult`.

Two records carry a judgment from the moment its reply is read to the document
the user gets. A :class:`Reading` is what one reply said, as the one reader
read it (:mod:`langchain_tag.judging._read`): the call runner returns it, the
verdict cache keeps it as it is. The scorer
(:class:`~langchain_tag.judging.calibration._scorer.Scorer`) turns each into a
:class:`Judgment`, a new object with its calibrated score and decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_tag.errors import TagError
from langchain_tag.judging._logodds import logit, sigmoid

__all__ = ["Judgment", "JudgmentsFailedError", "MatchResult", "Reading", "contrast"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Reading:
    """What one reply said about one (input, rule) pair, as read: the runner's record and the cache's entry.

    Attributes:
        p_yes: The judge's raw P(YES) (first-token logprobs, or a decision model's probability), when given.
            With a contrast prompt, the contrast of its two answers (:func:`contrast`).
        word: The YES (``True``) or NO (``False``) the reply says; ``None`` when it could not be read.
        reply: The reply text (the last one, after retries).
        attempts: Calls made (0 when the verdict cache answered).
        prompt_tokens: Prompt tokens reported by the model, over all attempts.
        completion_tokens: Completion tokens, over all attempts.
        error: Why no verdict could be read after the last attempt, if none could (then counted as NO).
        cached: Whether the verdict cache answered (no call made).
        statement_p_yes: With a contrast prompt: P(YES) that the rule's condition holds.
        negation_p_yes: With a contrast prompt: P(YES) that its negation holds.
    """

    p_yes: float | None = None
    word: bool | None = None
    reply: str = ""
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    cached: bool = False
    statement_p_yes: float | None = None
    negation_p_yes: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Judgment(Reading):
    """The scored verdict for one (input, rule) pair: its reading, the score the threshold met, and the decision.

    Attributes:
        rule_id: The rule judged.
        score: The calibrated score the threshold was applied to (``p_yes`` without a calibration), when known.
        applies: The decision (``False`` when the judgment failed). Only the scorer makes it.
    """

    rule_id: str = ""
    score: float | None = None
    applies: bool = False


def contrast(statement: Reading, negation: Reading) -> Reading:
    """One pair's reading from its two halves: the condition asked, and its negation asked.

    P(YES) is ``sigmoid(logit(p) - logit(q))`` for ``p`` on the condition and
    ``q`` on its negation, so a judge that leans to YES on both halves, or an
    input that lifts both, moves it little. Without logprobs the word is YES
    when the condition got YES and its negation NO. A failed half fails the
    pair; calls and tokens are summed.
    """
    error = statement.error or (f"negation: {negation.error}" if negation.error else None)
    p, q = statement.p_yes, negation.p_yes
    p_yes = sigmoid(logit(p) - logit(q)) if error is None and p is not None and q is not None else None
    return Reading(
        p_yes=p_yes,
        word=None if error is not None else bool(statement.word and not negation.word),
        reply=f"{statement.reply} | negation: {negation.reply}",
        attempts=statement.attempts + negation.attempts,
        prompt_tokens=statement.prompt_tokens + negation.prompt_tokens,
        completion_tokens=statement.completion_tokens + negation.completion_tokens,
        error=error,
        cached=statement.cached and negation.cached,
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

    def failure_event(self, *, judges: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The data of the ``tag_judgments_failed`` callback event: the query, the failed rules and why each failed.

        Every front that reports failed judgments (the retrievers, the graph's check, the agent middleware)
        sends this.

        Args:
            judges: The judge of each failed pair (a cascade's ``"cheap"`` or ``"strong"``), sent as ``judges``.

        Example:
            >>> result = MatchResult("x = 1", "applicability", [Judgment(rule_id="R1", error="HTTP 500")])
            >>> result.failure_event()
            {'query': 'x = 1', 'failed_rule_ids': ['R1'], 'errors': {'R1': 'HTTP 500'}}
        """
        failed = self.failed
        event: dict[str, Any] = {
            "query": self.query,
            "failed_rule_ids": [j.rule_id for j in failed],
            "errors": {j.rule_id: j.error for j in failed},
        }
        if judges is not None:
            event["judges"] = dict(judges)
        return event

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
