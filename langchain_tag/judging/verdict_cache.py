"""Verdict caches: a judgment made once is not paid for again.

A verdict is keyed by what determines it: the version of the reader that read
it and of the record it is kept as (:data:`~langchain_tag.judging.read.READER_VERSION`),
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
and is safe to share between threads and processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from langchain_tag.calls.sqlite_file import SQLiteFile
from langchain_tag.errors import TagError
from langchain_tag.judging.read import READER_VERSION
from langchain_tag.judging.results import Reading

logger = logging.getLogger(__name__)

__all__ = [
    "ClaimWaitError",
    "Claims",
    "InMemoryVerdictCache",
    "SQLiteVerdictCache",
    "VerdictCache",
    "VerdictCacheError",
    "VerdictStore",
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
            :func:`~langchain_tag.calls.identity.model_identity`).
        prompt_version: The judge prompt's version.
        verdict_format: ``"token"`` or ``"json"``.
        query: The input text.
        rule_text: The rule as rendered for the judge.
    """
    payload = json.dumps([READER_VERSION, model, prompt_version, verdict_format, query, rule_text], ensure_ascii=False)
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


class VerdictCacheError(TagError):
    """A verdict could not be kept in the verdict cache (a full disk, a lock another process holds too long, ...).

    It stops the job rather than letting it go on paying for judgments it cannot
    keep: the message names the cache file and SQLite's reason.

    Attributes:
        path: The cache file (or the cache's class name when it has no file).
    """

    def __init__(self, path: str | Path, error: BaseException) -> None:
        reason = str(error) or type(error).__name__
        prefix = f"{path}: "
        reason = reason.removeprefix(prefix)
        super().__init__(f"cannot keep verdicts in the verdict cache {path}: {reason}")
        self.path = path


_Row = tuple[int, float | None, str, float]
"""A reading as stored: its word, P(YES), reply, and when it was stored."""

_INSERT = "INSERT OR REPLACE INTO verdicts (key, applies, probability, reply, created) VALUES (?, ?, ?, ?, ?)"


