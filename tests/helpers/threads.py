"""Work started in several threads at once, each thread's failure kept for the test to report."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_together(work: Callable[[int], None], count: int, *, timeout: float = 60.0) -> list[BaseException]:
    """Run ``work(0)`` ... ``work(count - 1)`` in threads released together; return what they raised.

    A thread that fails before the others are released lets them go at once (the barrier breaks), so a failure
    is reported, never waited on forever.
    """
    start = threading.Barrier(count, timeout=timeout)
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            start.wait()
            work(n)
        except BaseException as exc:  # reported by the caller
            start.abort()
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if any(thread.is_alive() for thread in threads):
        errors.append(TimeoutError(f"a thread still ran after {timeout} s"))
    return errors
