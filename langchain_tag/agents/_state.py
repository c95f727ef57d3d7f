"""What the middleware keeps in the agent's state: the matched rules, the failed judgments, the check's reading."""

from __future__ import annotations

from typing import Annotated, Any, Final

from langchain.agents.middleware.types import AgentState, OmitFromInput, PrivateStateAttr
from typing_extensions import NotRequired, TypedDict

__all__ = [
    "CHECK_KEY",
    "FAILURES_KEY",
    "JUDGED_KEY",
    "MATCHES_KEY",
    "CheckReading",
    "JudgeFailure",
    "RuleMatch",
    "TagAgentState",
]

MATCHES_KEY: Final = "tag_matches"
"""State key of the rules the model was told to follow for the current input (a list of :class:`RuleMatch`)."""
FAILURES_KEY: Final = "tag_failures"
"""State key of the judgments that failed for the current input (a list of :class:`JudgeFailure`)."""
CHECK_KEY: Final = "tag_check"
"""State key of the optional after-model check's last reading (a :class:`CheckReading`)."""
JUDGED_KEY: Final = "tag_judged"
"""State key of the digest of the input (and rule ids) the matches belong to; private to the middleware."""


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
