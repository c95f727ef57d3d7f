"""What a person sees of the served graph: its input, its output, and what a review shows and records.

The graph's state holds more (the run's settings and rules, the check's working lists); LangGraph Studio and
the API show only these schemas. Every value is plain JSON, so a thread's state reads the same through the
API, an in-memory checkpointer and a SQLite one.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, with_config
from typing_extensions import NotRequired, Required, TypedDict

from langchain_tag.rules import Rule

__all__ = [
    "ReviewRecord",
    "ReviewRequest",
    "ReviewRule",
    "RuleInput",
    "RuleRef",
    "RuleSource",
    "TagInput",
    "TagOutput",
    "review_rule",
    "rule_ref",
]


class RuleRef(TypedDict):
    """A rule as the output and a review show it."""

    rule_id: Annotated[str, Field(description="The rule's id.")]
    rule_name: Annotated[str, Field(description="Its short name.")]
    action: Annotated[str, Field(description="What the executor is told to do when the rule applies.")]
    score: Annotated[
        float | None,
        Field(description="The judge's calibrated score (the threshold applies to it); null when not judged."),
    ]


class RuleSource(TypedDict):
    """Where a rule came from: the verbatim span of its source document."""

    text: Annotated[str, Field(description="The verbatim span of the source document behind the rule.")]
    document_id: Annotated[str | None, Field(description="The source document's id, if known.")]
    start: Annotated[int | None, Field(description="The span's start offset in the document, if verified.")]
    end: Annotated[int | None, Field(description="The span's end offset (exclusive), if verified.")]


class ReviewRule(RuleRef):
    """A rule as a review offers it: what it does, when it applies, and where it came from."""

    condition: Annotated[str, Field(description="When the rule applies: the state of the input the judge checks.")]
    source: Annotated[RuleSource, Field(description="The span of the source document the rule was drawn from.")]


@with_config(ConfigDict(extra="allow"))
class RuleInput(TypedDict, total=False):
    """A rule given with a run's input (as ``langchain-tag extract`` writes one; other fields are kept)."""

    rule_id: Required[Annotated[str, Field(min_length=1, description="Unique id within the rules, e.g. R-001.")]]
    rule_name: Required[Annotated[str, Field(min_length=1, description="Three to eight distinctive words.")]]
    condition: Required[
        Annotated[str, Field(min_length=1, description="When the rule applies: a state of the input, checkable.")]
    ]
    action: Required[Annotated[str, Field(min_length=1, description="What the executor does when the rule applies.")]]
    source_text: Annotated[str, Field(description="The verbatim span of the source document behind the rule.")]
    category_tags: Annotated[list[str], Field(description="One to three short tags grouping the rule.")]
    document_id: Annotated[str | None, Field(description="The source document's id.")]
    source_start: Annotated[int | None, Field(description="Start offset of source_text in the document.")]
    source_end: Annotated[int | None, Field(description="End offset (exclusive) of source_text in the document.")]


class ReviewRecord(TypedDict):
    """Who reviewed the matched rules and what they changed."""

    reviewer: Annotated[str, Field(description="Who reviewed (as the resume value named them; 'anonymous' if not).")]
    proposed: Annotated[list[str], Field(description="The rule ids the matching proposed.")]
    approved: Annotated[list[str], Field(description="The rule ids the executor was given, in order.")]
    added: Annotated[list[str], Field(description="Rule ids the reviewer added.")]
    dropped: Annotated[list[str], Field(description="Rule ids the reviewer dropped.")]
    note: Annotated[str, Field(description="The reviewer's note, if any.")]
    at: Annotated[str, Field(description="When the review was resumed (UTC, ISO 8601).")]


class ReviewRequest(TypedDict):
    """The interrupt's payload: what a reviewer sees before the executor acts."""

    kind: Annotated[str, Field(description="Always 'tag_review'.")]
    input: Annotated[str, Field(description="The task input.")]
    matched: Annotated[list[ReviewRule], Field(description="The rules the judge matched, highest score first.")]
    below: Annotated[
        list[ReviewRule],
        Field(description="The closest rules below the line (not matched), highest score first."),
    ]
    resume: Annotated[str, Field(description="How to resume.")]
    error: NotRequired[Annotated[str, Field(description="Why the last resume value was not taken, if it was not.")]]


class TagInput(TypedDict, total=False):
    """What a run of the TAG graph takes."""

    input: Required[Annotated[str, Field(description="The task input: the code or text the rules apply to.")]]
    rules: NotRequired[
        Annotated[
            list[RuleInput] | None,
            Field(description="Rules for this run, instead of the context's rules_file or rule_set."),
        ]
    ]


class TagOutput(TypedDict, total=False):
    """What a run of the TAG graph returns."""

    output: Annotated[str, Field(description="The executor's output: the revision of its last round.")]
    matched: Annotated[
        list[RuleRef],
        Field(description="The rules the executor was given (after review, if any), with their scores."),
    ]
    findings: Annotated[
        list[RuleRef],
        Field(description="The check's findings: given rules whose condition still holds for the output."),
    ]
    rounds: Annotated[int, Field(description="Execute rounds run.")]
    mode: Annotated[str, Field(description="The retrieval mode of the run.")]
    review: Annotated[ReviewRecord | None, Field(description="The review, when one was asked for.")]


def rule_ref(rule: Rule, score: float | None) -> RuleRef:
    """The :class:`RuleRef` of ``rule`` with its score."""
    return RuleRef(rule_id=rule.rule_id, rule_name=rule.rule_name, action=rule.action, score=score)


def review_rule(rule: Rule, score: float | None) -> ReviewRule:
    """The :class:`ReviewRule` of ``rule`` with its score: its reference, condition and source span."""
    source = RuleSource(
        text=rule.source_text, document_id=rule.document_id, start=rule.source_start, end=rule.source_end
    )
    return ReviewRule(**rule_ref(rule, score), condition=rule.condition, source=source)
