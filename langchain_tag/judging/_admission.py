"""What may be stored as a verdict, and under which key: the one decision every path that stores one makes.

A reply names the model that gave it: a chat completion's ``model`` (``response_metadata["model_name"]`` in
process), a decision response's ``model``. One from another model than the one asked for (a provider's dated
snapshot of it is the same model: :func:`same_model`) is never stored as the asked model's verdict: it is kept
under a key of its own (:func:`admitted_key`) and warned of once per judge and model. The chat judge in process,
the Ray engine, the batch import and the decision judge all ask :func:`admitted_key`.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from langchain_tag.calls._identity import chat_model_of, describe_model
from langchain_tag.judging.verdict_cache import verdict_key

__all__ = ["admitted_key", "asked_model", "foreign_reply", "same_model"]

logger = logging.getLogger(__name__)

_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})")
"""The date a provider appends to a model's name for one snapshot of it (``gpt-4o-mini-2024-07-18``)."""


def same_model(asked: str, answered: str) -> bool:
    """Whether the model named in a reply is the one asked for: the same name, or a dated snapshot of it.

    >>> same_model("gpt-4o-mini", "gpt-4o-mini-2024-07-18"), same_model("gpt-4o-mini", "gpt-4o")
    (True, False)
    """
    asked, answered = asked.lower(), answered.lower()
    return answered == asked or (answered.startswith(asked) and bool(_SNAPSHOT.fullmatch(answered[len(asked) :])))


def asked_model(llm: Any) -> str | None:
    """The model name a judge model asks for: a chat model's ``model_name``, a decision model's ``model``.

    ``None`` when it names none (a fake, a runnable of one's own): its replies are then stored as they come.
    """
    model = chat_model_of(llm)
    for name in ("model_name", "model"):
        found = getattr(model, name, None)
        if isinstance(found, str) and found:
            return found
    return None


def foreign_reply(asked: str | None, answered: Any) -> str | None:
    """Why a reply may not be stored as the asked model's verdict: another model answered; ``None`` when it may.

    A reply that names no model, or a request that asked for none, is stored as it comes.

    >>> foreign_reply("gpt-4o-mini", "gpt-4o")
    "answered by 'gpt-4o', not 'gpt-4o-mini': kept apart, not stored as its verdict"
    >>> foreign_reply("gpt-4o-mini", "gpt-4o-mini-2024-07-18") is None
    True
    """
    if asked is None or not isinstance(answered, str) or not answered or same_model(asked, answered):
        return None
    return f"answered by {answered!r}, not {asked!r}: kept apart, not stored as its verdict"


def admitted_key(judge: Any, key: str, answered: Any, *, asked: str | None) -> str:
    """The key a reply to the request keyed ``key`` is stored under: ``key``, or, when another model answered, its own.

    A reply from another model than ``asked`` is warned of once per judge and answering model, and kept under a
    key made of that model and ``key``, so it is never served as the asked model's verdict.

    Args:
        judge: The judge (its model, for the warning, and its state, that remembers what was warned of).
        key: The request's verdict-cache key.
        answered: The model the reply names (anything but a non-empty string: it names none).
        asked: The model the request asked for (``None``: none named; the reply is stored under ``key``).
    """
    if foreign_reply(asked, answered) is None:
        return key
    warned = judge.state.warned
    if f"answered_by:{answered}" not in warned:
        warned.add(f"answered_by:{answered}")
        logger.warning(
            "%s was asked for model %r but %r answered: its verdicts are kept as %r's, not served as %r's",
            describe_model(judge.llm), asked, answered, answered, asked,
        )  # fmt: skip
    return verdict_key(model=str(answered), prompt_version="answered-by", verdict_format="", query=key, rule_text="")
