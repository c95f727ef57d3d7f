"""The sandbox Pass@1 runs model-written code in.

On Linux with ``unshare`` (util-linux) and user namespaces, :func:`run` starts
the program in fresh user, network, PID, mount, IPC and UTS namespaces. A short
launcher, run as the namespace's root before the program, then:

* mounts empty tmpfs over ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm`` and
  ``/dev/mqueue`` (no host sockets or scratch files are reachable), binds the
  program's own temporary directory back in, and remounts every other mount
  read-only, so the only writable place is that directory;
* sets resource limits: processes, file size, address space, CPU time, no
  core files;
* sets ``no_new_privs`` and enters a second user namespace, which drops every
  capability: the program cannot remount, unmount or leave the namespaces;
* execs Python in isolated mode with a fixed environment (``PATH``, ``HOME`` and
  ``TMPDIR`` pointing at the working directory, ``LANG``): nothing is inherited,
  so no API key is visible.

The network namespace has only a loopback interface that is down: no socket
reaches the host or the internet, whatever module opens it, and child
processes inherit that. The program is PID 1 of its PID namespace: when it
exits, or when it is killed at the timeout, the kernel kills every process
left in the namespace, including children that called ``setsid()``.

The process-count limit is ``RLIMIT_NPROC``; the kernel does not apply it to
processes of the host's root user, so when the benchmark runs as root a pids
cgroup (``pids.max``) is used instead, where one can be created.

Where namespaces are unavailable (not Linux, no ``unshare``, user namespaces
disabled), :func:`run` falls back to resource limits, an empty environment, a
new session killed as a group at the timeout and a prelude that disables the
``socket`` module, and logs a warning once: that fallback is a guard against
accidents, not a sandbox. :func:`sandbox_mode` says which one is in use.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Literal

__all__ = ["FILE_SIZE_LIMIT", "MEMORY_LIMIT", "PROCESS_LIMIT", "SandboxMode", "run", "sandbox_mode"]

logger = logging.getLogger(__name__)

SandboxMode = Literal["namespaces", "limits"]

MEMORY_LIMIT = 2 * 1024**3
"""Address-space limit of the program, in bytes."""

FILE_SIZE_LIMIT = 64 * 1024**2
"""Largest file the program may write, in bytes."""

PROCESS_LIMIT = 16
"""Most processes (and threads) the program may have at once."""

SETUP_FAILED = 125
"""Exit status of the launcher when it cannot set the sandbox up (the reason is on stderr)."""

_UNSHARE_FLAGS = (
    "--user",
    "--map-root-user",
    "--net",
    "--pid",
    "--fork",
    "--kill-child",
    "--mount",
    "--mount-proc",
    "--ipc",
    "--uts",
)
_ENVIRONMENT = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}

# Runs as the namespaces' root, before the program; argv: work nproc fsize memory cpu program-args...
_LAUNCHER = r"""
import ctypes, os, resource, sys

work = sys.argv[1]
nproc, fsize, memory, cpu = (int(v) for v in sys.argv[2:6])
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
KEPT = {2: 2, 4: 4, 8: 8, 1024: 1024, 2048: 2048, 4096: 1 << 21}  # statvfs flag -> mount flag, kept on remount


def fail(what):
    sys.stderr.write(f"sandbox setup failed: {what}: {os.strerror(ctypes.get_errno())}\n")
    os._exit(125)


def mount(source, target, fstype, flags, what):
    args = [None if v is None else v.encode() for v in (source, target, fstype)]
    if libc.mount(*args, flags, None) != 0:
        fail(what)


def mount_points():
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            point = line.split()[4]
            for code in ("\\040", "\\011", "\\012", "\\134"):
                point = point.replace(code, chr(int(code[1:], 8)))
            if point not in points:
                points.append(point)
    return points


mount(None, "/", None, MS_REC | MS_PRIVATE, "private mounts")
fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
for hidden in ("/tmp", "/var/tmp", "/run", "/dev/shm", "/dev/mqueue"):
    if os.path.isdir(hidden) and not os.path.islink(hidden):
        mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "an empty " + hidden)
os.makedirs(work, exist_ok=True)
mount(f"/proc/self/fd/{fd}", work, None, MS_BIND, "the working directory")
os.close(fd)
for point in mount_points():
    if point == work:
        continue
    try:
        kept = os.statvfs(point).f_flag
    except OSError:
        continue  # hidden under another mount: out of reach for the program too
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    for stat_flag, mount_flag in KEPT.items():
        if kept & stat_flag:
            flags |= mount_flag
    mount(None, point, None, flags, "read-only " + point)
for name, value in (("RLIMIT_NPROC", nproc), ("RLIMIT_FSIZE", fsize), ("RLIMIT_AS", memory),
                    ("RLIMIT_CPU", cpu), ("RLIMIT_CORE", 0)):
    limit = getattr(resource, name)
    hard = resource.getrlimit(limit)[1]
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(limit, (value, value))
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    fail("no new privileges")
if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER: a namespace in which this process has no capability
    fail("dropping capabilities")
libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: die with the unshare process
os.chdir(work)
env = dict(__ENVIRONMENT__, HOME=work, TMPDIR=work)
os.execve(sys.executable, [sys.executable, "-I", *sys.argv[6:]], env)
""".replace("__ENVIRONMENT__", repr(_ENVIRONMENT))


# Runs before the program in the fallback: network calls raise OSError. It guards against
# accidents only (code can undo it). ``socket.socket`` stays a class (a subclass whose
# constructor raises) so that modules subclassing it at import time, such as ssl, still import.
NETWORK_ERROR = "network disabled in benchmark sandbox"
"""Message of the :class:`OSError` raised by ``socket`` calls in the test process."""

NETWORK_PRELUDE = f"""\
import runpy
import socket
import sys

