"""A local OpenAI-compatible llama.cpp server for a GGUF model.

The server is llama.cpp's native C++ HTTP server, shipped in the prebuilt
``xllamacpp`` wheel, run in a child process bound to ``127.0.0.1``. The rest
of the library talks to it through ``langchain_openai.ChatOpenAI`` exactly as
it would talk to a remote OpenAI-compatible endpoint, so there is one code
path for local and remote models.

Typical use goes through :func:`get_local_server`, which keeps one running
server per model file for the life of the process::

    server = get_local_server("/path/to/model.gguf")
    llm = ChatOpenAI(base_url=server.base_url, api_key="none", model=server.model_name)

The child process exits on :meth:`LocalLlamaServer.stop`, at interpreter exit,
and also by itself when the parent process dies (it watches its stdin pipe).

Run as a module (``python -m langchain_tag.local.server --model PATH``) it is
the child process itself (:mod:`langchain_tag.local._server_child`).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections import deque
from pathlib import Path
from types import TracebackType

from langchain_tag.errors import TagError
from langchain_tag.local._machine import default_threads, missing_cpu_flags
from langchain_tag.local._server_child import DEFAULT_CTX, serve
from langchain_tag.local._server_probe import NO_PROXY_OPENER, healthy, read_ready_line

__all__ = [
    "LocalLlamaServer",
    "LocalServerError",
    "default_threads",
    "get_local_server",
    "missing_cpu_flags",
    "read_metrics",
    "stop_all_servers",
]

logger = logging.getLogger(__name__)


class LocalServerError(TagError, RuntimeError):
    """Raised when the local model server cannot be started or dies."""


class LocalLlamaServer:
    """An OpenAI-compatible llama.cpp server for one GGUF, in a child process.

    Attributes:
        model_path: The GGUF file served.
        model_name: Model name reported by ``/v1/models`` (and accepted in
            requests).
        n_ctx: Context window in tokens.
        n_threads: CPU threads used for prompt processing and generation.
        startup_timeout: Seconds to wait for the model to load.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        model_name: str | None = None,
        n_ctx: int = DEFAULT_CTX,
        n_threads: int | None = None,
        startup_timeout: float = 180.0,
        verbose: bool = False,
        env: dict[str, str] | None = None,
    ) -> None:
        """Configure (but do not start) a server.

        Args:
            model_path: Path to a GGUF file.
            model_name: Name to serve the model under; defaults to the file
                stem.
            n_ctx: Context window in tokens.
            n_threads: CPU threads; defaults to the number of available cores.
            startup_timeout: Seconds to wait for the server to become healthy.
            verbose: Log every request (llama.cpp info level) instead of only
                warnings and errors.
            env: Extra environment variables for the child process.
        """
        self.model_path = Path(model_path).expanduser().resolve()
        self.model_name = model_name or self.model_path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.startup_timeout = startup_timeout
        self.verbose = verbose
        self._extra_env = dict(env or {})
        self._process: subprocess.Popen[str] | None = None
        self._address: str | None = None
        self._log_path: Path | None = None
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the child process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL, e.g. ``http://127.0.0.1:PORT/v1``.

        Raises:
            LocalServerError: If the server is not running.
        """
        if not self.running or self._address is None:
            raise LocalServerError(f"The local server for {self.model_path.name} is not running.")
        return f"{self._address}/v1"

    def start(self) -> LocalLlamaServer:
        """Start the server and wait until it answers ``/health``.

        Starting a running server does nothing.

        Returns:
            ``self``.

        Raises:
            LocalServerError: If the runtime is missing, the model file does not
                exist, or the server dies or does not become healthy in time.
        """
        with self._lock:
            if self.running:
                return self
            self._stop_locked()
            if not self.model_path.is_file():
                raise LocalServerError(f"GGUF model file not found: {self.model_path}")
            _require_runtime()
            self._launch()
            try:
                self._wait_until_ready()
            except BaseException:
                self._stop_locked(keep_log=True)  # the error message points at it
                raise
            _LIVE.add(self)
            logger.info("Local model server for %s ready at %s", self.model_path.name, self._address)
            return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server; stopping a stopped server does nothing.

        The child is asked to exit by closing its stdin, then terminated, then
        killed if it is still alive ``timeout`` seconds later.
        """
        with self._lock:
            self._stop_locked(timeout)

    def __enter__(self) -> LocalLlamaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self._address if self.running else "stopped"
        return f"LocalLlamaServer({str(self.model_path)!r}, {state})"

    # -- internals ---------------------------------------------------------

    def _child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        # Without thread binding, llama.cpp's OpenMP workers on small machines
        # sometimes run 10-100x slower; binding must be set before load.
        env.setdefault("OMP_PROC_BIND", "true")
        env.setdefault("OMP_NUM_THREADS", str(self.n_threads))
        env.update(self._extra_env)
        return env

    def _launch(self) -> None:
        fd, log_name = tempfile.mkstemp(prefix="langchain-tag-server-", suffix=".log")
        self._log_path = Path(log_name)
        cmd = [
            sys.executable,
            "-m",
            "langchain_tag.local.server",
            "--model",
            str(self.model_path),
            "--name",
            self.model_name,
            "--ctx",
            str(self.n_ctx),
            "--threads",
            str(self.n_threads),
        ]
        if self.verbose:
            cmd.append("--verbose")
        logger.info("Starting local model server: %s", " ".join(cmd))
        with os.fdopen(fd, "w") as log:
            self._process = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=self._child_env(),
                text=True,
                close_fds=True,
            )

    def _wait_until_ready(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        address = read_ready_line(self._process, deadline)
        if address is None:
            # stdout closes a moment before the exit status is available.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)
            if self._process.poll() is not None:
                raise self._died("exited during start-up")
            raise self._died(f"did not load the model within {self.startup_timeout:.0f} s")
        self._address = address
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise self._died("exited during start-up")
            if healthy(f"{address}/health"):
                return
            time.sleep(0.2)
        raise self._died(f"was not healthy within {self.startup_timeout:.0f} s")

    def _died(self, what: str) -> LocalServerError:
        code = self._process.poll() if self._process else None
        status = f" (exit code {code})" if code is not None else ""
        return LocalServerError(
            f"Local model server for {self.model_path} {what}{status}. "
            f"Last lines of its log ({self._log_path}):\n{self.log_tail()}"
        )

    def metrics(self) -> dict[str, float]:
        """The server's cumulative counters (llama.cpp ``/metrics``), e.g. for benchmarks.

        Keys drop the ``llamacpp:`` prefix: ``prompt_tokens_total`` (prompt
        tokens actually evaluated, i.e. after prefix-cache reuse),
        ``prompt_seconds_total``, ``tokens_predicted_total``,
        ``tokens_predicted_seconds_total``, ``n_decode_total``, ...

        Raises:
            LocalServerError: When the server is not running or does not answer.
        """
        if not self.running or self._address is None:
            raise LocalServerError("the local model server is not running")
        return read_metrics(f"{self._address}/metrics")

    def log_tail(self, lines: int = 30) -> str:
        """Return the last ``lines`` lines of the server's log."""
        if self._log_path is None or not self._log_path.exists():
            return "<no log>"
        with self._log_path.open(encoding="utf-8", errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines)).rstrip() or "<empty log>"

    def _stop_locked(self, timeout: float = 10.0, *, keep_log: bool = False) -> None:
        _LIVE.discard(self)
        process, self._process, self._address = self._process, None, None
        if process is not None:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()  # the child exits when its stdin closes
            try:
                process.wait(timeout=min(2.0, timeout))
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=timeout)
            logger.info("Local model server for %s stopped", self.model_path.name)
        if self._log_path is not None and not keep_log:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None


