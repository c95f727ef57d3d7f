"""How a command ends: its exit statuses, SIGTERM taken as Ctrl-C, a closed standard output, a one-line error."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_JUDGMENTS_FAILED",
    "EXIT_STATUS_HELP",
    "EXIT_STDOUT_CLOSED",
    "EXIT_TERMINATED",
    "Interrupts",
    "Terminated",
    "interrupts_watched",
    "one_line",
    "sigterm_as_interrupt",
    "stdout_to_devnull",
]

EXIT_JUDGMENTS_FAILED = 3
"""Exit status of ``match`` when some judgments failed (unreadable replies or provider errors counted as NO)."""


EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as a shell reports a Unix tool the signal ended."""


EXIT_TERMINATED = 143
"""Exit status after SIGTERM (128 + SIGTERM), which stops a command as Ctrl-C does."""


EXIT_STDOUT_CLOSED = 141
"""Exit status when the reader of standard output went away (128 + SIGPIPE, what ``yes | head -1`` gives ``yes``)."""


EXIT_STATUS_HELP = """\
exit status:
  0    done (match: every judgment was made)
  1    an error, in one line naming the file or setting at fault (--debug shows the traceback)
  2    a usage error: an unknown option, a value out of range (e.g. --threshold 1.5)
  3    match: some judgments failed and were counted NO (listed under "failed")
  130  Ctrl-C; 143 SIGTERM: what was judged stays in the verdict cache, an -o FILE is left as it was
  141  standard output was closed early (e.g. "| head"), as a Unix tool SIGPIPE ends
"""
"""The exit statuses every command shares, for the top-level ``--help``."""


def one_line(exc: BaseException) -> str:
    """The error on one line, URLs redacted; a validation error as its field and message, without pydantic's links."""
    from pydantic import ValidationError

    from langchain_tag.calls._identity import redact_urls  # here, not at import: the CLI starts watching Ctrl-C sooner

    if isinstance(exc, ValidationError):
        parts = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error.get("loc", ()))
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            parts.append(f"{where}: {message}" if where else message)
        text = "; ".join(parts)
    else:
        text = str(exc)
    return redact_urls(" ".join(text.split())) or type(exc).__name__


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that a command stops as on Ctrl-C."""


def _on_sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (a ``KeyboardInterrupt``) in the main thread.

    So a ``kill`` (a job scheduler's, a container's stop) unwinds as Ctrl-C
    does: the partial results file is removed, the verdict cache is closed,
    and the command says what it kept. An interrupt that arrived while a task
    group was starting a task (an HTTP client's, on the job's event loop)
    comes out of the block as itself, not inside the group's exception.
    Outside the main thread nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    except BaseException as exc:
        interrupt = _interrupt_in(exc)
        if interrupt is None or interrupt is exc:
            raise
        raise interrupt from exc
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


class Interrupts:
    """Ctrl-C over a command's run, remembered even where a library swallows it or turns it into another error.

    Python goes on after an interrupt raised in a finalizer ("Exception ignored ... KeyboardInterrupt"), and
    some libraries (pydantic-core building a schema) turn it into an error of their own: :attr:`seen` still says
    the command was interrupted, so it ends as an interrupted one. Once :meth:`settle` is called (the command has
    ended), Ctrl-C is only remembered, so the command's last line is written whole.

    Attributes:
        seen: Whether Ctrl-C came.
    """

    def __init__(self) -> None:
        self.seen = False
        self._raising = True

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        """The ``SIGINT`` handler: remember it and, until :meth:`settle`, raise ``KeyboardInterrupt``."""
        self.seen = True
        if self._raising:
            raise KeyboardInterrupt

    def settle(self) -> None:
        """From now on, Ctrl-C is remembered but raises nothing."""
        self._raising = False


@contextlib.contextmanager
def interrupts_watched() -> Iterator[Interrupts]:
    """Within the block, Ctrl-C raises ``KeyboardInterrupt`` as usual and is remembered (:class:`Interrupts`).

    Outside the main thread, or where Ctrl-C is ignored (a background job of a shell), nothing changes.
    """
    watch = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield watch
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        yield watch
        return
    signal.signal(signal.SIGINT, watch.on_sigint)
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


def _interrupt_in(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt ``exc`` is, or the first one an exception group holds (at any depth)."""
    if isinstance(exc, KeyboardInterrupt):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        if isinstance(inner, BaseException) and (found := _interrupt_in(inner)) is not None:
            return found
    return None


def stdout_to_devnull() -> None:
    """Point standard output at the null device, so the last flush at exit finds no closed pipe to complain of."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