_MESSAGE = {NETWORK_ERROR!r}


def _no_network(*args, **kwargs):
    raise OSError(_MESSAGE)


class _NoNetworkSocket(socket.socket):
    def __init__(self, *args, **kwargs):
        raise OSError(_MESSAGE)


socket.socket = _NoNetworkSocket
socket.create_connection = _no_network
socket.getaddrinfo = _no_network
del _no_network, _NoNetworkSocket, socket

runpy.run_path(sys.argv[1], run_name="__main__")
"""
"""Written as ``sandbox.py`` beside the program; a clear error message for socket calls in either mode."""


def _unshare() -> str | None:
    return shutil.which("unshare") if sys.platform.startswith("linux") else None


def _launch_command(unshare: str, work: Path, args: Sequence[str], timeout: float) -> list[str]:
    limits = [str(PROCESS_LIMIT), str(FILE_SIZE_LIMIT), str(MEMORY_LIMIT), str(int(timeout) + 2)]
    return [unshare, *_UNSHARE_FLAGS, "--", sys.executable, "-I", "-S", "-c", _LAUNCHER, str(work), *limits, *args]


@functools.cache
def sandbox_mode() -> SandboxMode:
    """``"namespaces"`` when the namespace sandbox works on this machine, else ``"limits"`` (logged once).

    Checked once per process by running an empty program through it.
    """
    unshare = _unshare()
    reason = "not Linux, or no unshare command"
    if unshare is not None:
        with tempfile.TemporaryDirectory(prefix="sandbox-probe-") as tmp:
            (Path(tmp) / "probe.py").write_text("pass\n", encoding="utf-8")
            try:
                probe = subprocess.run(
                    _launch_command(unshare, Path(tmp), ["probe.py"], 10.0),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=False,
                    env=_ENVIRONMENT,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                reason = f"unshare failed: {exc}"
            else:
                if probe.returncode == 0:
                    return "namespaces"
                reason = " ".join((probe.stderr or f"exit status {probe.returncode}").split())[:300]
    logger.warning(
        "Pass@1 sandbox unavailable (%s): model-written code runs with resource limits only; the network, "
        "files outside its directory and processes that leave its group are NOT contained. Run untrusted "
        "code in a container.",
        reason,
    )
    return "limits"


def _pids_cgroup() -> Path | None:
    """A new pids cgroup capped at :data:`PROCESS_LIMIT`, where this process may create one (as root), else ``None``."""
    if os.name != "posix" or os.geteuid() != 0:
        return None
    name = f"langchain-tag-sandbox-{uuid.uuid4().hex[:12]}"
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if not (base / "cgroup.procs").exists():
            continue
        group = base / name
        try:
            group.mkdir()
            (group / "pids.max").write_text(str(PROCESS_LIMIT), encoding="ascii")
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            continue
        return group
    return None


def _remove_cgroup(group: Path | None) -> None:
    if group is None:
        return
    for _ in range(50):  # the kernel reaps the killed namespace asynchronously
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.02)
    logger.debug("cannot remove cgroup %s", group)


def _fallback_limits(timeout: float) -> Callable[[], None]:
    """A ``preexec_fn`` capping memory, CPU time and file size (the fallback's only limits)."""
    import resource  # POSIX only

    def preexec() -> None:
        for name, value in (
            ("RLIMIT_AS", MEMORY_LIMIT),
            ("RLIMIT_CPU", int(timeout) + 2),
            ("RLIMIT_FSIZE", FILE_SIZE_LIMIT),
            ("RLIMIT_CORE", 0),
        ):
            limit = getattr(resource, name, None)
            if limit is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                hard = resource.getrlimit(limit)[1]
                resource.setrlimit(limit, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))

    return preexec


def _join_cgroup(group: Path) -> Callable[[], None]:
    def preexec() -> None:
        (group / "cgroup.procs").write_text("0", encoding="ascii")

    return preexec


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """Kill the process, its direct children (the namespace's PID 1 takes its namespace with it) and its group."""
    with contextlib.suppress(OSError):
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text(encoding="ascii").split()
        for child in children:
            with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                os.kill(int(child), signal.SIGKILL)
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    process.wait()


def run(work: Path, args: Sequence[str], *, timeout: float, stderr: IO[bytes]) -> int | None:
    """Run ``python -I *args`` in ``work`` inside the sandbox.

    Args:
        work: The program's own temporary directory (its working directory and
            the only place it may write).
        args: Python's arguments after ``-I``, e.g. ``["sandbox.py", "program.py"]``.
        timeout: Wall-clock limit in seconds; the whole process tree is killed then.
        stderr: Where the program's stderr goes.

    Returns:
        The exit status, or ``None`` when the program was killed at the timeout.

    Raises:
        OSError: When the process cannot be started.
    """
    mode = sandbox_mode()
    group = _pids_cgroup() if mode == "namespaces" else None
    if mode == "namespaces":
        unshare = _unshare()
        assert unshare is not None  # the mode says it was found
        command = _launch_command(unshare, work, args, timeout)
        preexec = _join_cgroup(group) if group is not None else None
        env = dict(_ENVIRONMENT)
    else:
        command = [sys.executable, "-I", *args]
        preexec = _fallback_limits(timeout) if os.name == "posix" else None
        env = {**_ENVIRONMENT, "HOME": str(work), "TMPDIR": str(work)}
    try:
        process = subprocess.Popen(
            command,
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            start_new_session=os.name == "posix",
            preexec_fn=preexec,  # only joins a cgroup or sets rlimits
        )
        with process:
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_tree(process)
                return None
    finally:
        _remove_cgroup(group)
