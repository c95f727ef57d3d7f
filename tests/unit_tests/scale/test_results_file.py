"""The bulk job's results file and its lock: partial files of dead writers removed by the job taking the lock
over, and a file system where the lock cannot be taken refused (or written after a warning, when asked)."""

from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from langchain_tag.scale import _results_file
from langchain_tag.scale.bulk import OutputFileError, awrite_results, write_results

REPO = Path(__file__).resolve().parents[3]


def _dead_pid() -> int:
    """The PID of a process that has ended (and was reaped): no process runs under it now."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _partial(out: Path, pid: int, token: str = "0badc0de") -> Path:
    partial = out.with_name(f".{out.name}.{pid}-{token}.partial")
    partial.write_text('{"id": "half a line')
    return partial


def test_the_job_taking_a_stale_lock_over_removes_dead_writers_partial_files(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    dead = _dead_pid()
    (tmp_path / ".out.jsonl.lock").write_text(str(dead))  # the lock file a killed job leaves
    stale = _partial(out, dead)
    live = _partial(out, os.getppid(), "1234abcd")  # a writer that still runs: its file is its own
    other = _partial(tmp_path / "other.jsonl", dead)  # another output's partial file is not this one's
    assert write_results([{"id": "a"}], out) == 1
    assert out.read_text() == '{"id": "a"}\n'
    assert not stale.exists()
    assert live.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.jsonl", live.name, other.name])


KILLED_WRITER = """
import sys, time
sys.path.insert(0, sys.argv[2])
from langchain_tag.scale.bulk import write_results

def results():
    for n in range(100):
        yield {"id": str(n), "text": "x" * 1000}
        time.sleep(0.05)

write_results(results(), sys.argv[1])
"""


def test_a_job_after_one_killed_with_sigkill_leaves_no_partial_file(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(out), str(REPO)])
    try:
        deadline = time.monotonic() + 30
        while not any(p.stat().st_size > 2000 for p in tmp_path.glob(".out.jsonl.*.partial")):
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert list(tmp_path.glob(".out.jsonl.*.partial"))  # what the killed job left
    assert write_results([{"id": "a"}], out) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def _no_locks(monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    def flock(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", flock)


def test_an_output_that_cannot_be_locked_is_refused_before_any_result(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_locks(monkeypatch)
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    asked: list[str] = []

    def results() -> Any:
        asked.append("asked")
        yield {"id": "a"}

    with pytest.raises(OutputFileError) as caught:
        write_results(results(), out)
    message = str(caught.value)
    assert str(out) in message and "cannot be locked" in message and os.strerror(errno.ENOLCK) in message
    assert "--unlocked-output" in message and "unlocked=True" in message
    assert asked == []  # refused before any judgment
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"] and out.read_text() == "old\n"


async def test_the_async_writer_refuses_an_output_that_cannot_be_locked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_locks(monkeypatch)

    async def results() -> Any:
        yield {"id": "a"}

    with pytest.raises(OutputFileError, match="cannot be locked"):
        await awrite_results(results(), tmp_path / "out.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_unlocked_writes_an_output_that_cannot_be_locked_after_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    _no_locks(monkeypatch)
    out = tmp_path / "out.jsonl"
    with caplog.at_level(logging.WARNING, logger=_results_file.__name__):
        assert write_results([{"id": "a"}], out, unlocked=True) == 1
    assert out.read_text() == '{"id": "a"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
    [record] = caplog.records
    assert str(out) in record.getMessage() and "not locked" in record.getMessage()


async def test_the_async_writer_takes_unlocked_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _no_locks(monkeypatch)

    async def results() -> Any:
        yield {"id": "a"}

    assert await awrite_results(results(), tmp_path / "out.jsonl", unlocked=True) == 1


def test_unlocked_changes_nothing_where_the_lock_is_taken(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "out.jsonl"
    with caplog.at_level(logging.WARNING):
        assert write_results([{"id": "a"}], out, unlocked=True) == 1
    assert caplog.records == [] and sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
