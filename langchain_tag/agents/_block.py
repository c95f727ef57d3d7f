"""The block of matched rules the middleware adds to the model's system message."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import SystemMessage

from langchain_tag.agents._state import RuleMatch

__all__ = ["DEFAULT_HEADING", "rules_block", "with_block"]

DEFAULT_HEADING = "Rules whose condition holds for this request (follow each one):"
"""The first line of the block; the rules follow, one a line, as ``- <id>: <action>``."""


def rules_block(matches: Sequence[RuleMatch], heading: str = DEFAULT_HEADING) -> str:
    r"""The block for ``matches``: the heading, then each rule's id and action (never its condition).

    Example:
        >>> rules_block([{"rule_id": "R1", "score": 0.9, "action": "use None as the default"}])
        'Rules whose condition holds for this request (follow each one):\n- R1: use None as the default'
    """
    return "\n".join([heading, *(f"- {m['rule_id']}: {m['action']}" for m in matches)])


def with_block(system: SystemMessage | None, block: str) -> SystemMessage:
    r"""The system message with ``block`` added at its end, the rest of it as it was.

    A string content gets the block after a blank line; a list of content blocks gets one more text block; no
    system message becomes one holding the block alone.

    Example:
        >>> with_block(SystemMessage("You review code."), "Rules: ...").content
        'You review code.\n\nRules: ...'
    """
    if system is None:
        return SystemMessage(content=block)
    if isinstance(system.content, str):
        content: str | list[str | dict[str, object]] = f"{system.content}\n\n{block}" if system.content else block
    else:
        content = [*system.content, {"type": "text", "text": block}]
    return system.model_copy(update={"content": content})