class _Writes:
    """Verdicts put but not committed yet, committed together: per ``every`` verdicts or ``interval`` seconds.

    A background thread commits what waited ``interval`` seconds; a failure of its
    commit is raised by the next :meth:`put`. Puts come from any thread.
    """

    def __init__(self, file: SQLiteFile, every: int, interval: float) -> None:
        self.file = file
        self.every = every
        self.interval = interval
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.committing_lock = threading.Lock()
        self.pending: dict[str, _Row] = {}
        self.committing: dict[str, _Row] = {}
        self.since: float | None = None
        self.failure: VerdictCacheError | None = None
        self.stop = False
        self.thread: threading.Thread | None = None
        self.commits = 0

    def get(self, key: str) -> _Row | None:
        with self.lock:
            return self.pending.get(key) or self.committing.get(key)

    def put(self, key: str, row: _Row) -> None:
        with self.lock:
            self.pending[key] = row
            if self.since is None:
                self.since = time.monotonic()
            full = len(self.pending) >= self.every or self.interval <= 0
            if not full:
                self._start_thread()
                self.wake.notify()
            failure, self.failure = self.failure, None
        if failure is not None:
            raise failure
        if full:
            self.flush()

    def flush(self) -> None:
        """Commit every pending verdict in one transaction; raise :class:`VerdictCacheError` if it fails."""
        with self.committing_lock:
            with self.lock:
                if not self.pending:
                    self.failure = None  # whatever failed before is committed now
                    return
                batch, self.pending, self.since = self.pending, {}, None
                self.committing = batch
            try:
                with self.file.connection() as conn:
                    conn.executemany(_INSERT, [(key, *row) for key, row in batch.items()])
            except sqlite3.Error as exc:
                with self.lock:
                    self.pending = {**batch, **self.pending}  # kept (and readable) for the next attempt
                    self.since = self.since or time.monotonic()
                    self.committing = {}
                raise VerdictCacheError(self.file.path, exc) from exc
            with self.lock:
                self.committing = {}
                self.commits += 1
                if not self.pending:
                    self.failure = None

    def _start_thread(self) -> None:
        """Start the committing thread if it is not running (called holding ``lock``)."""
        if self.thread is None or not self.thread.is_alive():
            self.stop = False
            self.thread = threading.Thread(target=self._run, name="tag-verdict-writes", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                with self.lock:
                    while not self.stop and self.since is None:
                        self.wake.wait()
                    if self.stop or self.since is None:
                        return
                    delay = self.since + self.interval - time.monotonic()
                    if delay > 0:
                        self.wake.wait(delay)
                        continue
                try:
                    self.flush()
                except VerdictCacheError as exc:
                    with self.lock:
                        self.failure = exc
        finally:
            self.file.close()  # this thread's connection

    def close(self) -> None:
        """Commit what is pending and stop the committing thread."""
        try:
            self.flush()
        finally:
            with self.lock:
                self.stop = True
                self.wake.notify_all()
                thread, self.thread = self.thread, None
            if thread is not None and thread is not threading.current_thread():
                thread.join(5)


def _close_quietly(writes: _Writes) -> None:
    """Commit what a cache left pending when it is collected or the interpreter exits."""
    with contextlib.suppress(Exception):
        writes.close()


_LIVE_OWNERS: set[str] = set()
"""The claim owners of this process whose jobs are still running."""
_HOST = socket.gethostname()

CLAIM_TTL = 3600.0
"""Seconds a claim is trusted, on any host: an older one is taken over (a suspended job, a reused PID)."""

CLAIM_WAIT_LIMIT = 600.0
"""Seconds a job waits for pairs another job claimed before it gives up (:class:`ClaimWaitError`)."""

CLAIM_POLL = 0.05
"""Seconds between two looks at pairs another job is judging."""

CLAIM_NOTE_EVERY = 60.0
"""Seconds between two log lines of a job still waiting."""


class ClaimWaitError(TagError):
    """A job gave up waiting for pairs another job sharing its verdict cache claimed and did not finish.

    Attributes:
        path: The verdict cache file.
        keys: The keys of the pairs still claimed.
    """

    def __init__(self, message: str, *, path: str | Path, keys: Sequence[str]) -> None:
        super().__init__(message)
        self.path = path
        self.keys = list(keys)


def _alive(owner: str, created: float, now: float, ttl: float) -> bool:
    """Whether the job that made a claim still runs: younger than ``ttl``, and its process alive on this host."""
    if now - created >= ttl:
        return False  # on this host too: a stopped (SIGSTOP) job, or a PID reused by another process
    host, _, rest = owner.partition(":")
    pid_text, _, _token = rest.partition(":")
    if host != _HOST or not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if pid == os.getpid():
        return owner in _LIVE_OWNERS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: it exists
    return True


class SQLiteVerdictCache:
    """A verdict cache in a SQLite file: survives restarts, shared by threads and processes.

    Verdicts are written in transactions of several (WAL journal): a put waits
    in memory until ``flush_every`` verdicts are pending or the oldest has
    waited ``flush_interval`` seconds, then all are committed at once. The call
    runner flushes at the end of every run (so whatever a finished ``match``
    returned is on disk), and :meth:`close` does too; a process killed in the
    middle of a job loses at most the verdicts not flushed yet. :meth:`get`
    sees pending verdicts (this object's) and reads the file afresh each time
    (other processes' verdicts, once committed).

    A write that fails raises :class:`VerdictCacheError` (from :meth:`put`,
    :meth:`flush` or :meth:`close`; a failed background commit from the next
    :meth:`put`), naming the file.

    Args:
        path: The database file; created with its directory if missing.
        timeout: Seconds to wait for a lock held by another process.
        flush_every: Most verdicts pending before they are committed (1: each put is committed at once).
        flush_interval: Most seconds a verdict stays pending before a background thread commits it
            (0: each put is committed at once).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        timeout: float = 30.0,
        flush_every: int = 64,
        flush_interval: float = 0.2,
    ) -> None:
        if flush_every < 1:
            raise ValueError(f"flush_every must be >= 1, got {flush_every}")
        if flush_interval < 0:
            raise ValueError(f"flush_interval must be >= 0, got {flush_interval}")
        self._file = SQLiteFile(
            path,
            "CREATE TABLE IF NOT EXISTS verdicts ("
            "key TEXT PRIMARY KEY, applies INTEGER NOT NULL, probability REAL, reply TEXT NOT NULL, "
            "created REAL NOT NULL)",
            timeout=timeout,
        )
        with self._file.connection() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, created REAL NOT NULL)"
            )
        self.path = self._file.path
        self.flush_every = flush_every
        self.flush_interval = flush_interval
        self._writes = _Writes(self._file, flush_every, flush_interval)
        weakref.finalize(self, _close_quietly, self._writes)
        self.hits = 0
        self.misses = 0

    @property
    def commits(self) -> int:
        """Transactions that committed verdicts so far."""
        return self._writes.commits

    def get(self, key: str) -> Reading | None:
        """The reading stored under ``key`` (pending or committed, by any process), or ``None``."""
        row = self._writes.get(key)
        if row is None:
            row = (
                self._file.connection()
                .execute("SELECT applies, probability, reply FROM verdicts WHERE key = ?", (key,))
                .fetchone()
            )
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return Reading(p_yes=row[1], word=bool(row[0]), reply=row[2])

    def put(self, key: str, reading: Reading) -> None:
        """Store ``reading`` under ``key`` (committed with others: see the class).

        Raises:
            VerdictCacheError: When a commit failed (this one's or an earlier background one).
        """
        self._writes.put(key, (int(bool(reading.word)), reading.p_yes, reading.reply, time.time()))

    def flush(self) -> None:
        """Commit every pending verdict now.

        Raises:
            VerdictCacheError: When the commit fails (the verdicts stay pending).
        """
        self._writes.flush()

    def claim(self, keys: Sequence[str], owner: str, *, ttl: float = CLAIM_TTL) -> list[str]:
        """Claim the keys no verdict is stored under for ``owner``; return those another running job claimed.

        Jobs sharing the file claim a pair before judging it, so none judges what
        another is judging; a claim of a job that ended (its process on this host
        is gone) or that is older than ``ttl`` seconds (on any host) is taken over.

        Args:
            keys: The pairs' keys.
            owner: The claiming job (:class:`Claims`).
            ttl: Seconds a claim is trusted.
        """
        if not keys:
            return []
        with self._writes.lock:
            pending = set(self._writes.pending) | set(self._writes.committing)
        wanted = sorted(set(keys) - pending)
        held: list[str] = []
        now = time.time()
        conn = self._file.connection()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                for start in range(0, len(wanted), 500):
                    chunk = wanted[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    stored = {k for (k,) in conn.execute(f"SELECT key FROM verdicts WHERE key IN ({marks})", chunk)}
                    claimed = {
                        k: (o, c)
                        for k, o, c in conn.execute(
                            f"SELECT key, owner, created FROM claims WHERE key IN ({marks})", chunk
                        )
                    }
                    free = []
                    for key in chunk:
                        if key in stored:
                            continue
                        other = claimed.get(key)
                        if other is not None and other[0] != owner and _alive(other[0], other[1], now, ttl):
                            held.append(key)
                        elif other is None or other[0] != owner:
                            free.append((key, owner, now))
                    conn.executemany("INSERT OR REPLACE INTO claims (key, owner, created) VALUES (?, ?, ?)", free)
        except sqlite3.Error as exc:
            raise VerdictCacheError(self.path, exc) from exc
        return held

    def claimants(self, keys: Sequence[str]) -> dict[str, tuple[int, float]]:
        """Who claimed ``keys``: each owner's count of them and the time of its oldest claim (for messages)."""
        found: dict[str, tuple[int, float]] = {}
        conn = self._file.connection()
        wanted = sorted(set(keys))
        try:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(f"SELECT owner, created FROM claims WHERE key IN ({marks})", chunk)
                for owner, created in rows:
                    count, oldest = found.get(owner, (0, created))
                    found[owner] = (count + 1, min(oldest, created))
        except sqlite3.Error as exc:
            raise VerdictCacheError(self.path, exc) from exc
        return found

    def release(self, keys: Sequence[str], owner: str) -> None:
        """Drop ``owner``'s claims on ``keys`` (on every key when ``keys`` is empty)."""
        try:
            with self._file.connection() as conn:
                if keys:
                    conn.executemany("DELETE FROM claims WHERE key = ? AND owner = ?", [(k, owner) for k in keys])
                else:
                    conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))
        except sqlite3.Error as exc:
            raise VerdictCacheError(self.path, exc) from exc

    def __len__(self) -> int:
        self.flush()
        return int(self._file.connection().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        """Commit the pending verdicts, stop the committing thread, and close this thread's connection.

        Raises:
            VerdictCacheError: When the pending verdicts cannot be committed.
        """
        try:
            self._writes.close()
        finally:
            self._file.close()


class Claims:
    """One job's claims on pairs of a shared :class:`SQLiteVerdictCache`, so two jobs never judge one pair twice.

    Use it as a context manager: the job counts as running inside the block,
    and its claims left over are dropped at the end. A job waiting for pairs
    another job claimed logs what it waits for (which job, how many pairs, its
    limit) and gives up after ``wait_limit`` seconds with a
    :class:`ClaimWaitError`; a claim older than ``ttl`` seconds is taken over.

    Args:
        cache: The shared cache.
        poll: Seconds between two looks at pairs another job is judging (default :data:`CLAIM_POLL`).
        wait_limit: Most seconds to wait for them (default :data:`CLAIM_WAIT_LIMIT`).
        ttl: Seconds another job's claim is trusted (default :data:`CLAIM_TTL`).
    """

    def __init__(
        self,
        cache: SQLiteVerdictCache,
        *,
        poll: float | None = None,
        wait_limit: float | None = None,
        ttl: float | None = None,
    ) -> None:
        self.cache = cache
        self.poll = CLAIM_POLL if poll is None else poll
        self.wait_limit = CLAIM_WAIT_LIMIT if wait_limit is None else wait_limit
        self.ttl = CLAIM_TTL if ttl is None else ttl
        self.owner = f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex}"

    def __enter__(self) -> Claims:
        _LIVE_OWNERS.add(self.owner)
        return self

    def __exit__(self, *exc: object) -> None:
        _LIVE_OWNERS.discard(self.owner)
        with contextlib.suppress(VerdictCacheError):
            self.cache.release((), self.owner)

    def take(self, keys: Sequence[str]) -> list[str]:
        """Claim what is free of ``keys``; return the keys another running job is judging."""
        return self.cache.claim(keys, self.owner, ttl=self.ttl)

    def wait(self, keys: Sequence[str]) -> None:
        """Claim ``keys``, waiting while another running job judges some of them (until stored or abandoned).

        Raises:
            ClaimWaitError: When some are still claimed after ``wait_limit`` seconds (what this call claimed
                is released first).
        """
        held = self.take(keys)
        waiting = _Waiting(self, keys) if held else None
        while held and waiting is not None:
            time.sleep(waiting.pause(held))
            held = self.take(held)

    async def await_(self, keys: Sequence[str]) -> None:
        """Async twin of :meth:`wait`."""
        held = self.take(keys)
        waiting = _Waiting(self, keys) if held else None
        while held and waiting is not None:
            await asyncio.sleep(waiting.pause(held))
            held = self.take(held)

    def release(self, keys: Sequence[str]) -> None:
        """Drop the claims on ``keys`` (once their verdicts are committed, or their judging failed)."""
        if keys:
            self.cache.release(keys, self.owner)


