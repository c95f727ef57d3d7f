"""Verdict caches: a judgment made once is not paid for again.

A verdict is keyed by what determines it: the version of the reader that read
it and of the record it is kept as (:data:`~langchain_tag.judging._read.READER_VERSION`),
the judge model, the judge prompt's version and reply format, the input text,
and the rule exactly as the judge sees it (so editing a rule's condition
invalidates its verdicts, while editing its action, which the applicability
judge never sees, does not; and a verdict an older reader accepted is never
served by a newer one). The cache keeps the :class:`~langchain_tag.judging.results.Reading`
as it was read, P(YES) included, so a different threshold applies to cached
verdicts too.

Two stores: :class:`InMemoryVerdictCache` (the default of
:class:`~langchain_tag.retrievers.ApplicabilityRetriever`, optionally
size-bounded) and :class:`SQLiteVerdictCache`, a file that survives restarts
and is safe to share between threads and processes, on whose pairs the jobs
sharing it take :class:`Claims` so that no two judge one pair.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, runtime_checkable

from langchain_tag.judging._claims import Claims, ClaimWaitError
from langchain_tag.judging._read import READER_VERSION
from langchain_tag.judging._sqlite_verdicts import SQLiteVerdictCache, VerdictCacheError
from langchain_tag.judging.results import Reading

__all__ = [
    "ClaimWaitError",
    "Claims",
    "InMemoryVerdictCache",
    "SQLiteVerdictCache",
    "VerdictCache",
    "VerdictCacheError",
    "VerdictStore",
    "rule_fingerprint",
    "verdict_key",
]


@runtime_checkable
class VerdictCache(Protocol):
    """What the matcher needs from a cache: get and put by key."""

    def get(self, key: str) -> Reading | None:
        """The reading stored under ``key``, or ``None``."""
        ...

    def put(self, key: str, reading: Reading) -> None:
        """Store ``reading`` under ``key``."""
        ...


def verdict_key(*, model: str, prompt_version: str, verdict_format: str, query: str, rule_text: str) -> str:
    """The cache key of one judgment: a SHA-256 over everything that determines it, the reader's version included.

    Args:
        model: The judge model's identity (see
            :func:`~langchain_tag.calls._identity.model_identity`).
        prompt_version: The judge prompt's version.
        verdict_format: ``"token"`` or ``"json"``.
        query: The input text.
        rule_text: The rule as rendered for the judge.
    """
    payload = json.dumps([READER_VERSION, model, prompt_version, verdict_format, query, rule_text], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


RULE_FINGERPRINT_CHARS = 16
"""Hex digits of a rule fingerprint (64 bits: two rules of one file never share one by chance)."""


def rule_fingerprint(*, prompt_version: str, rule_text: str) -> str:
    """What identifies the rule a verdict judged: a short SHA-256 over the judge prompt's version and the rule text.

    The rule text is the rule as the judge prompt renders it (its condition, for the applicability judge), as
    :func:`verdict_key` takes it: so a verdict written down names the rule it judged, and a rule whose condition
    changed since, or a judge prompt of another version, no longer matches it.

    >>> rule_fingerprint(prompt_version="v1", rule_text="a bare except") == rule_fingerprint(
    ...     prompt_version="v1", rule_text="a bare except")
    True
    >>> len(rule_fingerprint(prompt_version="v1", rule_text="x"))
    16
    """
    payload = json.dumps([prompt_version, rule_text], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:RULE_FINGERPRINT_CHARS]


class InMemoryVerdictCache:
    """A thread-safe in-process cache, least recently used entries evicted beyond ``max_size``.

    Args:
        max_size: Most entries kept; ``None`` for no bound.
    """

    def __init__(self, max_size: int | None = 100_000) -> None:
        if max_size is not None and max_size < 1:
            raise ValueError(f"max_size must be >= 1 or None, got {max_size}")
        self.max_size = max_size
        self._data: OrderedDict[str, Reading] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Reading | None:
        """The reading stored under ``key``, or ``None``."""
        with self._lock:
            verdict = self._data.get(key)
            if verdict is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return verdict

    def put(self, key: str, reading: Reading) -> None:
        """Store ``reading`` under ``key``, evicting the least recently used entries beyond ``max_size``."""
        with self._lock:
            self._data[key] = reading
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


class VerdictStore:
    """A verdict cache seen by the call runner (:class:`~langchain_tag.calls._runner.RunnerStore`).

    A cached reading with a word, whose P(YES), if stored, is a number within [0, 1], is a finished one;
    anything else is judged again. A cache that cannot keep a reading raises :class:`VerdictCacheError`
    naming its file.
    """

    def __init__(self, cache: VerdictCache) -> None:
        self.cache = cache
        self.holds_back = callable(getattr(cache, "flush", None))
        """Whether the cache holds writes back until :meth:`flush` (the runner then flushes after every run)."""

    def get(self, key: str) -> Reading | None:
        """The finished reading cached under ``key``, or ``None``."""
        found = self.cache.get(key)
        p = found.p_yes if found is not None else None
        usable = p is None or (isinstance(p, int | float) and not isinstance(p, bool) and 0 <= p <= 1)
        return found if found is not None and found.word is not None and usable else None

    def put(self, key: str, reading: Reading) -> None:
        """Cache ``reading`` under ``key``.

        Raises:
            VerdictCacheError: When the cache cannot keep it (naming the cache file).
        """
        try:
            self.cache.put(key, reading)
        except VerdictCacheError:
            raise
        except Exception as exc:
            raise VerdictCacheError(self._where(), exc) from exc

    def flush(self) -> None:
        """Commit the readings the cache holds back (a :class:`SQLiteVerdictCache`'s pending writes).

        Raises:
            VerdictCacheError: When they cannot be committed.
        """
        flush = getattr(self.cache, "flush", None)
        if not callable(flush):
            return
        try:
            flush()
        except VerdictCacheError:
            raise
        except Exception as exc:
            raise VerdictCacheError(self._where(), exc) from exc

    def _where(self) -> str | Path:
        path = getattr(self.cache, "path", None)
        return path if isinstance(path, str | Path) else type(self.cache).__name__
