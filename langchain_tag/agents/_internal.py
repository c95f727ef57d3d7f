"""Callbacks for the judge's calls: internal to the middleware, as LangChain's own middlewares mark theirs."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware.internal_call_transformer import internal_call_metadata
from langchain_core.callbacks import AsyncCallbackManager, CallbackManager
from langchain_core.runnables.config import ensure_config
from langgraph.constants import TAG_NOSTREAM

__all__ = ["SOURCE", "ainternal_callbacks", "internal_callbacks", "internal_metadata"]

SOURCE = "tag_rules"
"""The ``lc_source`` metadata of the judge's calls."""


def internal_metadata() -> dict[str, Any]:
    """The metadata of every judge call: ``lc_source`` and LangChain's internal-call marker."""
    return {"lc_source": SOURCE, **internal_call_metadata()}


def internal_callbacks() -> CallbackManager:
    """The current run's callbacks, with every call under them tagged ``nostream`` and marked internal.

    ``nostream`` keeps the judge's tokens out of ``stream_mode="messages"``; the marker keeps them out of
    ``run.messages`` (LangChain's ``InternalCallTransformer``). The calls stay children of the model call's run,
    so a trace shows them.
    """
    callbacks = ensure_config().get("callbacks")
    return CallbackManager.configure(
        callbacks, inheritable_tags=[TAG_NOSTREAM], inheritable_metadata=internal_metadata()
    )


def ainternal_callbacks() -> AsyncCallbackManager:
    """Async twin of :func:`internal_callbacks`."""
    callbacks = ensure_config().get("callbacks")
    return AsyncCallbackManager.configure(
        callbacks, inheritable_tags=[TAG_NOSTREAM], inheritable_metadata=internal_metadata()
    )
