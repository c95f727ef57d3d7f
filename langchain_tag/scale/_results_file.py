"""The bulk job's results file: written beside its path and renamed over it, so it appears whole or not at all.

A second job writing the same path meanwhile is refused (a ``.NAME.lock`` file beside it names the writer); the
job that takes the lock removes the partial files writers killed before it left; a path whose lock cannot be taken
at all (a file system without locks) is refused unless the caller asks to write it unlocked; and
:func:`check_output_path` refuses a path that cannot take the file before any judgment is made.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import uuid
from collections.abc import AsyncIterable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from langchain_tag.errors import TagError

logger = logging.getLogger(__name__)

__all__ = ["OutputFileError", "awrite_results", "check_output_path", "write_results"]


def _dumps(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


class OutputFileError(TagError, OSError):
    """The results file cannot be written: another job is writing it, or a write failed (a full disk, ...).

    The message names the file; the file is left as it was.
    """


def _partial_path(path: Path) -> Path:
    """A partial file of this writer's own beside ``path`` (no other job's partial file is ever opened)."""
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def _running(pid: int) -> bool:
    """Whether a process runs under ``pid`` on this host (this one does; another user's counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove_dead_partials(path: Path) -> None:
    """Remove the partial files of ``path`` whose writers no longer run (killed: nothing else removed them).

    Called by the lock's holder only, so no writer that locks is writing any of them; a partial file of a writer
    still running (one that wrote unlocked) is left alone.
    """
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(\d+)-[0-9a-f]+\.partial")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        found = pattern.fullmatch(name)
        if found is not None and not _running(int(found.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(path.parent / name)
                logger.debug("removed %s, the partial file of a writer of %s that no longer runs", name, path)


def _unlockable(path: Path, lock: Path, exc: OSError, unlocked: bool) -> None:
    """Refuse ``path`` whose lock cannot be taken, unless ``unlocked``: then warn that it is written unlocked."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    with contextlib.suppress(OSError):
        if lock.stat().st_size == 0:  # nobody could lock it either, so nobody wrote a PID in it: no one's
            lock.unlink()
    if not unlocked:
        raise OutputFileError(
            f"cannot write {path}: it cannot be locked ({reason}), so another job writing it would go unseen; "
            "give an -o FILE on a file system with locks, or write it unlocked (--unlocked-output, unlocked=True)"
        ) from exc
    logger.warning(
        "%s is not locked: its lock cannot be taken (%s); writing it all the same, as asked: a job writing it at "
        "the same time would go unseen, and the file would hold one job's output",
        path,
        reason,
    )


@contextmanager
def _writing_alone(path: Path, *, unlocked: bool = False) -> Iterator[None]:
    """Hold ``path``'s writer lock (a ``.NAME.lock`` file beside it) for the block; refuse when another job holds it.

    The lock is an advisory ``flock`` (none where the platform lacks it: each writer still writes its own partial
    file, so the file that ends up at ``path`` is one job's, whole). The lock file holds the writer's PID, for the
    message, and is removed when the block ends. Once the lock is taken, the partial files of writers that no
    longer run (killed) are removed. Where the lock cannot be taken at all (``ENOLCK``: NFS without a lock
    daemon), ``path`` is refused with an :class:`OutputFileError`; with ``unlocked``, it is written after a warning.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    lock = _lock_path(path)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise OutputFileError(
                f"cannot write {path}: another job is writing it{who}; wait for it to end, or give another -o FILE"
            ) from None
        except OSError as exc:  # a file system without locks: refused, or written unlocked when asked
            os.close(fd)
            _unlockable(path, lock, exc, unlocked)
            yield
            return
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the lock file was removed by the writer before us between our open and our lock: again
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        _remove_dead_partials(path)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)  # removed while still held, so a writer that opened it sees it is gone and opens anew
        os.close(fd)


class _Sink:
    """The partial file's handle: each write error raised as an :class:`OutputFileError` naming the results file."""

    def __init__(self, handle: TextIO, path: Path) -> None:
        self.handle = handle
        self.path = path
        self.written = 0

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        try:
            self.handle.write(text)
        except OSError as exc:
            raise _write_error(self.path, exc) from exc
        self.written += len(data)


def _write_error(path: Path, exc: OSError) -> OutputFileError:
    reason = exc.strerror or str(exc) or type(exc).__name__
    return OutputFileError(f"cannot write {path}: {reason}; {path} is left as it was")


def check_output_path(path: str | Path) -> Path:
    """Refuse an output path :func:`write_results` could not put its file at, before any judgment is made.

    The results file is written beside ``path`` and renamed over it at the
    end, so ``path`` must be a regular file or not exist yet, and its
    directory (or the nearest existing one above, where the missing ones will
    be made) must let files be created. Each message names the path at fault.

    Args:
        path: Where the results will go.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        IsADirectoryError: When ``path`` is a directory.
        NotADirectoryError: When a parent of ``path`` is a file.
        PermissionError: When files cannot be created in its directory.
        OSError: When ``path`` exists but is not a regular file (a device, a pipe).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a directory; give a file path for the results")
    if path.exists() and not path.is_file():
        raise OSError(
            f"cannot write {path}: it is not a regular file (a device or a pipe); "
            'write to "-" (stdout) and redirect that instead'
        )
    directory = next((p for p in path.parents if p.exists()), Path("."))
    if not directory.is_dir():
        raise NotADirectoryError(f"cannot write {path}: {directory} is a file, not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write {path}: no permission to create files in {directory}")
    return path


@contextmanager
def _replacing(path: Path, *, unlocked: bool = False) -> Iterator[_Sink]:
    """A writer on a partial file of its own, renamed over ``path`` when the block ends; removed if it raises.

    A second job writing the same ``path`` meanwhile is refused (:func:`_writing_alone`), and the file is renamed
    over ``path`` only once every byte written is on disk: a job never reports success over a file it did not
    write whole.
    """
    check_output_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = _partial_path(path)
    with _writing_alone(path, unlocked=unlocked):
        try:
            try:
                handle = partial.open("x", encoding="utf-8", newline="\n")
            except OSError as exc:
                raise _write_error(path, exc) from exc
            try:
                sink = _Sink(handle, path)
                yield sink
                try:
                    handle.flush()
                    os.fsync(handle.fileno())
                    size = os.fstat(handle.fileno()).st_size
                    handle.close()
                except OSError as exc:
                    raise _write_error(path, exc) from exc
            finally:
                with contextlib.suppress(OSError):  # what could not be flushed is lost with the partial file
                    handle.close()
            if size != sink.written:
                raise OutputFileError(
                    f"cannot write {path}: its partial file {partial.name} holds {size} bytes where {sink.written} "
                    f"were written (something else wrote to it); {path} is left as it was"
                )
            try:
                os.replace(partial, path)
            except OSError as exc:
                raise _write_error(path, exc) from exc
        except BaseException:
            partial.unlink(missing_ok=True)
            raise


def write_results(results: Iterable[Mapping[str, Any]], path: str | Path, *, unlocked: bool = False) -> int:
    """Write results as JSONL, one per line; the file appears whole or not at all.

    Lines go to a hidden partial file of this writer's own beside ``path``
    (``.NAME.PID-TOKEN.partial``) as they come, which replaces ``path`` once
    the last one is written and on disk; when the results stop with an error
    (or an interrupt), the partial file is removed and ``path`` is left as it
    was. While it writes, the writer holds a lock (``.NAME.lock``, removed at
    the end): a second job writing the same ``path`` is refused with an
    :class:`OutputFileError` naming it and the first job's PID. The writer
    that takes the lock removes the partial files of writers that no longer
    run (killed, as with SIGKILL). Where the lock cannot be taken at all (a
    file system without locks, such as NFS without a lock daemon), ``path`` is
    refused, as another job writing it would go unseen, unless ``unlocked``.
    ``path`` is checked (:func:`check_output_path`) and locked before the first
    result is asked for, so a path that cannot take the file costs no judgment.

    Args:
        results: JSON-ready results (:func:`match_corpus`).
        path: The JSONL file to write.
        unlocked: Where ``path`` cannot be locked, write it all the same, after a warning (logged).

    Returns:
        How many results were written.

    Raises:
        OSError: When ``path`` cannot take the file (see :func:`check_output_path`).
        OutputFileError: When another job is writing ``path``, ``path`` cannot be locked (without
            ``unlocked``), or a write fails (a full disk): the message names ``path``, which is left as it was.
    """
    count = 0
    with _replacing(Path(path), unlocked=unlocked) as handle:
        for record in results:
            handle.write(_dumps(record))
            count += 1
    return count


async def awrite_results(results: AsyncIterable[Mapping[str, Any]], path: str | Path, *, unlocked: bool = False) -> int:
    """Async twin of :func:`write_results`."""
    count = 0
    with _replacing(Path(path), unlocked=unlocked) as handle:
        async for record in results:
            handle.write(_dumps(record))
            count += 1
    return count
