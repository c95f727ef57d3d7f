"""``OpenAIDecisions`` requests sent through its own ``invoke``, with the body read for answers given twice.

``langchain-openai`` reads a Decisions API body into a ``DecisionResponse`` whose answers are a dict by question
name: of two answers to one question it keeps the later, and the body is not kept. A judgment must not rest on an
answer the service itself contradicted (the batch import refuses two different replies to one request for the same
reason), so :class:`CheckedDecisions` sends each request with ``OpenAIDecisions.invoke`` itself (its run for the
caller's callbacks and tracing, payload, errors and usage record), on a copy of the model whose client keeps the
raw response it returns, finds the questions the body answered more than once, differently, and returns them
beside the parsed response (:class:`~langchain_tag.judging.decision_interfaces.DecisionReply`).

It wraps the ``openai`` extra: the decision judge imports it only when its model is an ``OpenAIDecisions``. It
leans on two private hooks of ``langchain-openai`` (:data:`HOOKS`): the model makes its clients lazily, as
``_client`` and ``_async_client``, and ``invoke`` posts through their ``post``. They are checked present and of
the shape used when a judge is built (:meth:`CheckedDecisions.of`); when either is missing or has changed,
requests go through ``invoke`` as it is, where a repeated answer cannot be seen, and one warning says which
(:func:`~langchain_tag.calls._direct.warn_fallback`, as the chat judge's direct path says it). A request whose
``invoke`` posted some other way is warned of alike, once.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
from langchain_core.runnables import RunnableConfig
from langchain_openai.decisions import OpenAIDecisions

from langchain_tag.calls._direct import takes, warn_fallback
from langchain_tag.judging.decision_interfaces import DecisionReply

__all__ = ["HOOKS", "CheckedDecisions", "conflicts_in_body"]

logger = logging.getLogger(__name__)

_PATH = "/decisions"
"""Posted with ``cast_to=httpx.Response``, the SDK returns the raw response: ``openai`` 3 accepts the ``httpx``
class beside its own ``httpx2`` one once ``httpx`` is loaded, as it is here."""

HOOKS = (
    "OpenAIDecisions._client.post",
    "OpenAIDecisions._async_client.post",
)
"""The private hooks used, checked when a judge is built."""

_FALLBACK = (
    "decision requests",
    "OpenAIDecisions.invoke as it is, which keeps the last of two answers to one question",
)
"""What falls back, and the way it then goes (:func:`~langchain_tag.calls._direct.warn_fallback`)."""


def _missing_hook(model: OpenAIDecisions) -> str | None:
    """The first of :data:`HOOKS` that is missing or not of the shape used; ``None`` when all are usable."""
    post = {"body": {}, "cast_to": httpx.Response}
    if not _client_posts(model, "_client", openai.OpenAI, post):
        return HOOKS[0]
    if not _client_posts(model, "_async_client", openai.AsyncOpenAI, post):
        return HOOKS[1]
    return None


def _client_posts(model: OpenAIDecisions, name: str, client_type: type, post: dict[str, Any]) -> bool:
    """Whether the model makes its client (``name``) of ``client_type`` lazily, and that client's ``post`` fits.

    The class attribute is looked at, not the client: making it needs the API key in the form it is used in.
    Made lazily (a ``cached_property``), a copy of the model can be given a client of its own.
    """
    made = inspect.getattr_static(type(model), name, None)
    return callable(getattr(made, "func", None)) and takes(getattr(client_type, "post", None), None, _PATH, **post)


class _Kept:
    """The model's client, but that its ``post`` keeps each response it returns (in :attr:`responses`)."""

    def __init__(self, model: OpenAIDecisions, name: str) -> None:
        self._model = model
        self._name = name
        self.responses: list[Any] = []

    def post(self, *args: Any, **kwargs: Any) -> Any:
        """The client's ``post``, its response kept."""
        response = getattr(self._model, self._name).post(*args, **kwargs)
        self.responses.append(response)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(getattr(self._model, self._name), name)


class _AsyncKept(_Kept):
    """:class:`_Kept` for the async client."""

    async def post(self, *args: Any, **kwargs: Any) -> Any:
        """The client's ``post``, its response kept."""
        response = await getattr(self._model, self._name).post(*args, **kwargs)
        self.responses.append(response)
        return response


@dataclass(frozen=True)
class CheckedDecisions:
    """One ``OpenAIDecisions`` whose requests return a :class:`DecisionReply` (its ``invoke`` and ``ainvoke``).

    Attributes:
        model: The decision model.
    """

    model: OpenAIDecisions
    _unseen: list[bool] = field(default_factory=list, compare=False, repr=False)
    """Whether a request posted some other way was warned of (once)."""

    @classmethod
    def of(cls, model: Any) -> CheckedDecisions | None:
        """The checked form of ``model``: an ``OpenAIDecisions`` whose hooks are all usable; ``None`` otherwise."""
        if not isinstance(model, OpenAIDecisions):
            return None
        missing = _missing_hook(model)
        if missing is not None:
            warn_fallback(logger, *_FALLBACK, missing)
            return None
        return cls(model)

    def invoke(self, request: Any, config: RunnableConfig | None = None) -> DecisionReply:
        """Send one request with ``OpenAIDecisions.invoke``; the parsed response and the conflicting answers."""
        kept = _Kept(self.model, "_client")
        return self._reply(self._watched("_client", kept).invoke(request, config), kept)

    async def ainvoke(self, request: Any, config: RunnableConfig | None = None) -> DecisionReply:
        """Async twin of :meth:`invoke`."""
        kept = _AsyncKept(self.model, "_async_client")
        return self._reply(await self._watched("_async_client", kept).ainvoke(request, config), kept)

    def _watched(self, name: str, kept: _Kept) -> OpenAIDecisions:
        """A copy of the model whose client ``name`` is ``kept`` (the model's own client, made once, below it)."""
        copy = self.model.model_copy()
        copy.__dict__[name] = kept
        return copy

    def _reply(self, response: Any, kept: _Kept) -> DecisionReply:
        if not kept.responses and not self._unseen:
            self._unseen.append(True)
            warn_fallback(logger, *_FALLBACK, HOOKS[isinstance(kept, _AsyncKept)])
        conflicts: dict[str, tuple[str, ...]] = {}
        for raw in kept.responses:
            conflicts.update(conflicts_in_body(raw))
        return DecisionReply(response=response, conflicts=conflicts)


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
