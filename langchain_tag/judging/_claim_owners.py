"""Who holds a claim on a shared SQLite verdict cache, and whether that job still runs.

An owner is ``HOST:PID:STARTED:TOKEN`` (``STARTED``: when the process started, where the system says so): a claim
of a process that is gone from this host, or older than its time to live on any host, is no longer honoured, and a
process that runs under the claim's PID but started at another time (the PID reused) is never named as the job.
"""

from __future__ import annotations

import os
import socket
from typing import Literal

__all__ = ["CLAIM_TTL", "HOST", "LIVE_OWNERS", "alive", "claimant", "new_owner", "owner_host_and_pid"]

LIVE_OWNERS: set[str] = set()
"""The claim owners of this process whose jobs are still running."""

HOST = socket.gethostname()
"""This host's name, as owners on it are named."""

CLAIM_TTL = 3600.0
"""Seconds a claim is trusted, on any host: an older one is taken over (a suspended job, a reused PID)."""


def _started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, from ``/proc``); empty where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rpartition(")")[2].split()  # after the command's name, which may hold anything
    except OSError:
        return ""
    return fields[19] if len(fields) > 19 and fields[19].isdigit() else ""


def new_owner(token: str) -> str:
    """A new owner of this process: ``HOST:PID:STARTED:TOKEN``."""
    pid = os.getpid()
    return f"{HOST}:{pid}:{_started(pid)}:{token}"


def owner_host_and_pid(owner: str) -> tuple[str, str]:
    """An owner's host and PID, as text."""
    host, _, rest = owner.partition(":")
    return host, rest.partition(":")[0]


def claimant(owner: str) -> Literal["this host", "ended", "unchecked", "another host"]:
    """What runs under an owner's PID now, for the messages of a job waiting for its claims.

    ``"this host"``: the very process that made the claim, on this host; ``"ended"``: no process, or another one
    (started at another time: the PID was reused); ``"unchecked"``: a process of this host that could not be told
    apart from another (an owner without its start time); ``"another host"``: a process of another host.
    """
    host, _, rest = owner.partition(":")
    pid_text, _, rest = rest.partition(":")
    if host != HOST:
        return "another host"
    if not pid_text.isdigit():
        return "unchecked"
    pid = int(pid_text)
    recorded = rest.partition(":")[0] if rest.count(":") else ""
    if pid != os.getpid():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "ended"
        except OSError:
            pass  # another user's process: it exists
    if not recorded.isdigit():
        return "unchecked"
    now = _started(pid)
    if not now:
        return "unchecked"
    return "this host" if now == recorded else "ended"


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
