"""batch submit, status and fetch against a loopback fake of OpenAI's Files and Batches endpoints."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import pytest_socket

from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.batch_api import BatchError, export_openai_batch, import_openai_batch
from langchain_tag.scale.batch_api.client import (
    BATCHES_FILE,
    fetch_openai_batch,
    openai_batch_status,
    submit_openai_batch,
)
from langchain_tag.scale.bulk import InputItem
from tests.helpers.judge_fakes import ok_line, scored_judge

pytestmark = pytest.mark.enable_socket

MODEL = "gpt-4o-mini"
ITEMS = [InputItem(id=f"in-{i}", text=f"def f{i}(x=[]):\n\treturn x  # input {i}") for i in range(1, 4)]


class FakeBatchApi:
    """Files and Batches endpoints: a batch is answered at once (the scored fake judge), complete on its 2nd read."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.posts: list[str] = []
        self.lock = threading.Lock()

    def upload(self, body: bytes, content_type: str) -> dict[str, Any]:
        boundary = content_type.split("boundary=", 1)[1].encode()
        part = next(p for p in body.split(b"--" + boundary) if b'name="file"' in p)
        data = part.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n", 1)[0]
        with self.lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = data
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": 0,
            "filename": "x",
            "purpose": "batch",
        }

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        lines = [json.loads(line) for line in self.files[body["input_file_id"]].decode().splitlines() if line]
        judge = scored_judge()
        answers = "".join(json.dumps(ok_line(line, judge, n)) + "\n" for n, line in enumerate(lines, 1))
        with self.lock:
            batch_id = f"batch_{len(self.batches) + 1}"
            out_id = f"file-out-{batch_id}"
            self.files[out_id] = answers.encode()
            self.batches[batch_id] = {"body": body, "reads": 0, "out": out_id, "total": len(lines)}
        return self.batch(batch_id, created=True)

    def batch(self, batch_id: str, *, created: bool = False) -> dict[str, Any]:
        found = self.batches[batch_id]
        if not created:
            found["reads"] += 1
        done = found["reads"] >= 2
        return {
            "id": batch_id,
            "object": "batch",
            "endpoint": found["body"]["endpoint"],
            "input_file_id": found["body"]["input_file_id"],
            "completion_window": found["body"]["completion_window"],
            "status": "completed" if done else "in_progress",
            "created_at": 0,
            "output_file_id": found["out"] if done else None,
            "error_file_id": None,
            "request_counts": {"total": found["total"], "completed": found["total"] if done else 0, "failed": 0},
        }


@pytest.fixture
def api() -> Iterator[tuple[FakeBatchApi, str]]:
    pytest_socket.socket_allow_hosts(["127.0.0.1"], allow_unix_socket=True)
    fake = FakeBatchApi()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: Any, raw: bytes | None = None) -> None:
            data = raw if raw is not None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            fake.posts.append(self.path)
            if self.path == "/v1/files":
                self._send(200, fake.upload(body, self.headers["Content-Type"]))
            elif self.path == "/v1/batches":
                self._send(200, fake.create(json.loads(body)))
            else:
                self._send(404, {"error": {"message": "no such route"}})

        def do_GET(self) -> None:
            if m := re.fullmatch(r"/v1/batches/([\w-]+)", self.path):
                self._send(200, fake.batch(m.group(1)))
            elif m := re.fullmatch(r"/v1/files/([\w-]+)/content", self.path):
                self._send(200, None, raw=fake.files[m.group(1)])
            else:
                self._send(404, {"error": {"message": "no such route"}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _client(base_url: str) -> Any:
    import openai

    return openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)


def test_submit_status_fetch_import_then_match_makes_no_call(
    tmp_path: Path, rules: list[Rule], api: tuple[FakeBatchApi, str]
) -> None:
    fake, base_url = api
    exporter = ApplicabilityRetriever(llm=scored_judge(), rules=rules, cache=SQLiteVerdictCache(tmp_path / "v.sqlite"))
    paths = export_openai_batch((exporter, ITEMS), tmp_path / "b", model_name=MODEL, max_requests=6)
    assert len(paths) > 1
    client = _client(base_url)
    submitted = submit_openai_batch(tmp_path / "b", client=client)
    assert [b.file for b in submitted] == [p.name for p in paths]
    assert fake.posts.count("/v1/batches") == len(paths) and (tmp_path / "b" / BATCHES_FILE).exists()
    again = submit_openai_batch(tmp_path / "b", client=client)  # a rerun creates nothing twice
    assert fake.posts.count("/v1/batches") == len(paths) and [b.batch_id for b in again] == [
        b.batch_id for b in submitted
    ]
    assert {b.status for b in openai_batch_status(tmp_path / "b", client=client)} == {"in_progress"}
    results = fetch_openai_batch(tmp_path / "b", client=client)  # the second read: completed
    assert [r.name for r in results] == [f"{p.stem}.output.jsonl" for p in paths]

    judge = scored_judge()
    importer = ApplicabilityRetriever(llm=judge, rules=rules, cache=SQLiteVerdictCache(tmp_path / "v.sqlite"))
    summary = import_openai_batch(results, importer, tmp_path / "b", inputs=ITEMS)
    assert summary.complete and summary.recorded == summary.requests
    for item in ITEMS:
        importer.match(item.text)
    assert judge.calls == 0


def test_status_before_submit_and_a_directory_that_is_no_export_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BatchError, match="no batch submitted yet"):
        openai_batch_status(tmp_path, client=object())
    with pytest.raises(BatchError, match="not a batch export directory"):
        submit_openai_batch(tmp_path, client=object())


def test_the_cli_steps_submit_status_and_fetch(
    tmp_path: Path,
    rules: list[Rule],
    api: tuple[FakeBatchApi, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from langchain_tag.cli.main import main

    fake, base_url = api
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    exporter = ApplicabilityRetriever(llm=scored_judge(), rules=rules, cache=SQLiteVerdictCache(tmp_path / "v.sqlite"))
    paths = export_openai_batch((exporter, ITEMS), tmp_path / "b", model_name=MODEL)
    export = str(tmp_path / "b")
    assert main(["batch", "submit", export, "--base-url", base_url]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{paths[0].name}\tbatch_1\tin_progress"]
    assert main(["batch", "status", export, "--base-url", base_url]) == 0
    assert capsys.readouterr().out.split("\t")[2].startswith("in_progress 0/")
    assert main(["batch", "fetch", export, "--base-url", base_url]) == 0
    assert capsys.readouterr().out.splitlines() == [str(tmp_path / "b" / f"{paths[0].stem}.output.jsonl")]
    assert fake.posts.count("/v1/batches") == 1
