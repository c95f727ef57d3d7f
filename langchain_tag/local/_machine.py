"""What this machine offers the local runtime: its CPU cores, and the instruction sets the prebuilt wheel needs."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["WHEEL_CPU_FLAGS", "default_threads", "missing_cpu_flags"]


def default_threads() -> int:
    """Return the number of CPU cores available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


WHEEL_CPU_FLAGS = ("avx2", "fma", "f16c")
"""The x86 instruction sets the prebuilt ``xllamacpp`` wheel is compiled for (it has no runtime dispatch)."""


def missing_cpu_flags(cpuinfo: str | None = None, machine: str | None = None) -> list[str]:
    """The instruction sets the prebuilt runtime needs that this CPU lacks.

    Args:
        cpuinfo: The text of ``/proc/cpuinfo`` (read when ``None``).
        machine: The machine type (``platform.machine()`` when ``None``).

    Returns:
        The missing flags of :data:`WHEEL_CPU_FLAGS`; empty when all are there, on
        a machine that is not x86-64, or when the CPU's flags cannot be read.
    """
    import platform

    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        return []
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags = set(value.split())
            break
    if not flags:
        return []
    return [f for f in WHEEL_CPU_FLAGS if f not in flags]
