"""Verdict caches: a judgment made once is not paid for again.

A verdict is keyed by what determines it: the judge model, the judge prompt's
version and reply format, the input text, and the rule exactly as the judge
sees it (so editing a rule's condition invalidates its verdicts, while editing
its action, which the applicability judge never sees, does not). The cached
value keeps P(YES) where the model gave one, so a different threshold applies
to cached verdicts too.

Two stores: :class:`InMemoryVerdictCache` (the default of
:class:`~langchain_tag.retrievers.ApplicabilityRetriever`, optionally
size-bounded) and :class:`SQLiteVerdictCache`, a file that survives restarts
and is safe to share between threads and processes.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from langchain_tag.calls.replies import Verdict
from langchain_tag.calls.runner import Outcome, Request
from langchain_tag.calls.sqlite_file import SQLiteFile

__all__ = [
    "CachedVerdict",
    "InMemoryVerdictCache",
    "SQLiteVerdictCache",
    "VerdictCache",
    "VerdictStore",
    "verdict_key",
]


@dataclass(frozen=True)
class CachedVerdict:
    """A stored judgment.

    Attributes:
        applies: The verdict as read when it was made.
        probability: P(YES) from logprobs, if the model gave them (the
            threshold is applied again on reading).
        reply: The reply text.
    """

    applies: bool
    probability: float | None = None
    reply: str = ""

    def decision(self, threshold: float) -> bool:
        """The verdict under ``threshold`` (P(YES) >= threshold when a probability is stored)."""
        return self.probability >= threshold if self.probability is not None else self.applies


@runtime_checkable
class VerdictCache(Protocol):
    """What the matcher needs from a cache: get and put by key."""

    def get(self, key: str) -> CachedVerdict | None:
        """The verdict stored under ``key``, or ``None``."""
        ...

    def put(self, key: str, verdict: CachedVerdict) -> None:
        """Store ``verdict`` under ``key``."""
        ...


def verdict_key(*, model: str, prompt_version: str, verdict_format: str, query: str, rule_text: str) -> str:
    """The cache key of one judgment: a SHA-256 over everything that determines it.

    Args:
        model: The judge model's identity (see
            :func:`~langchain_tag.calls.identity.model_identity`).
        prompt_version: The judge prompt's version.
        verdict_format: ``"token"`` or ``"json"``.
        query: The input text.
        rule_text: The rule as rendered for the judge.
    """
    payload = json.dumps([model, prompt_version, verdict_format, query, rule_text], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class InMemoryVerdictCache:
    """A thread-safe in-process cache, least recently used entries evicted beyond ``max_size``.

    Args:
        max_size: Most entries kept; ``None`` for no bound.
    """

    def __init__(self, max_size: int | None = 100_000) -> None:
        if max_size is not None and max_size < 1:
            raise ValueError(f"max_size must be >= 1 or None, got {max_size}")
        self.max_size = max_size
        self._data: OrderedDict[str, CachedVerdict] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> CachedVerdict | None:
        """The verdict stored under ``key``, or ``None``."""
        with self._lock:
            verdict = self._data.get(key)
            if verdict is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return verdict

    def put(self, key: str, verdict: CachedVerdict) -> None:
        """Store ``verdict`` under ``key``, evicting the least recently used entries beyond ``max_size``."""
        with self._lock:
            self._data[key] = verdict
            self._data.move_to_end(key)
            if self.max_size is not None:
                while len(self._data) > self.max_size:
                    self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


class SQLiteVerdictCache:
    """A verdict cache in a SQLite file: survives restarts, shared by threads and processes.

    Each call opens its own short transaction (WAL journal), so concurrent
    readers and writers do not block each other for long.

    Args:
        path: The database file; created with its directory if missing.
        timeout: Seconds to wait for a lock held by another process.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self._file = SQLiteFile(
            path,
            "CREATE TABLE IF NOT EXISTS verdicts ("
            "key TEXT PRIMARY KEY, applies INTEGER NOT NULL, probability REAL, reply TEXT NOT NULL, "
            "created REAL NOT NULL)",
            timeout=timeout,
        )
        self.path = self._file.path
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> CachedVerdict | None:
        """The verdict stored under ``key``, or ``None``."""
        row = (
            self._file.connection()
            .execute("SELECT applies, probability, reply FROM verdicts WHERE key = ?", (key,))
            .fetchone()
        )
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return CachedVerdict(applies=bool(row[0]), probability=row[1], reply=row[2])

    def put(self, key: str, verdict: CachedVerdict) -> None:
        """Store ``verdict`` under ``key`` (one short transaction)."""
        with self._file.connection() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO verdicts (key, applies, probability, reply, created) VALUES (?, ?, ?, ?, ?)",
                (key, int(verdict.applies), verdict.probability, verdict.reply, time.time()),
            )

    def __len__(self) -> int:
        return int(self._file.connection().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        """Close this thread's connection."""
        self._file.close()


def _usable(p: object) -> bool:
    return p is None or (isinstance(p, int | float) and not isinstance(p, bool) and 0 <= p <= 1)


class VerdictStore:
    """A verdict cache seen by the call runner (:class:`~langchain_tag.calls.runner.RunnerStore`).

    A cached verdict whose P(YES), if stored, is a number within [0, 1] is a
    finished outcome; anything else is judged again.
    """

    def __init__(self, cache: VerdictCache) -> None:
        self.cache = cache

    def holds(self, key: str) -> bool:
        """Whether ``key`` would be served from the cache (a stored verdict whose P(YES), if any, is usable)."""
        hit = self.cache.get(key)
        return hit is not None and _usable(hit.probability)

    def lookup(self, key: str) -> Outcome[Verdict] | None:
        """The finished outcome cached under ``key`` (``stored=True``), or ``None``."""
        hit = self.cache.get(key)
        if hit is None or not _usable(hit.probability):
            return None
        return Outcome(value=Verdict(hit.applies, hit.probability, "cache"), reply=hit.reply, stored=True)

    def keep(self, key: str, verdict: Verdict, reply: str) -> None:
        """Cache ``verdict`` (read from ``reply``) under ``key``."""
        self.cache.put(key, CachedVerdict(verdict.applies, verdict.probability, reply))

    def get(self, request: Request[Any]) -> Outcome[Any] | None:
        """The finished outcome cached for ``request``, or ``None`` (as :meth:`lookup`)."""
        hit = self.cache.get(request.key) if request.key is not None else None
        if hit is None or not _usable(hit.probability):
            return None
        return Outcome(value=Verdict(hit.applies, hit.probability, "cache"), reply=hit.reply, stored=True)

    def put(self, request: Request[Any], outcome: Outcome[Any]) -> None:
        """Cache a readable outcome just received for ``request``."""
        if request.key is not None and outcome.value is not None:
            self.keep(request.key, outcome.value, outcome.reply)
