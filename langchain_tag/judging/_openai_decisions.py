"""``OpenAIDecisions`` requests sent as its ``invoke`` sends them, with the body read for answers given twice.

``langchain-openai`` reads a Decisions API body into a ``DecisionResponse`` whose answers are a dict by question
name: of two answers to one question it keeps the later, and the body is not kept. A judgment must not rest on an
answer the service itself contradicted (the batch import refuses two different replies to one request for the same
reason), so :class:`CheckedDecisions` sends a request as ``OpenAIDecisions.invoke`` does (one run for the caller's
callbacks and tracing, the same payload, client, errors and usage record), finds the questions the body answered
more than once, differently, and returns them beside the parsed response
(:class:`~langchain_tag.judging.decision_interfaces.DecisionReply`).

It wraps the ``openai`` extra: the decision judge imports it only when its model is an ``OpenAIDecisions``. It
leans on private hooks of ``langchain-openai`` and ``langchain-core`` (:data:`HOOKS`), each checked present and of
the shape used when a judge is built (:meth:`CheckedDecisions.of`). When any is missing or has changed, requests go
through ``invoke``, where a repeated answer cannot be seen, and one warning says which hook.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import openai
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_openai.chat_models import base as chat_base
from langchain_openai.decisions import OpenAIDecisions
from langchain_openai.decisions import base as decisions_base

from langchain_tag.calls._direct import raised_as_langchain_openai_raises, takes
from langchain_tag.judging.decision_interfaces import DecisionReply

__all__ = ["HOOKS", "CheckedDecisions", "conflicts_in_body"]

logger = logging.getLogger(__name__)

_PATH = "/decisions"
"""Posted with ``cast_to=httpx.Response``, the SDK returns the raw response: ``openai`` 3 accepts the ``httpx``
class beside its own ``httpx2`` one once ``httpx`` is loaded, as it is here."""

HOOKS = (
    "Runnable._call_with_config",
    "Runnable._acall_with_config",
    "OpenAIDecisions._traced_config",
    "OpenAIDecisions._payload",
    "OpenAIDecisions._client.post",
    "OpenAIDecisions._async_client.post",
    "OpenAIDecisions._record_usage",
    "langchain_openai.decisions.base._parse_response",
    "langchain_openai.chat_models.base._handle_openai_bad_request",
    "langchain_openai.chat_models.base._handle_openai_api_error",
)
"""The private hooks used, checked when a judge is built."""


def _missing_hook(model: OpenAIDecisions) -> str | None:
    """The first of :data:`HOOKS` that is missing or not of the shape used; ``None`` when all are usable."""
    post = {"body": {}, "cast_to": httpx.Response}
    error = Exception("probe")
    checks: tuple[tuple[str, Callable[[], bool]], ...] = (
        (HOOKS[0], lambda: takes(getattr(model, "_call_with_config", None), len, {}, None, run_type="llm")),
        (HOOKS[1], lambda: takes(getattr(model, "_acall_with_config", None), len, {}, None, run_type="llm")),
        (HOOKS[2], lambda: takes(getattr(model, "_traced_config", None), None)),
        (HOOKS[3], lambda: takes(getattr(model, "_payload", None), {})),
        (HOOKS[4], lambda: _client_posts(model, "_client", openai.OpenAI, post)),
        (HOOKS[5], lambda: _client_posts(model, "_async_client", openai.AsyncOpenAI, post)),
        (HOOKS[6], lambda: takes(getattr(model, "_record_usage", None), None)),
        (HOOKS[7], lambda: takes(getattr(decisions_base, "_parse_response", None), None)),
        (HOOKS[8], lambda: takes(getattr(chat_base, "_handle_openai_bad_request", None), error)),
        (HOOKS[9], lambda: takes(getattr(chat_base, "_handle_openai_api_error", None), error)),
    )
    return next((name for name, usable in checks if not usable()), None)


def _client_posts(model: OpenAIDecisions, name: str, client_type: type, post: dict[str, Any]) -> bool:
    """Whether the model makes its client (``name``) of ``client_type`` lazily, and that client's ``post`` fits.

    The class attribute is looked at, not the client: making it needs the API key in the form it is used in.
    """
    made = inspect.getattr_static(type(model), name, None)
    return callable(getattr(made, "func", None)) and takes(getattr(client_type, "post", None), None, _PATH, **post)


@dataclass(frozen=True)
class CheckedDecisions:
    """One ``OpenAIDecisions`` whose requests return a :class:`DecisionReply` (its ``invoke`` and ``ainvoke``).

    Attributes:
        model: The decision model.
    """

    model: OpenAIDecisions

    @classmethod
    def of(cls, model: Any) -> CheckedDecisions | None:
        """The checked form of ``model``: an ``OpenAIDecisions`` whose hooks are all usable; ``None`` otherwise."""
        if not isinstance(model, OpenAIDecisions):
            return None
        missing = _missing_hook(model)
        if missing is not None:
            logger.warning(
                "decision requests go through OpenAIDecisions.invoke, which keeps the last of two answers to one "
                "question: langchain-openai's %s is missing or has changed",
                missing,
            )
            return None
        return cls(model)

    def invoke(self, request: Any, config: RunnableConfig | None = None) -> DecisionReply:
        """Send one request as ``OpenAIDecisions.invoke`` does; the parsed response and the conflicting answers."""
        conflicts: dict[str, tuple[str, ...]] = {}

        def decide(decision_request: Any) -> Any:
            payload = self.model._payload(decision_request)
            with raised_as_langchain_openai_raises():
                response = self.model._client.post(_PATH, body=payload, cast_to=httpx.Response)
            conflicts.update(conflicts_in_body(response))
            return self.model._record_usage(decisions_base._parse_response(response))

        model: Runnable[Any, Any] = self.model
        found = model._call_with_config(decide, request, self.model._traced_config(config), run_type="llm")
        return DecisionReply(response=found, conflicts=conflicts)

    async def ainvoke(self, request: Any, config: RunnableConfig | None = None) -> DecisionReply:
        """Async twin of :meth:`invoke`."""
        conflicts: dict[str, tuple[str, ...]] = {}

        async def decide(decision_request: Any) -> Any:
            payload = self.model._payload(decision_request)
            with raised_as_langchain_openai_raises():
                response = await self.model._async_client.post(_PATH, body=payload, cast_to=httpx.Response)
            conflicts.update(conflicts_in_body(response))
            return self.model._record_usage(decisions_base._parse_response(response))

        model: Runnable[Any, Any] = self.model
        found = await model._acall_with_config(decide, request, self.model._traced_config(config), run_type="llm")
        return DecisionReply(response=found, conflicts=conflicts)


def conflicts_in_body(response: Any) -> dict[str, tuple[str, ...]]:
    """The questions a Decisions API body answered more than once, differently: each answer given, as text.

    ``response`` is the raw HTTP response (the ``openai`` SDK's ``httpx`` or ``httpx2`` one: its ``json()``).

    An answer repeated as it was is one answer. A body that is not such JSON gives none: the model's own parser
    then raises its error for it.

    >>> body = {"answers": [{"name": "R1", "type": "predicate", "probability": 0.9},
    ...                     {"name": "R2", "type": "refusal"},
    ...                     {"name": "R1", "type": "predicate", "probability": 0.1},
    ...                     {"name": "R2", "type": "refusal"}]}
    >>> conflicts_in_body(httpx.Response(200, json=body))
    {'R1': ('P(yes)=0.9', 'P(yes)=0.1')}
    """
    try:
        answers = response.json()["answers"]
    except (ValueError, KeyError, TypeError):
        return {}
    given: dict[str, list[Mapping[str, Any]]] = {}
    for answer in answers if isinstance(answers, list) else []:
        if isinstance(answer, Mapping) and isinstance(answer.get("name"), str):
            given.setdefault(answer["name"], []).append({k: v for k, v in answer.items() if k != "name"})
    return {
        name: tuple(_answer_text(a) for a in found)
        for name, found in given.items()
        if len(found) > 1 and len({json.dumps(a, sort_keys=True, default=str) for a in found}) > 1
    }


def _answer_text(answer: Mapping[str, Any]) -> str:
    """A predicate answer as its P(yes), any other as its type."""
    probability = answer.get("probability")
    if answer.get("type") == "predicate" and isinstance(probability, int | float):
        return f"P(yes)={probability:.6g}"
    return str(answer.get("type", "an answer of no type"))
