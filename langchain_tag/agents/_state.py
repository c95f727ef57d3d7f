"""What the middleware keeps in the agent's state: the matched rules, the failed judgments, the check's reading."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Final, cast

from langchain.agents.middleware.types import AgentState, OmitFromInput, PrivateStateAttr
from typing_extensions import NotRequired, TypedDict

__all__ = [
    "ASKED_KEY",
    "CHECK_KEY",
    "FAILURES_KEY",
    "JUDGED_KEY",
    "MATCHES_KEY",
    "CheckReading",
    "JudgeFailure",
    "RuleMatch",
    "StateKeys",
    "TagAgentState",
    "state_schema",
]

MATCHES_KEY: Final = "tag_matches"
"""State key of the rules the model was told to follow for the current input (a list of :class:`RuleMatch`)."""
FAILURES_KEY: Final = "tag_failures"
"""State key of the judgments that failed for the current input (a list of :class:`JudgeFailure`)."""
CHECK_KEY: Final = "tag_check"
"""State key of the optional after-model check's last reading (a :class:`CheckReading`)."""
JUDGED_KEY: Final = "tag_judged"
"""State key of the digest of the input (and rule ids) the matches belong to; private to the middleware."""
ASKED_KEY: Final = "tag_asked"
"""State key of how many model calls judged the current input (a failed judgment is asked again once); private."""


class RuleMatch(TypedDict):
    """One rule the agent's model was given.

    Attributes:
        rule_id: The rule's id.
        score: The judge's calibrated score for the input (``None`` when the judge gave no logprobs).
        action: What the model was told to do.
    """

    rule_id: str
    score: float | None
    action: str


class JudgeFailure(TypedDict):
    """A judgment that failed and was counted as NO (with ``strict=False``)."""

    rule_id: str
    error: str


class CheckReading(TypedDict):
    """What the judge read in the model's final answer (the optional after-model check).

    Attributes:
        input: The digest of the input whose matched rules were checked.
        holding: The matched rules whose condition the judge reads as still holding for the answer, with its score.
        revision_asked: Whether a revision was asked for (once per input).
        note: How reliable such a reading has been, as the request to revise said it.
    """

    input: str
    holding: list[dict[str, Any]]
    revision_asked: bool
    note: str


class TagAgentState(AgentState[Any]):
    """The agent state with the middleware's keys.

    ``tag_matches`` and ``tag_failures`` (and ``tag_check`` when the check is on) are in the agent's output; the
    digest of the judged input is kept private.
    """

    tag_matches: NotRequired[Annotated[list[RuleMatch], OmitFromInput]]
    tag_failures: NotRequired[Annotated[list[JudgeFailure], OmitFromInput]]
    tag_check: NotRequired[Annotated[CheckReading, OmitFromInput]]
    tag_judged: NotRequired[Annotated[str, PrivateStateAttr]]
    tag_asked: NotRequired[Annotated[int, PrivateStateAttr]]


@dataclass(frozen=True)
class StateKeys:
    """The state keys of one middleware: ``<prefix>_matches``, ``<prefix>_failures``, ... (prefix ``tag``: as named).

    Several middlewares in one agent each keep their state under their own prefix.

    Example:
        >>> StateKeys.of("tag_security").matches
        'tag_security_matches'
        >>> StateKeys.of("tag") == StateKeys()
        True
    """

    matches: str = MATCHES_KEY
    failures: str = FAILURES_KEY
    check: str = CHECK_KEY
    judged: str = JUDGED_KEY
    asked: str = ASKED_KEY

    @classmethod
    def of(cls, prefix: str) -> StateKeys:
        """The keys under ``prefix``."""
        return cls(*(f"{prefix}_{part}" for part in ("matches", "failures", "check", "judged", "asked")))


def state_schema(keys: StateKeys) -> type[AgentState[Any]]:
    """The agent state schema with ``keys`` (:class:`TagAgentState` for the default keys)."""
    if keys == StateKeys():
        return TagAgentState
    fields = {
        keys.matches: NotRequired[Annotated[list[RuleMatch], OmitFromInput]],
        keys.failures: NotRequired[Annotated[list[JudgeFailure], OmitFromInput]],
        keys.check: NotRequired[Annotated[CheckReading, OmitFromInput]],
        keys.judged: NotRequired[Annotated[str, PrivateStateAttr]],
        keys.asked: NotRequired[Annotated[int, PrivateStateAttr]],
    }
    name = "".join(part.capitalize() for part in keys.matches.removesuffix("_matches").split("_")) + "AgentState"
    return cast("type[AgentState[Any]]", TypedDict(name, fields))  # type: ignore[operator]
