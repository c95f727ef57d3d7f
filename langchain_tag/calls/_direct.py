"""Chat completions sent straight through a ``ChatOpenAI``'s own client, when no callback would see the call.

Through LangChain's runnable interface a ``ChatOpenAI`` call costs about 2 ms of Python of its own (a callback
manager, run ids, config merging, result objects) around a request an OpenAI-compatible server may answer in less.
For a corpus of judgments that is most of the time. When nothing would observe a call (no tracer, no callback
handler but the package's own reply counters, no LLM cache, no rate limiter) and the call is a plain chat
completion, :class:`DirectChat` sends the payload ``ChatOpenAI`` itself would build, through the client it holds
(its base URL, key, headers, timeout and retries), turns faults into the same exceptions and reads the body
with the package's one chat-completions reader (:func:`~langchain_tag.calls._replies.read_completion`, which Ray
and the batch import use too).

It wraps the ``openai`` extra: the call runner imports it only when a judge's model may be sent this way. It
leans on private hooks of ``langchain-openai`` and ``openai`` (:data:`HOOKS`). Each is checked, present and of
the shape used, when a judge is built (:meth:`DirectChat.of`); when any is missing or has changed, the judge sends
through the runnable, and one warning says which (:func:`warn_fallback`, the decision judge's fast path says it
alike). Nothing else in the package touches them.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import openai
from langchain_core.caches import BaseCache
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager, Callbacks
from langchain_core.globals import get_llm_cache
from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.runnables import RunnableBinding
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models import base

from langchain_tag.calls._own_loop import job_async_client, may_remake
from langchain_tag.calls._replies import read_completion
from langchain_tag.errors import ParseError

__all__ = ["HOOKS", "DirectChat", "raised_as_langchain_openai_raises", "takes", "warn_fallback"]

logger = logging.getLogger(__name__)

_PATH = "/chat/completions"

HOOKS = (
    "ChatOpenAI._get_request_payload",
    "ChatOpenAI._use_responses_api",
    "ChatOpenAI.root_client.post",
    "ChatOpenAI.root_async_client.post",
    "langchain_openai.chat_models.base._handle_openai_bad_request",
    "langchain_openai.chat_models.base._handle_openai_api_error",
    "openai._base_client.make_request_options",
)
"""The private hooks the direct path uses, checked when a judge is built."""


def warn_fallback(log: logging.Logger, requests: str, way: str, hook: str) -> None:
    """Say that ``requests`` take the slower or less careful ``way`` because a private ``hook`` changed.

    The one wording and level of both fast paths (this module's and the decision judge's,
    :mod:`langchain_tag.judging._openai_decisions`), logged by the caller's logger.
    """
    log.warning("%s go through %s: the private hook %s is missing or has changed", requests, way, hook)


def takes(function: Any, *args: Any, **kwargs: Any) -> bool:
    """Whether ``function`` exists and accepts these arguments (without calling it)."""
    if not callable(function):
        return False
    try:
        inspect.signature(function).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return False
    return True


def _missing_hook(model: ChatOpenAI) -> str | None:
    """The first of :data:`HOOKS` that is missing or not of the shape used; ``None`` when all are usable."""
    try:
        from openai._base_client import make_request_options
    except ImportError as exc:
        return f"openai._base_client.make_request_options ({exc})"
    error = Exception("probe")
    post = {"body": {}, "options": {}, "cast_to": str}
    request = {"extra_headers": None, "extra_query": None, "extra_body": None, "security": {"bearer_auth": True}}
    checks: tuple[tuple[str, Callable[[], bool]], ...] = (
        (HOOKS[0], lambda: takes(getattr(model, "_get_request_payload", None), [], stop=None, logprobs=True)),
        (HOOKS[1], lambda: takes(getattr(model, "_use_responses_api", None), {})),
        (HOOKS[2], lambda: takes(getattr(model.root_client, "post", None), _PATH, **post)),
        (HOOKS[3], lambda: takes(getattr(model.root_async_client, "post", None), _PATH, **post)),
        (HOOKS[4], lambda: takes(getattr(base, "_handle_openai_bad_request", None), error)),
        (HOOKS[5], lambda: takes(getattr(base, "_handle_openai_api_error", None), error)),
        (HOOKS[6], lambda: takes(make_request_options, **request)),
    )
    return next((name for name, usable in checks if not usable()), None)


@dataclass(frozen=True)
class DirectChat:
    """One ``ChatOpenAI`` (with the options a ``bind`` gave it) called through its own client.

    Attributes:
        model: The chat model.
        options: The call options bound to it (``logprobs``, ``max_tokens``, ...).
    """

    model: ChatOpenAI
    options: dict[str, Any]

    @classmethod
    def of(cls, llm: Any) -> DirectChat | None:
        """The direct form of ``llm``: a ``ChatOpenAI`` or a plain ``bind`` of one; ``None`` for anything else.

        Subclasses (which may read replies their own way), ``with_retry``/``with_fallbacks`` runnables, bindings
        with a config, streaming models, models with a rate limiter or their own callbacks, and a
        ``langchain-openai`` whose private hooks (:data:`HOOKS`) are missing or changed are not sent directly.
        """
        options: dict[str, Any] = {}
        if isinstance(llm, RunnableBinding):
            if llm.config or llm.config_factories or llm.custom_input_type or llm.custom_output_type:
                return None
            options, llm = dict(llm.kwargs), llm.bound
        if type(llm) is not ChatOpenAI:
            return None
        if llm.streaming or llm.rate_limiter is not None or llm.callbacks is not None:
            return None
        if options.get("stream") or any(name in options for name in ("stop", "response_format", "tools", "callbacks")):
            return None
        missing = _missing_hook(llm)
        if missing is not None:
            warn_fallback(logger, "judge calls", "the runnable, with LangChain's per-call work around each", missing)
            return None
        return cls(llm, options)

    def counters(self, callbacks: Callbacks, counter_type: type[BaseCallbackHandler]) -> list[Any] | None:
        """The handlers a call would have when they are all ``counter_type``; ``None`` when any other would.

        The handlers are found as LangChain finds them (the given callbacks, tracing and ``set_debug``/
        ``set_verbose`` handlers, configure hooks such as ``get_openai_callback``), and a cache the model
        would read (its own or the global LLM cache) also rules the direct call out.
        """
        if isinstance(self.model.cache, BaseCache) or (self.model.cache is not False and get_llm_cache() is not None):
            return None
        manager = CallbackManager.configure(
            callbacks, None, self.model.verbose, None, self.model.tags, None, self.model.metadata
        )
        handlers = list(manager.handlers)
        return handlers if all(isinstance(h, counter_type) for h in handlers) else None

    def payload(self, messages: Any) -> dict[str, Any] | None:
        """The request ``ChatOpenAI`` would send for ``messages``; ``None`` when it is not a chat completion."""
        payload: dict[str, Any] = self.model._get_request_payload(messages, **self.options)
        if payload.get("stream") or "response_format" in payload or self.model._use_responses_api(payload):
            return None
        return payload

    def send(self, messages: Any) -> AIMessage:
        """Send one chat completion and read its reply, as ``ChatOpenAI.invoke`` would."""
        body, options = self._request(messages)
        with raised_as_langchain_openai_raises():
            text = self.model.root_client.post(_PATH, body=body, options=options, cast_to=str)
        return self._reply(text)

    async def asend(self, messages: Any) -> AIMessage:
        """Async twin of :meth:`send`."""
        body, options = self._request(messages)
        with raised_as_langchain_openai_raises():
            client = job_async_client(self.model) or self.model.root_async_client
            text = await client.post(_PATH, body=body, options=options, cast_to=str)
        return self._reply(text)

    def _request(self, messages: Any) -> tuple[dict[str, Any], Any]:
        """The body and the client's request options ``chat.completions.create`` would make of the payload.

        Posted through the client's own ``post`` (its auth, base URL, retries, timeout), without ``create``'s
        typed transform of the body, which costs more than the rest of a call: the payload is plain JSON already.
        """
        from openai._base_client import make_request_options

        payload = self.payload(messages)
        if payload is None:  # the runner checks this first (sendable); a guard, not a path
            raise ValueError("this request is not a plain chat completion; send it through the model")
        options = make_request_options(
            extra_headers=payload.pop("extra_headers", None),
            extra_query=payload.pop("extra_query", None),
            extra_body=payload.pop("extra_body", None),
            security={"bearer_auth": True},
        )
        return payload, options

    @property
    def may_run_on_own_loop(self) -> bool:
        """Whether a sync job may send these calls from an event loop of its own, with a private HTTP client.

        Only where the job can make that client as the model's was made
        (:func:`~langchain_tag.calls._own_loop.may_remake`): a client you gave is used only as you gave it.
        """
        return may_remake(self.model)

    def sendable(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` would be sent as a plain chat completion (checked on one request of a run)."""
        return self.payload(messages) is not None

    def _reply(self, text: str) -> AIMessage:
        """The reply as ``ChatOpenAI`` gives it, read with the package's one body reader."""
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        try:
            completion = read_completion(body)
        except ParseError as exc:  # as ChatOpenAI's reader raises for a body that is not a completion
            raise ValueError(str(exc)) from None
        metadata: dict[str, Any] = {"model_name": completion.model}
        if completion.logprobs is not None:
            metadata["logprobs"] = dict(completion.logprobs)
        usage: UsageMetadata = {
            "input_tokens": completion.prompt_tokens,
            "output_tokens": completion.completion_tokens,
            "total_tokens": completion.prompt_tokens + completion.completion_tokens,
            "input_token_details": {},
            "output_token_details": {},
        }
        return AIMessage(content=completion.text, response_metadata=metadata, usage_metadata=usage)


@contextmanager
def raised_as_langchain_openai_raises() -> Iterator[None]:
    """Faults raised as ``langchain-openai`` raises them (its context-overflow, auth, rate-limit, ... errors).

    ``ChatOpenAI`` and ``OpenAIDecisions`` turn the ``openai`` client's errors into these the same way.
    """
    try:
        yield
    except openai.BadRequestError as exc:
        base._handle_openai_bad_request(exc)
        raise
    except openai.APIError as exc:
        base._handle_openai_api_error(exc)
        raise
