"""The retriever each mode of the pipeline gets: applicability, relevance, all rules, similarity or none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever

from langchain_tag.executors import UnitKind
from langchain_tag.judging.chat import ChatRunnable
from langchain_tag.retrievers import (
    FAILED_KEY,
    P_YES_KEY,
    PREDICATE_KEY,
    SCORE_KEY,
    VERDICT_KEY,
    AllRulesRetriever,
    ApplicabilityRetriever,
    RelevanceRetriever,
)
from langchain_tag.rules import Rule, rule_documents

__all__ = ["MODES", "Mode", "check_mode", "judged_retriever", "make_retriever", "unjudged"]

Mode = Literal["tag", "relevance", "all_rules", "similarity", "none"]
MODES: tuple[str, ...] = get_args(Mode)


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")


_VERDICT_KEYS = (VERDICT_KEY, PREDICATE_KEY, SCORE_KEY, P_YES_KEY, FAILED_KEY)


def unjudged(doc: Document) -> Document:
    """A copy of a rule document without the verdict keys a retrieval added."""
    metadata = {key: value for key, value in doc.metadata.items() if key not in _VERDICT_KEYS}
    return Document(page_content=doc.page_content, metadata=metadata, id=doc.id)


def _searchable(doc: Document) -> Document:
    """A rule document whose ``page_content`` is the rule's name, condition and action, for a similarity index."""
    text = Rule.from_document(doc).search_text()
    return Document(page_content=text, metadata=dict(doc.metadata), id=doc.id)


def judged_retriever(
    mode: str,
    rules: Sequence[Document],
    template: ApplicabilityRetriever | None,
    judge_llm: ChatRunnable | None,
) -> ApplicabilityRetriever:
    """The ``tag`` or ``relevance`` retriever over ``rules``, with the settings of ``template`` when given."""
    settings: dict[str, Any] = {}
    if template is not None:
        settings = {name: getattr(template, name) for name in type(template).model_fields if name != "rules"}
    elif judge_llm is None:
        raise ValueError(f"mode {mode!r} needs a judge model: pass retriever= or judge_llm=")
    else:
        settings["llm"] = judge_llm
    if mode == "relevance":
        settings.pop("reference_inputs", None)
        settings["predicate"] = "relevance"
        return RelevanceRetriever(rules=list(rules), **settings)
    return ApplicabilityRetriever(rules=list(rules), **settings)


def make_retriever(
    mode: str,
    *,
    rules: Sequence[Document | Rule] = (),
    retriever: ApplicabilityRetriever | None = None,
    judge_llm: ChatRunnable | None = None,
    documents: Sequence[Document] = (),
    embeddings: Embeddings | None = None,
    k: int = 10,
) -> tuple[BaseRetriever | None, UnitKind]:
    """The retriever of one mode and the kind of unit it returns: the single place modes are built.

    Args:
        mode: One of :data:`MODES`.
        rules: Rule documents (``tag``, ``relevance``, ``all_rules``; and ``similarity`` when there are no source
            documents, which then embeds each rule's name, condition and action).
        retriever: A configured :class:`ApplicabilityRetriever`: the judged modes take its settings (judge
            model, prompt, calibration, threshold, cache, ...) over ``rules``; ``relevance`` asks its
            relevance question instead.
        judge_llm: The judge, when no ``retriever`` is given (the judged modes then use the defaults).
        documents: Source documents, chunked for ``similarity``.
        embeddings: Embeddings for ``similarity``.
        k: Top-k of ``similarity``.

    Returns:
        ``(retriever, unit_kind)``; the retriever is ``None`` for ``none`` and for a judged mode with no rules.

    Raises:
        ValueError: On an unknown mode, or a mode missing what it needs.
        MissingExtraError: ``similarity`` without the ``chroma`` extra.
    """
    check_mode(mode)
    docs = rule_documents(rules) if rules else (rule_documents(retriever.rules) if retriever is not None else [])
    if mode in ("tag", "relevance"):
        if not docs:
            if retriever is None and judge_llm is None:
                raise ValueError(f"mode {mode!r} needs a judge model: pass retriever= or judge_llm=")
            return None, "rules"
        return judged_retriever(mode, docs, retriever, judge_llm), "rules"
    if mode == "all_rules":
        return AllRulesRetriever(rules=list(docs)), "rules"
    if mode == "similarity":
        if embeddings is None:
            raise ValueError(
                "the similarity mode needs embeddings=: any LangChain Embeddings "
                "(e.g. langchain_tag.local.get_embeddings() with the local extra, or OpenAIEmbeddings())"
            )

        from langchain_tag.integrations.similarity import similarity_retriever

        source = list(documents) or [_searchable(doc) for doc in docs]
        return similarity_retriever(source, embeddings, k=k, chunk=bool(documents)), (
            "chunks" if documents else "rules"
        )
    return None, "none"
