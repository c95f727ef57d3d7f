"""Standard RAG for comparison: character chunks in an in-memory Chroma, top-k by similarity.

Needs the ``chroma`` extra (``pip install "langchain-tag[chroma]"``); the
core never imports this module at import time.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever

from langchain_tag.errors import require_extra

__all__ = ["chunk_documents", "in_memory_chroma", "similarity_retriever"]


def chunk_documents(documents: Sequence[Document], *, size: int = 500, overlap: int = 100) -> list[Document]:
    """Cut documents into ``size``-character chunks overlapping by ``overlap`` (the method's 500/100)."""
    require_extra("langchain_text_splitters", "chroma")
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, add_start_index=True)
    chunks = splitter.split_documents(list(documents))
    for i, chunk in enumerate(chunks, start=1):
        chunk.metadata["chunk_id"] = f"C{i}"
    return chunks


def in_memory_chroma(documents: Sequence[Document], embeddings: Embeddings) -> VectorStore:
    """An in-memory Chroma collection of ``documents`` using the given embeddings.

    The embeddings are always passed explicitly: Chroma's default embedding
    function downloads a model, which fails offline. Telemetry is off.
    """
    require_extra("langchain_chroma", "chroma")
    from chromadb.config import Settings
    from langchain_chroma import Chroma

    store = Chroma(
        collection_name=f"tag-{uuid.uuid4().hex[:12]}",
        embedding_function=embeddings,
        client_settings=Settings(anonymized_telemetry=False, is_persistent=False),
    )
    if documents:
        store.add_documents(list(documents), ids=[str(uuid.uuid4()) for _ in documents])
    return store


def similarity_retriever(
    documents: Sequence[Document],
    embeddings: Embeddings,
    *,
    k: int = 10,
    chunk: bool = True,
    size: int = 500,
    overlap: int = 100,
) -> VectorStoreRetriever:
    """A top-k similarity retriever over chunks of ``documents`` (or the documents whole)."""
    units = chunk_documents(documents, size=size, overlap=overlap) if chunk else list(documents)
    return in_memory_chroma(units, embeddings).as_retriever(search_kwargs={"k": k})
