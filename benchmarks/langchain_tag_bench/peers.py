"""LangChain's own LLM document compressors as peers of TAG in the quality benchmark.

A LangChain user who wants "the rules that apply to this input" has two LLM-based compressors at hand in
``langchain_classic.retrievers.document_compressors``:

* :class:`~langchain_classic.retrievers.document_compressors.LLMChainFilter`: one call per document, asking
  whether the document is relevant to the question (YES / NO, read by ``BooleanOutputParser``);
* :class:`~langchain_classic.retrievers.document_compressors.LLMListwiseRerank`: one call per query with every
  document in the prompt, the model returning the documents' ids sorted by relevance through
  ``with_structured_output``; the first ``top_n`` are kept.

The quality benchmark (:mod:`langchain_tag_bench.quality`) runs both, as they ship, over the same rule documents
the ``rules_similarity`` rows search (:meth:`~langchain_tag.rules.Rule.to_document` with ``content="search"``: name,
condition and action). :class:`UsageCounter` is a callback handler that counts their model calls and token usage,
so their cost is recorded per input like TAG's.

:class:`FakePeerModel` and :func:`fake_peer_model` are deterministic stand-ins for tests and the notebooks' fake
mode: the fake answers the filter's prompt and the reranker's prompt from the prompt text alone.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_tag.rules import Rule
from langchain_tag.testing import FakeChatModel

__all__ = [
    "FakePeerModel",
    "PeerOutcome",
    "UsageCounter",
    "fake_peer_model",
    "filter_rules",
    "listwise_rank",
    "rule_documents",
    "word_overlap",
]


def rule_documents(rules: Sequence[Rule]) -> list[Document]:
    """The documents both peers receive: each rule's name, condition and action, its id in the metadata."""
    return [rule.to_document(content="search") for rule in rules]


