"""Chat completions sent straight through an OpenAI chat model's own client, when no callback would see the call.

Through LangChain's runnable interface a ``ChatOpenAI`` call costs about 2 ms of Python of its own (a callback
manager, run ids, config merging, result objects) around a request an OpenAI-compatible server may answer in less.
For a corpus of judgments that is most of the time. When nothing would observe a call (no tracer, no callback
handler but the package's own reply counters, no LLM cache, no rate limiter) and the call is a plain chat
completion, :class:`DirectChat` sends the payload ``ChatOpenAI`` itself would build, through the client it holds
(its base URL, key, headers, timeout and retries), turns faults into the same exceptions and reads the reply
with ``ChatOpenAI``'s own reader. The call runner falls back to the runnable whenever any of that does not hold.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager, Callbacks
from langchain_core.globals import get_llm_cache
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import RunnableBinding

from langchain_tag.calls.own_loop import job_async_client, may_remake

__all__ = ["DirectChat", "ReplyCounter", "reply_result"]

_PATH = "/chat/completions"


class ReplyCounter(BaseCallbackHandler):
    """A handler that only counts replies (a progress bar): a call only such handlers see may be sent directly.

    It is told of each reply with :meth:`on_llm_end`, whichever way the call went.
    """

    run_inline = True


def _openai_model_types() -> tuple[type, ...]:
    """The model classes sent directly: ``ChatOpenAI`` itself (Azure's client builds its paths its own way)."""
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        return ()
    return (ChatOpenAI,)


@dataclass(frozen=True)
class DirectChat:
    """One ``ChatOpenAI`` (with the options a ``bind`` gave it) called through its own client.

    Attributes:
        model: The chat model.
        options: The call options bound to it (``logprobs``, ``max_tokens``, ...).
    """

    model: Any
    options: dict[str, Any]

    @classmethod
    def of(cls, llm: Any) -> DirectChat | None:
        """The direct form of ``llm``: a ``ChatOpenAI`` or a plain ``bind`` of one; ``None`` for anything else.

        Subclasses (which may read replies their own way), ``with_retry``/``with_fallbacks`` runnables, bindings
        with a config, streaming models and models with a rate limiter or their own callbacks are not sent directly.
        """
        options: dict[str, Any] = {}
        if isinstance(llm, RunnableBinding):
            if llm.config or llm.config_factories or llm.custom_input_type or llm.custom_output_type:
                return None
            options, llm = dict(llm.kwargs), llm.bound
        if type(llm) not in _openai_model_types():
            return None
        if llm.streaming or llm.rate_limiter is not None or llm.callbacks is not None:
            return None
        if any(name in options for name in ("stop", "response_format", "tools", "stream", "callbacks")):
            return None
        if not _client_posts_chat_completions():
            return None
        return cls(llm, options)

    def counters(self, callbacks: Callbacks) -> list[ReplyCounter] | None:
        """The handlers a call would have when they are all :class:`ReplyCounter` s; ``None`` when any other would.

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
        if all(isinstance(h, ReplyCounter) for h in handlers):
            return [h for h in handlers if isinstance(h, ReplyCounter)]
        return None

    def payload(self, messages: Any) -> dict[str, Any] | None:
        """The request ``ChatOpenAI`` would send for ``messages``; ``None`` when it is not a chat completion."""
        payload: dict[str, Any] = self.model._get_request_payload(messages, **self.options)
        if payload.get("stream") or "response_format" in payload or self.model._use_responses_api(payload):
            return None
        return payload

    def send(self, messages: Any) -> AIMessage:
        """Send one chat completion and read its reply, as ``ChatOpenAI.invoke`` would."""
        body, options = self._request(messages)
        with _raised_as_chat_openai_raises():
            text = self.model.root_client.post(_PATH, body=body, options=options, cast_to=str)
        return self._reply(text)

    async def asend(self, messages: Any) -> AIMessage:
        """Async twin of :meth:`send`."""
        body, options = self._request(messages)
        with _raised_as_chat_openai_raises():
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
        (:func:`~langchain_tag.calls.own_loop.may_remake`): a client you gave is used only as you gave it.
        """
        return may_remake(self.model)

    def sendable(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` would be sent as a plain chat completion (checked on one request of a run)."""
        return self.payload(messages) is not None

    def _reply(self, text: str) -> AIMessage:
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text  # ChatOpenAI's reader names a body that is not JSON (an HTML error page, ...)
        result = self.model._create_chat_result(body if isinstance(body, dict) else str(body))
        generation = result.generations[0]
        if not isinstance(generation, ChatGeneration) or not isinstance(generation.message, AIMessage):
            raise ValueError(f"unexpected reply structure: {type(generation).__name__}")
        message = generation.message
        # As BaseChatModel does: the generation's info (finish reason, logprobs) joins the message's metadata.
        message.response_metadata = {**(generation.generation_info or {}), **message.response_metadata}
        return message


@functools.cache
def _client_posts_chat_completions() -> bool:
    """Whether the installed ``openai`` client makes request options as :meth:`DirectChat._request` needs."""
    try:
        from openai._base_client import make_request_options

        make_request_options(security={"bearer_auth": True})
    except (ImportError, TypeError):
        return False
    return True


def reply_result(reply: BaseMessage) -> LLMResult:
    """The ``on_llm_end`` argument a :class:`ReplyCounter` gets for a reply."""
    return LLMResult(generations=[[ChatGeneration(message=reply)]])


@contextmanager
def _raised_as_chat_openai_raises() -> Iterator[None]:
    """Faults raised as ``ChatOpenAI`` raises them (its context-overflow, auth, rate-limit, ... errors)."""
    import openai
    from langchain_openai.chat_models import base

    try:
        yield
    except openai.BadRequestError as exc:
        base._handle_openai_bad_request(exc)
        raise
    except openai.APIError as exc:
        base._handle_openai_api_error(exc)
        raise