def read_metrics(url: str) -> dict[str, float]:
    """Parse a llama.cpp ``/metrics`` page (Prometheus text) into ``{name: value}``.

    Raises:
        LocalServerError: When the page cannot be fetched.
    """
    try:
        with NO_PROXY_OPENER.open(url, timeout=5) as response:
            text = response.read().decode("utf-8")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise LocalServerError(f"cannot read server metrics from {url}: {exc}") from exc
    values: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            values[name.removeprefix("llamacpp:")] = float(value)
        except ValueError:
            continue
    return values


def _require_runtime() -> None:
    import importlib.util

    missing = missing_cpu_flags()
    if missing:
        raise LocalServerError(
            f"This CPU lacks {', '.join(f.upper() for f in missing)}, which the prebuilt llama.cpp runtime "
            "(xllamacpp) needs, so the embedded model cannot run here. Serve the model with a llama.cpp built "
            "on this machine (llama-server -m MODEL.gguf) or any other OpenAI-compatible server, and point the "
            "package at it: LANGCHAIN_TAG_PROVIDER=openai, LANGCHAIN_TAG_BASE_URL=http://HOST:PORT/v1."
        )
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalServerError(
            "The local model runtime is not installed. Install it with:\n"
            "    pip install xllamacpp==2026.10.11549\n"
            "or use a remote OpenAI-compatible endpoint "
            "(LANGCHAIN_TAG_PROVIDER=openai, LANGCHAIN_TAG_BASE_URL=...)."
        )


# -- one server per model, per process -------------------------------------

_SERVERS: dict[Path, LocalLlamaServer] = {}
_SERVERS_LOCK = threading.Lock()
_LIVE: weakref.WeakSet[LocalLlamaServer] = weakref.WeakSet()  # every started server


def get_local_server(
    model_path: str | os.PathLike[str],
    *,
    n_ctx: int = DEFAULT_CTX,
    n_threads: int | None = None,
    startup_timeout: float = 180.0,
) -> LocalLlamaServer:
    """Return the running shared server for ``model_path``, starting it if needed.

    Servers are keyed by the resolved model path; the first call's settings
    win. All shared servers are stopped at interpreter exit.

    Args:
        model_path: Path to a GGUF file.
        n_ctx: Context window in tokens.
        n_threads: CPU threads; defaults to the number of available cores.
        startup_timeout: Seconds to wait for the server to become healthy.

    Returns:
        A started :class:`LocalLlamaServer`.

    Raises:
        LocalServerError: If the server cannot be started.
    """
    key = Path(model_path).expanduser().resolve()
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None:
            server = LocalLlamaServer(key, n_ctx=n_ctx, n_threads=n_threads, startup_timeout=startup_timeout)
            _SERVERS[key] = server
    return server.start()


def stop_all_servers() -> None:
    """Stop every server started in this process (shared or not)."""
    with _SERVERS_LOCK:
        servers = {*_SERVERS.values(), *_LIVE}
        _SERVERS.clear()
    for server in servers:
        try:
            server.stop()
        except Exception:  # pragma: no cover - best effort at exit
            logger.exception("Failed to stop %r", server)


atexit.register(stop_all_servers)


if __name__ == "__main__":
    sys.exit(serve())