class UsageCounter(BaseCallbackHandler):
    """Counts model calls and token usage seen through LangChain callbacks (thread-safe).

    A call is counted when a chat model (or LLM) run starts; tokens are read from each generation's
    ``usage_metadata`` when it ends, else from the provider's ``llm_output["token_usage"]``.

    Attributes:
        calls: Model calls started.
        prompt_tokens: Prompt (input) tokens reported.
        completion_tokens: Completion (output) tokens reported.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._lock = threading.Lock()

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Count one call per prompt."""
        with self._lock:
            self.calls += len(messages)

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any) -> None:
        """Count one call per prompt of a completion model."""
        with self._lock:
            self.calls += len(prompts)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Add the tokens the response reports."""
        prompt = completion = 0
        found = False
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
                if usage:
                    found = True
                    prompt += int(usage.get("input_tokens", 0))
                    completion += int(usage.get("output_tokens", 0))
        if not found and response.llm_output:
            usage = response.llm_output.get("token_usage") or {}
            prompt += int(usage.get("prompt_tokens", 0) or 0)
            completion += int(usage.get("completion_tokens", 0) or 0)
        with self._lock:
            self.prompt_tokens += prompt
            self.completion_tokens += completion


@dataclass
class PeerOutcome:
    """What one peer did for one input.

    Attributes:
        rule_ids: The rules it kept, in its order (the listwise ranking for the reranker).
        calls: Model calls made.
        prompt_tokens: Prompt tokens reported.
        completion_tokens: Completion tokens reported.
        seconds: Wall time.
        error: ``"ExceptionType: message"`` when the compressor raised (then ``rule_ids`` is empty).
    """

    rule_ids: list[str] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None


def _run_peer(compress: Callable[[list[Any]], Sequence[Document]]) -> PeerOutcome:
    counter = UsageCounter()
    began = time.perf_counter()
    outcome = PeerOutcome()
    try:
        kept = compress([counter])
        outcome.rule_ids = [str(d.metadata["rule_id"]) for d in kept]
    except Exception as exc:  # a failed item is recorded, not fatal: the run goes on
        outcome.error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
    outcome.seconds = time.perf_counter() - began
    outcome.calls = counter.calls
    outcome.prompt_tokens = counter.prompt_tokens
    outcome.completion_tokens = counter.completion_tokens
    return outcome


def filter_rules(llm: BaseChatModel, documents: Sequence[Document], text: str) -> PeerOutcome:
    """Run ``LLMChainFilter.from_llm(llm)`` (its default prompt) over the rule documents for one input.

    Args:
        llm: The chat model.
        documents: The rule documents (:func:`rule_documents`).
        text: The input (the filter's "question").

    Returns:
        The rules it kept and what it cost; an exception (a reply the boolean parser cannot read, a server
        error) is recorded in ``error``.
    """
    from langchain_classic.retrievers.document_compressors import LLMChainFilter

    chain_filter = LLMChainFilter.from_llm(llm)
    return _run_peer(lambda callbacks: chain_filter.compress_documents(documents, text, callbacks=callbacks))


def listwise_rank(llm: BaseChatModel, documents: Sequence[Document], text: str) -> PeerOutcome:
    """Run ``LLMListwiseRerank.from_llm(llm, top_n=len(documents))`` for one input: the whole ranking.

    The reranker's prompt does not depend on ``top_n`` (it only cuts the returned list), so one call gives the
    selection of every ``listwise@K``: the first K of the ranking.

    Args:
        llm: The chat model; it must implement ``with_structured_output``.
        documents: The rule documents (:func:`rule_documents`).
        text: The input (the reranker's "query").

    Returns:
        The ranking and what it cost; an exception (no structured output support, a reply that is not the
        schema, an id out of range) is recorded in ``error``.
    """
    from langchain_classic.retrievers.document_compressors import LLMListwiseRerank

    try:
        reranker = LLMListwiseRerank.from_llm(llm, top_n=len(documents))
    except Exception as exc:  # e.g. a model without with_structured_output
        return PeerOutcome(error=f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}")
    return _run_peer(lambda callbacks: reranker.compress_documents(documents, text, callbacks=callbacks))


# --------------------------------------------------------------------------
# Deterministic fakes.
# --------------------------------------------------------------------------
_WORD = re.compile(r"[a-z_][a-z0-9_]{2,}")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "that",
        "this",
        "with",
        "from",
        "are",
        "not",
        "any",
        "its",
        "use",
        "uses",
        "used",
        "has",
        "have",
        "into",
        "when",
        "which",
        "must",
        "should",
        "does",
        "than",
        "then",
        "else",
        "code",
        "input",
        "function",
        "value",
        "values",
        "rule",
        "rules",
    ]
)
_FILTER = re.compile(r"> Question: (.*)\n> Context:\n>>>\n(.*)\n>>>\n> Relevant \(YES / NO\):\Z", re.DOTALL)
_LISTWISE_DOC = re.compile(r"Document ID: (\d+)\n```(.*?)```", re.DOTALL)
_LISTWISE_END = "Sort the Documents by their relevance to the Query."


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def word_overlap(query: str, document: str) -> int:
    """Distinct words (three letters or more, common words left out) the query and the document share."""
    return len(_words(query) & _words(document))


class FakePeerModel(FakeChatModel):
    """A :class:`~langchain_tag.testing.FakeChatModel` that can be bound to tools, for ``with_structured_output``.

    ``LLMListwiseRerank`` asks for structured output, which ``BaseChatModel`` implements through
    :meth:`bind_tools`; the reply function then answers with an ``AIMessage`` carrying the tool call.
    """

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, BaseMessage]:
        """Bind the tools (their OpenAI schema) to the calls; the fake reads only the prompt."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)


def fake_peer_model(
    relevant: Callable[[str, str], float] = word_overlap, *, fallback: Callable[[str], Any] | None = None
) -> FakePeerModel:
    """A fake model that answers LangChain's filter and listwise-rerank prompts from the prompt text.

    Args:
        relevant: Score of (query, document text); the filter says YES when it is positive, the reranker sorts
            by it (highest first, ties in document order). Default: :func:`word_overlap`.
        fallback: The reply to any other prompt (default: ``"NO"``).

    Returns:
        The model; its ``calls`` and ``prompts`` record what it was asked.
    """

    def respond(prompt: str) -> Any:
        found = _FILTER.search(prompt)
        if found:
            return "YES" if relevant(found.group(1), found.group(2)) > 0 else "NO"
        if _LISTWISE_END in prompt:
            context, _, query = prompt.partition(_LISTWISE_END)
            docs = [(int(i), body) for i, body in _LISTWISE_DOC.findall(context)]
            query = query.strip()
            ranked = [i for i, _ in sorted(docs, key=lambda d: (-relevant(query, d[1]), d[0]))]
            return AIMessage(
                content="",
                tool_calls=[{"name": "RankDocuments", "args": {"ranked_document_ids": ranked}, "id": "call-0"}],
                usage_metadata={
                    "input_tokens": len(prompt.split()),
                    "output_tokens": len(ranked) + 4,
                    "total_tokens": len(prompt.split()) + len(ranked) + 4,
                },
            )
        return fallback(prompt) if fallback is not None else "NO"

    return FakePeerModel(respond=respond)
