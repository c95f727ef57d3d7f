"""The optional check after the model: the judge reads the final answer against the rules the model was given.

What it finds is the judge's reading, with its score, and the request to revise says so and says how reliable such
readings have been measured to be: a small judge's "still holds" on a revision is often wrong (the benchmark's
check-loop page), so it is never put to the model, or to a person, as a fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import HumanMessage

from langchain_tag.agents._inputs import CHECK_MESSAGE_NAME
from langchain_tag.agents._state import CheckReading, RuleMatch
from langchain_tag.judging._check_loop import CheckLoop
from langchain_tag.judging.results import MatchResult
from langchain_tag.rules import Rule, rule_documents, rules_from_documents

__all__ = ["CHECK_LOOP", "DEFAULT_CHECK_NOTE", "check_rules", "reading", "revision_request"]

CHECK_LOOP = CheckLoop(rounds=1)
"""The middleware's check loop: the package's one (:mod:`langchain_tag.judging._check_loop`), one revision per input."""

DEFAULT_CHECK_NOTE = (
    "its reliability on these rules has not been measured; a small judge's readings of revised answers have "
    "been measured at about chance"
)
"""How reliable the check's readings are, as the request to revise says it, in no domain's terms: give your judge's
own measured figure (the benchmark's check-loop page measures one)."""


def check_rules(candidates: Sequence[Any], matches: Sequence[RuleMatch]) -> list[Rule]:
    """The rules of ``matches`` among the retriever's ``candidates`` (rule documents or rules), in match order."""
    by_id = {rule.rule_id: rule for rule in rules_from_documents(rule_documents(candidates))}
    return [by_id[m["rule_id"]] for m in matches if m["rule_id"] in by_id]


def reading(digest: str, result: MatchResult, *, revision_asked: bool, note: str) -> CheckReading:
    """The check's reading of an answer: the rules the judge reads as still holding, with its scores."""
    return CheckReading(
        input=digest,
        holding=[{"rule_id": j.rule_id, "score": j.score} for j in result.matched],
        revision_asked=revision_asked,
        note=note,
    )


def revision_request(holding: Sequence[dict[str, Any]], matches: Sequence[RuleMatch], note: str) -> HumanMessage:
    """The message asking the model, once, to revise its answer where the judge reads a rule as still holding.

    It names each rule by id and action with the judge's score, and says the reading may be wrong and how
    often such readings were right.
    """
    actions = {m["rule_id"]: m["action"] for m in matches}
    lines = []
    for found in holding:
        score = f" (judge's score {found['score']:.2f})" if found.get("score") is not None else ""
        lines.append(f"- {found['rule_id']}: {actions.get(found['rule_id'], '')}{score}")
    text = (
        "An automatic rule judge read your answer and reads the condition of these rules as still holding for it. "
        f"This is the judge's reading, not a certainty ({note}):\n" + "\n".join(lines) + "\n"
        "Where the judge is right, revise your answer so that it follows these rules; where your answer already "
        "follows a rule, keep that part as it is."
    )
    return HumanMessage(content=text, name=CHECK_MESSAGE_NAME)
