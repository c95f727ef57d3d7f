"""Claims on a shared SQLite verdict cache: an age limit on one host too, and a waiting job that says so and gives up."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sqlite3
import time
from pathlib import Path

import pytest

from langchain_tag.errors import TagError
from langchain_tag.judging.verdict_cache import Claims, ClaimWaitError, SQLiteVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.bulk import match_corpus
from tests.helpers.judge_fakes import scored_judge


def started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (field 22 of ``/proc/PID/stat``)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]


def claim_as(path: Path, key: str, *, pid: int, age: float, since: str | None = None) -> str:
    """Write another job's claim on ``key``: a process ``pid`` of this host that claimed it ``age`` seconds ago.

    ``since``: when the claiming process started (default: when ``pid`` did, so it is that process's claim).
    """
    owner = f"{socket.gethostname()}:{pid}:{started(pid) if since is None else since}:other"
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?)", (key, owner, time.time() - age))
    return owner


def test_an_old_claim_of_a_live_process_on_this_host_is_taken_over(tmp_path: Path) -> None:
    """A suspended job or a reused PID must not stall every job on the file: past its age limit a claim is dead."""
    cache = SQLiteVerdictCache(tmp_path / "v.sqlite")
    claim_as(cache.path, "old", pid=os.getppid(), age=7200)  # the parent process: alive, but the claim is 2 h old
    claim_as(cache.path, "young", pid=os.getppid(), age=5)
    with Claims(cache) as claims:
        assert claims.take(["old", "young"]) == ["young"]
    assert cache.claim(["old"], "someone", ttl=10_000) == []  # nobody holds "old" once its taker released it


def test_a_waiting_job_says_what_it_waits_for_and_gives_up_after_its_limit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = SQLiteVerdictCache(tmp_path / "v.sqlite")
    claim_as(cache.path, "k1", pid=os.getppid(), age=1)
    started = time.monotonic()
    claims = Claims(cache, poll=0.01, wait_limit=0.3)
    with caplog.at_level(logging.INFO), claims, pytest.raises(ClaimWaitError) as caught:
        claims.wait(["k0", "k1"])
    assert 0.3 <= time.monotonic() - started < 5
    assert isinstance(caught.value, TagError)
    message = str(caught.value)
    assert str(cache.path) in message and f"pid {os.getppid()}" in message and "0.3 s" in message
    assert "1 pair" in message
    said = caplog.text
    assert "waiting for 1 pair" in said and f"pid {os.getppid()}" in said and "giving up after 0.3 s" in said
    assert cache.claim(["k0"], "someone") == []  # what it had claimed before giving up is released


def test_a_claim_whose_pid_another_process_has_now_names_no_process_to_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The job that claimed it ended and its PID went to another process (here the parent): not one to end."""
    cache = SQLiteVerdictCache(tmp_path / "v.sqlite")
    claim_as(cache.path, "k1", pid=os.getppid(), age=1, since=str(int(started(os.getppid())) + 1))
    claims = Claims(cache, poll=0.01, wait_limit=0.2)
    with caplog.at_level(logging.INFO), claims, pytest.raises(ClaimWaitError) as caught:
        claims.wait(["k1"])
    for said in (str(caught.value), caplog.text):
        assert f"pid {os.getppid()}" not in said and str(os.getppid()) not in said
        assert "a job that has ended" in said
    message = str(caught.value)
    assert "end it" not in message and "lapse 3600 s after they were made" in message
    assert "--verdicts FILE" in message


def test_a_claim_of_this_process_names_it(tmp_path: Path) -> None:
    cache = SQLiteVerdictCache(tmp_path / "v.sqlite")
    with Claims(cache) as other:
        other.take(["k1"])
        claims = Claims(cache, poll=0.01, wait_limit=0.1)
        with claims, pytest.raises(ClaimWaitError) as caught:
            claims.wait(["k1"])
    assert f"pid {os.getpid()}:" in str(caught.value) and "end it" in str(caught.value)


async def test_the_async_wait_gives_up_too(tmp_path: Path) -> None:
    cache = SQLiteVerdictCache(tmp_path / "v.sqlite")
    claim_as(cache.path, "k1", pid=os.getppid(), age=1)
    claims = Claims(cache, poll=0.01, wait_limit=0.2)
    with claims, pytest.raises(ClaimWaitError, match=r"gave up after 0\.2 s"):
        await asyncio.wait_for(claims.await_(["k1"]), 10)


def test_a_wait_ends_as_soon_as_the_verdict_is_stored(tmp_path: Path) -> None:
    from langchain_tag.judging.results import Reading

    cache = SQLiteVerdictCache(tmp_path / "v.sqlite", flush_every=1)
    claim_as(cache.path, "k1", pid=os.getppid(), age=1)
    cache.put("k1", Reading(word=True, p_yes=0.9, reply="YES"))
    with Claims(cache, poll=0.01, wait_limit=0.2) as claims:
        claims.wait(["k1"])  # stored: nothing to wait for


def test_a_bulk_job_stuck_behind_another_jobs_claims_stops_with_the_message(
    tmp_path: Path, rules: list[Rule], monkeypatch: pytest.MonkeyPatch
) -> None:
    import langchain_tag.judging._claims as module

    monkeypatch.setattr(module, "CLAIM_WAIT_LIMIT", 0.2)
    monkeypatch.setattr(module, "CLAIM_POLL", 0.01)
    cache = SQLiteVerdictCache(tmp_path / "v.sqlite")
    retriever = ApplicabilityRetriever(llm=scored_judge(), rules=rules, cache=cache, calibration=None)
    keys = [r.key for r in retriever.judge.requests("x = 1", rules)]
    for key in keys:
        claim_as(cache.path, key, pid=os.getppid(), age=1)
    with pytest.raises(ClaimWaitError, match=rf"{len(keys)} pairs"):
        list(match_corpus(["x = 1"], retriever))
