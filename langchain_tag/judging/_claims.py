"""Claims of the jobs sharing a SQLite verdict cache on the pairs they judge, so no two judge one pair.

A job waiting for pairs another job claimed says what it waits for (which job, how many pairs, its limit)
and gives up after a while with a :class:`ClaimWaitError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from langchain_tag.errors import TagError
from langchain_tag.judging._claim_owners import CLAIM_TTL, LIVE_OWNERS, claimant, new_owner, owner_host_and_pid
from langchain_tag.judging._sqlite_verdicts import SQLiteVerdictCache, VerdictCacheError

logger = logging.getLogger(__name__)

__all__ = ["CLAIM_NOTE_EVERY", "CLAIM_POLL", "CLAIM_WAIT_LIMIT", "ClaimWaitError", "Claims"]

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
        self.owner = new_owner(uuid.uuid4().hex)

    def __enter__(self) -> Claims:
        LIVE_OWNERS.add(self.owner)
        return self

    def __exit__(self, *exc: object) -> None:
        LIVE_OWNERS.discard(self.owner)
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
            who, named = self.named(held)
            advice = (
                f"if that job has stopped or hangs, end it (its claims lapse {claims.ttl:g} s after they were made)"
                if named
                else f"its claims lapse {claims.ttl:g} s after they were made: run this job again then"
            )
            raise ClaimWaitError(
                f"gave up after {claims.wait_limit:g} s waiting for {_pairs(len(held))} another job claimed in "
                f"the verdict cache {claims.cache.path} ({who}): {advice}, or give this job a verdict cache of its "
                "own (--verdicts FILE)",
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
        """The jobs holding ``held``, as :meth:`named` gives them."""
        return self.named(held)[0]

    def named(self, held: Sequence[str]) -> tuple[str, bool]:
        """The jobs holding ``held`` and whether a process of theirs is named (one to end, if it hangs).

        A job is named by its PID (and host, when not this one) only when that process is the one that made the
        claims: a PID another process has now (the job ended, its PID reused) is not named, so no advice points
        at a process that is not the job's. Each job comes with the age of its claims.
        """
        try:
            owners = self.claims.cache.claimants(held)
        except VerdictCacheError:
            return "a job that could not be named", False
        now = time.time()
        parts = []
        named = False
        for owner, (count, oldest) in sorted(owners.items(), key=lambda o: -o[1][0])[:3]:
            host, pid = owner_host_and_pid(owner)
            state = claimant(owner)
            if state == "ended":
                job = "a job that has ended (another process has its PID now)"
            else:
                named = True
                job = f"pid {pid}" + {"another host": f" on host {host}", "unchecked": " (if still that job)"}.get(
                    state, ""
                )
            parts.append(f"{job}: {_pairs(count)}, claimed {max(0.0, now - oldest):.0f} s ago")
        return "; ".join(parts) or "claims since dropped", named
