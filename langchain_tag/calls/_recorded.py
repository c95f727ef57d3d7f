"""A judge model whose replies were got elsewhere and recorded in the verdict cache.

A Ray Data job and an imported provider batch both record their replies in
the judge's verdict cache, then read each input's result with
:meth:`ApplicabilityRetriever.match
<langchain_tag.retrievers.ApplicabilityRetriever.match>`, which finds every
verdict there. :class:`RecordedReplies` is the judge model that retriever is
given: it carries the identity of the model that answered (so the cache keys
match) and never calls one. A pair whose reply is not in the cache reaches
it, and it raises: the error recorded for that prompt if there is one (a
request that failed in the job), else its ``missing`` message. The judge
reports the pair as a failed judgment, counted as NO.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field
from typing_extensions import override

from langchain_tag.errors import TagError

__all__ = ["NoRecordedReplyError", "RecordedReplies", "prompt_key"]


class NoRecordedReplyError(TagError, RuntimeError):
    """A pair reached a :class:`RecordedReplies` model: its reply is not in the verdict cache."""


class RecordedReplies(BaseChatModel):
    """Stands in for a judge model whose replies are all in the verdict cache: it never calls a model.

    Attributes:
        model_name: The model that answered (its identity in cache keys).
        base_url: Where it was served, if known (redacted).
        errors: :func:`prompt_key` of a prompt -> the error its request ended with.
        replies: :func:`prompt_key` of a prompt -> the reply it got that is not a verdict (its text and
            first-token logprobs): given back, so the judge fails to read it as it did the first time.
        missing: The error for a prompt with no recorded error (by default, :meth:`missing_message`).
        described_as: How errors name the model that answered (``describe_model`` of it), so a
            replayed failure reads as the original did.
        max_retries: The retries the answering model's own client made on a transport fault (its
            requests are counted as that client counts them).
    """

    error_type: ClassVar[type[Exception]] = NoRecordedReplyError
    """The exception raised; subclasses name their source's error."""

    model_name: str
    base_url: str | None = None
    errors: dict[str, str] = Field(default_factory=dict)
    replies: dict[str, tuple[str, dict[str, Any] | None]] = Field(default_factory=dict)
    missing: str | None = None
    described_as: str | None = None
    max_retries: int = 0

    @property
    def _llm_type(self) -> str:
        return "langchain-tag-recorded-replies"

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        key = prompt_key(messages)
        if key in self.replies:
            text, logprobs = self.replies[key]
            metadata = {"logprobs": logprobs} if logprobs is not None else {}
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text, response_metadata=metadata))])
        raise self.error_type(self.errors.get(key) or self.missing or self.missing_message())

    def missing_message(self) -> str:
        """The default error for a prompt with no reply and no recorded error."""
        return "no reply was recorded for this pair"


def prompt_key(messages: Sequence[Any]) -> str:
    """One string for a prompt's messages (roles and text), from LangChain messages or request dicts."""
    parts = []
    for m in messages:
        if isinstance(m, Mapping):
            parts.append(f"{m['role']}\x00{m['content']}")
        else:
            parts.append(f"{'system' if isinstance(m, SystemMessage) else 'user'}\x00{m.content}")
    return "\x01".join(parts)
