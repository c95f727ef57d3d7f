"""A person in the loop: what the review interrupt shows, and how a resume value becomes the executor's rules.

With review on, the graph stops after matching with a :class:`~langchain_tag.app._schemas.ReviewRequest`
(LangGraph's ``interrupt()``) and continues when resumed with ``Command(resume=decision)``. A decision is one of:

- ``True`` (or ``"approve"``): the matched rules as they are;
- a list of rule ids: exactly these rules, in this order;
- an object: ``{"rule_ids": [...]}`` (exactly these), or ``{"add": [...], "drop": [...]}`` (changes to the
  matched list), with an optional ``"reviewer"`` and ``"note"``.

Any rule id of the run's rules may be added, matched or not.

Example:
    >>> approved, record = apply_decision({"drop": ["R2"], "add": ["R9"], "reviewer": "ana"}, ["R1", "R2"],
    ...                                   known=["R1", "R2", "R9"], at="2026-01-01T00:00:00+00:00")
    >>> approved, record["added"], record["dropped"], record["reviewer"]
    (['R1', 'R9'], ['R9'], ['R2'], 'ana')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_tag.app._schemas import ReviewRecord, ReviewRequest, ReviewRule
from langchain_tag.errors import TagError

__all__ = ["REVIEW_KIND", "ReviewError", "apply_decision", "review_request"]

REVIEW_KIND = "tag_review"
"""The ``kind`` of the review interrupt's payload."""

RESUME_HELP = (
    'resume with true (approve), a list of rule ids, or {"rule_ids": [...]} / {"add": [...], "drop": [...]}, '
    'optionally with "reviewer" and "note"'
)


class ReviewError(TagError, ValueError):
    """A review's resume value is not a decision, or names a rule the run does not have."""


def review_request(text: str, matched: Sequence[ReviewRule], below: Sequence[ReviewRule]) -> ReviewRequest:
    """The payload of the review interrupt: each offered rule with its condition and source span."""
    return ReviewRequest(kind=REVIEW_KIND, input=text, matched=list(matched), below=list(below), resume=RESUME_HELP)


def _ids(value: Any, what: str) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise ReviewError(f"review: {what} must be a list of rule ids, got {value!r}")
    return list(dict.fromkeys(value))


def _text(decision: dict[str, Any], key: str) -> str:
    value = decision.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReviewError(f"review: {key!r} must be text, got {value!r}")
    return value.strip()


def _approved(decision: Any, proposed: list[str]) -> tuple[list[str], dict[str, Any]]:
    """The rule ids a decision gives the executor, and the decision as an object."""
    if decision is True or decision == "approve":
        return list(proposed), {}
    if isinstance(decision, list | tuple):
        return _ids(decision, "the resume list"), {}
    if not isinstance(decision, dict):
        raise ReviewError(f"review: cannot read the resume value {decision!r}; {RESUME_HELP}")
    unknown = sorted(set(decision) - {"rule_ids", "add", "drop", "reviewer", "note", "approve"})
    if unknown:
        raise ReviewError(f"review: unknown key(s) {', '.join(map(repr, unknown))} in the resume value; {RESUME_HELP}")
    if "rule_ids" in decision:
        if "add" in decision or "drop" in decision:
            raise ReviewError("review: give either 'rule_ids' (the whole list) or 'add'/'drop' (changes), not both")
        return _ids(decision["rule_ids"], "'rule_ids'"), decision
    drop = set(_ids(decision.get("drop", []), "'drop'"))
    add = _ids(decision.get("add", []), "'add'")
    kept = [rule_id for rule_id in proposed if rule_id not in drop]
    return kept + [rule_id for rule_id in add if rule_id not in kept], decision


def apply_decision(
    decision: Any, proposed: Sequence[str], *, known: Sequence[str], at: str
) -> tuple[list[str], ReviewRecord]:
    """The rule ids the executor gets after a review, and the record of who changed what.

    Args:
        decision: The resume value (see the module docstring).
        proposed: The matched rule ids, in order.
        known: Every rule id of the run: the only ids a reviewer may name.
        at: When the review was resumed.

    Returns:
        ``(approved rule ids in order, the review's record)``.

    Raises:
        ReviewError: On a value that is no decision, or an id not among ``known``.
    """
    proposed = list(proposed)
    approved, fields = _approved(decision, proposed)
    missing = [rule_id for rule_id in approved if rule_id not in set(known)]
    dropped_unknown = [rule_id for rule_id in fields.get("drop") or [] if rule_id not in set(known)]
    if missing or dropped_unknown:
        raise ReviewError(f"review: no rule {', '.join(map(repr, missing + dropped_unknown))} in this run's rules")
    record = ReviewRecord(
        reviewer=_text(fields, "reviewer") or "anonymous",
        proposed=proposed,
        approved=approved,
        added=[rule_id for rule_id in approved if rule_id not in proposed],
        dropped=[rule_id for rule_id in proposed if rule_id not in approved],
        note=_text(fields, "note"),
        at=at,
    )
    return approved, record
