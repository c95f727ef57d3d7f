"""Who holds a claim on a shared SQLite verdict cache, and whether that job still runs.

An owner is ``HOST:PID:TOKEN``: a claim of a process that is gone from this host, or older than its
time to live on any host, is no longer honoured.
"""

from __future__ import annotations

import os
import socket

__all__ = ["CLAIM_TTL", "HOST", "LIVE_OWNERS", "alive", "new_owner", "owner_host_and_pid"]

LIVE_OWNERS: set[str] = set()
"""The claim owners of this process whose jobs are still running."""

HOST = socket.gethostname()
"""This host's name, as owners on it are named."""

CLAIM_TTL = 3600.0
"""Seconds a claim is trusted, on any host: an older one is taken over (a suspended job, a reused PID)."""


def new_owner(token: str) -> str:
    """A new owner of this process: ``HOST:PID:TOKEN``."""
    return f"{HOST}:{os.getpid()}:{token}"


def owner_host_and_pid(owner: str) -> tuple[str, str]:
    """An owner's host and PID, as text."""
    host, _, rest = owner.partition(":")
    return host, rest.partition(":")[0]


def alive(owner: str, created: float, now: float, ttl: float) -> bool:
    """Whether the job that made a claim still runs: younger than ``ttl``, and its process alive on this host."""
    if now - created >= ttl:
        return False  # on this host too: a stopped (SIGSTOP) job, or a PID reused by another process
    host, pid_text = owner_host_and_pid(owner)
    if host != HOST or not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if pid == os.getpid():
        return owner in LIVE_OWNERS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: it exists
    return True
