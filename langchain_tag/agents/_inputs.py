"""Which text of the conversation the judge reads: the latest human message, the latest tool result, or a function."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

__all__ = ["CHECK_MESSAGE_NAME", "InputSource", "judged_input", "langchains_own", "summarised"]

CHECK_MESSAGE_NAME = "tag_check"
"""The ``name`` of the human message the after-model check adds to ask for a revision; never judged as input."""

InputSource = Literal["human", "tool"] | Callable[[Mapping[str, Any]], "str | None"]
"""What the judge reads before a model call.

``"human"``: the latest human message. ``"tool"``: the latest tool result, or the latest human message when it is
newer (so the first call of a turn judges the user's request, and each later one the newest tool result). A
function: called with the agent's state; ``None`` or an empty string means no rules for this call. Messages
LangChain marks as its own (``lc_source``, as ``SummarizationMiddleware`` marks its summary) are never inputs.
"""


def langchains_own(message: BaseMessage) -> bool:
    """Whether LangChain marks ``message`` as its own (``lc_source``: a summary of the conversation, ...).

    Example:
        >>> langchains_own(HumanMessage("Here is a summary ...", additional_kwargs={"lc_source": "summarization"}))
        True
        >>> langchains_own(HumanMessage("Review this"))
        False
    """
    return bool(message.additional_kwargs.get("lc_source"))


def summarised(messages: Sequence[BaseMessage]) -> bool:
    """Whether the conversation holds a message LangChain wrote in place of others (a summary)."""
    return any(langchains_own(message) for message in messages)


def _latest(messages: Sequence[BaseMessage], kinds: tuple[type[BaseMessage], ...]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, kinds) and message.name != CHECK_MESSAGE_NAME and not langchains_own(message):
            return message.text
    return None


def judged_input(source: InputSource, messages: Sequence[BaseMessage], state: Mapping[str, Any]) -> str | None:
    """The text to judge for this model call, or ``None`` when there is none.

    Args:
        source: What to judge (:data:`InputSource`).
        messages: The messages the model is about to get (without the system message).
        state: The agent's state.

    Raises:
        ValueError: On an unknown source name.
    """
    if callable(source):
        text = source(state)
    elif source == "human":
        text = _latest(messages, (HumanMessage,))
    elif source == "tool":
        text = _latest(messages, (HumanMessage, ToolMessage))
    else:
        raise ValueError(f"unknown judge input {source!r}: use 'human', 'tool' or a function of the state")
    return text if text and text.strip() else None
