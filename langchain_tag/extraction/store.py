"""A persistent store of finished extraction calls, so an interrupted run resumes.

Each row is one LLM call that returned a readable reply, keyed by a SHA-256
over the model's identity, the extraction prompt version, the phase and the
exact prompt messages. :class:`~langchain_tag.extraction._calls.PhaseCalls`
looks a call up before sending it and writes its reply as soon as it arrives,
so killing the process loses at most the calls in flight, and running the
same extraction again redoes none of the finished ones. Since a phase-1
prompt holds one section's text, editing one section changes only that
section's calls (and those of its spans and units downstream).

The file is SQLite in WAL mode: safe to share between threads and processes,
and every write is committed at once.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_core.messages import BaseMessage

from langchain_tag.calls._sqlite_file import SQLiteFile
from langchain_tag.extraction.prompts import PHASE_PROMPT_VERSIONS

__all__ = ["ExtractionStore", "StoredReply", "call_key", "open_store"]


@dataclass(frozen=True)
class StoredReply:
    """A finished call: the raw reply text and the tokens it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


def call_key(*, model: str, phase: int, messages: Sequence[BaseMessage], prompt_version: str | None = None) -> str:
    """The store key of one call: a SHA-256 over everything that determines its reply.

    Args:
        model: The extraction model's identity
            (:func:`~langchain_tag.calls._identity.model_identity`).
        phase: The phase number.
        messages: The exact prompt.
        prompt_version: The phase prompt's version (default: the phase's
            entry in :data:`~langchain_tag.extraction.prompts.PHASE_PROMPT_VERSIONS`).
    """
    if prompt_version is None:
        prompt_version = PHASE_PROMPT_VERSIONS.get(phase, f"phase-{phase}")
    prompt = [[m.type, m.content] for m in messages]
    payload = json.dumps([model, prompt_version, phase, prompt], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ExtractionStore:
    """Finished extraction calls in a SQLite file.

    Args:
        path: The database file; created with its directory if missing.
        timeout: Seconds to wait for a lock held by another process.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self._file = SQLiteFile(
            path,
            "CREATE TABLE IF NOT EXISTS calls ("
            "key TEXT PRIMARY KEY, phase INTEGER NOT NULL, reply TEXT NOT NULL, "
            "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, created REAL NOT NULL)",
            timeout=timeout,
        )
        self.path = self._file.path

    def get(self, key: str) -> StoredReply | None:
        """The reply stored under ``key``, or ``None``."""
        row = (
            self._file.connection()
            .execute("SELECT reply, prompt_tokens, completion_tokens FROM calls WHERE key = ?", (key,))
            .fetchone()
        )
        return None if row is None else StoredReply(row[0], int(row[1]), int(row[2]))

    def put(self, key: str, phase: int, reply: StoredReply) -> None:
        """Store a finished call; committed before returning."""
        with self._file.connection() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO calls (key, phase, reply, prompt_tokens, completion_tokens, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (key, phase, reply.text, reply.prompt_tokens, reply.completion_tokens, time.time()),
            )

    def __len__(self) -> int:
        return int(self._file.connection().execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        """Close this thread's connection."""
        self._file.close()


def open_store(store: ExtractionStore | str | Path | None) -> ExtractionStore | None:
    """A store object from a store, a file path, or ``None`` (no store)."""
    if store is None or isinstance(store, ExtractionStore):
        return store
    return ExtractionStore(store)
