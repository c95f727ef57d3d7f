"""What the retrievers share about their options: unknown options named, rules as documents, a store listed."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from langchain_tag.rules import rule_documents

__all__ = ["as_documents", "refuse_unknown", "stored_documents"]


def refuse_unknown(cls: type[BaseRetriever], data: Any) -> None:
    """Raise a ``ValueError`` naming each unknown constructor option, with the closest known one."""
    if not isinstance(data, dict):
        return
    known = set(cls.model_fields)
    unknown = [key for key in data if key not in known]
    if not unknown:
        return
    hints = []
    for key in unknown:
        if key == "search_kwargs":
            hints.append("search_kwargs (pass k= and threshold= directly, or per call: invoke(query, k=...))")
        elif key == "top_k":
            hints.append("top_k (the cap is k=)")
        else:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hints.append(f"{key} (did you mean {close[0]}?)" if close else key)
    raise ValueError(f"{cls.__name__} got unknown option(s): {'; '.join(hints)}")


def as_documents(value: Any) -> Any:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return rule_documents(value)
    return value


def stored_documents(vectorstore: VectorStore) -> list[Document]:
    """Every document a vector store holds (Chroma-style ``get``).

    Raises:
        TypeError: When the store cannot list its documents.
    """
    getter = getattr(vectorstore, "get", None)
    if getter is None:
        raise TypeError(f"{type(vectorstore).__name__} cannot list its documents; pass candidates=N to judge the top-N")
    stored = getter(include=["documents", "metadatas"])
    return [
        Document(page_content=text or "", metadata=meta or {}, id=doc_id)
        for doc_id, text, meta in zip(stored["ids"], stored["documents"], stored["metadatas"], strict=True)
    ]
