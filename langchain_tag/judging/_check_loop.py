"""Revise, then check: the judge reads a revision against the rules its executor was given, and sends it back.

The package's one check loop. After the executor's revision, the judge decides for each rule the executor was
given whether its condition still holds for the revision; while some still hold and rounds are left
(``check_rounds``), the revision goes back to the executor with just those rules. The graph's check node
(:func:`~langchain_tag.graph.build_tag_graph`, and the served app's graph, which runs the same node) and the
agent middleware's after-model check (:class:`~langchain_tag.agents.TagMiddleware`) all judge and route
through :class:`CheckLoop`.

A check is the judge's reading of the revision, not a fact: a small judge is near chance at it.
"""

from __future__ import annotations

from collections.abc import Sequence, Sized
from dataclasses import dataclass
from typing import Protocol

from langchain_core.callbacks import Callbacks

from langchain_tag.judging.results import MatchResult
from langchain_tag.ranges import CHECK_ROUNDS
from langchain_tag.rules import Rule

__all__ = ["CheckLoop", "RevisionJudge"]


class RevisionJudge(Protocol):
    """What judges a revision: a :class:`~langchain_tag.judging.judge.Judge` or a cascade's judge."""

    def judge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """Judge ``query`` against ``rules``."""
        ...

    async def ajudge(self, query: str, rules: Sequence[Rule], *, callbacks: Callbacks = None) -> MatchResult:
        """Async twin of :meth:`judge`."""
        ...


@dataclass(frozen=True)
class CheckLoop:
    """The check after each execute round, and whether the revision goes back to the executor.

    Attributes:
        rounds: Extra execute rounds the check may ask for (``check_rounds``): after the first round, at most
            this many more run while rules still hold; ``0`` asks for none.

    Raises:
        ValueError: When ``rounds`` is not a whole number >= 0 (:data:`CHECK_ROUNDS`).

    Example:
        >>> loop = CheckLoop(rounds=1)
        >>> loop.again(["R1"], rounds=1), loop.again(["R1"], rounds=2), loop.again([], rounds=1)
        (True, False, False)
    """

    rounds: int = 1

    def __post_init__(self) -> None:
        CHECK_ROUNDS.check(self.rounds)

    def check(
        self, judge: RevisionJudge, revision: str, rules: Sequence[Rule], *, callbacks: Callbacks = None
    ) -> MatchResult:
        """Judge ``revision`` against the rules given: the result's ``matched`` are the rules that still hold.

        With no rules, no call is made and nothing holds.
        """
        if not rules:
            return MatchResult(query=revision, predicate="")
        return judge.judge(revision, list(rules), callbacks=callbacks)

    async def acheck(
        self, judge: RevisionJudge, revision: str, rules: Sequence[Rule], *, callbacks: Callbacks = None
    ) -> MatchResult:
        """Async twin of :meth:`check`."""
        if not rules:
            return MatchResult(query=revision, predicate="")
        return await judge.ajudge(revision, list(rules), callbacks=callbacks)

    def again(self, holding: Sized, rounds: int) -> bool:
        """Whether the revision goes back to the executor: some rules still hold and rounds are left.

        Args:
            holding: What the last check found still holding.
            rounds: The execute rounds run so far (1 after the first).
        """
        return bool(len(holding)) and rounds <= self.rounds