def _pairs(count: int) -> str:
    return f"{count} pair" if count == 1 else f"{count} pairs"


class _Waiting:
    """One wait of a job for pairs other jobs claimed: its deadline, and what it says while it waits."""

    def __init__(self, claims: Claims, keys: Sequence[str]) -> None:
        self.claims = claims
        self.keys = keys
        self.started = time.monotonic()
        self.deadline = self.started + claims.wait_limit
        self.next_note = self.started

    def pause(self, held: Sequence[str]) -> float:
        """Seconds to sleep before the next look; log now and then; raise once past the limit."""
        now = time.monotonic()
        claims = self.claims
        if now >= self.deadline:
            still = set(held)
            mine = [k for k in self.keys if k not in still]
            with contextlib.suppress(VerdictCacheError):
                claims.release(mine)
            raise ClaimWaitError(
                f"gave up after {claims.wait_limit:g} s waiting for {_pairs(len(held))} another job claimed in "
                f"the verdict cache {claims.cache.path} ({self.who(held)}): if that job has stopped or hangs, end "
                f"it (its claims lapse {claims.ttl:g} s after they were made), or give this job a verdict cache of "
                "its own (--verdicts FILE)",
                path=claims.cache.path,
                keys=held,
            )
        if now >= self.next_note:
            self.next_note = now + CLAIM_NOTE_EVERY
            waited = f" (waited {now - self.started:.0f} s)" if now > self.started + 1 else ""
            logger.warning(
                "waiting for %s another job is judging in the verdict cache %s (%s)%s; their verdicts are read "
                "from the cache once stored; giving up after %g s",
                _pairs(len(held)),
                claims.cache.path,
                self.who(held),
                waited,
                claims.wait_limit,
            )
        return max(0.0, min(claims.poll, self.deadline - now))

    def who(self, held: Sequence[str]) -> str:
        """The jobs holding ``held``: their PIDs (and hosts, when not this one) and the age of their claims."""
        try:
            owners = self.claims.cache.claimants(held)
        except VerdictCacheError:
            return "a job that could not be named"
        now = time.time()
        parts = []
        for owner, (count, oldest) in sorted(owners.items(), key=lambda o: -o[1][0])[:3]:
            host, _, rest = owner.partition(":")
            pid = rest.partition(":")[0]
            where = "" if host == _HOST else f" on host {host}"
            parts.append(f"pid {pid}{where}: {_pairs(count)}, claimed {max(0.0, now - oldest):.0f} s ago")
        return "; ".join(parts) or "claims since dropped"


class VerdictStore:
    """A verdict cache seen by the call runner (:class:`~langchain_tag.calls.runner.RunnerStore`).

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
