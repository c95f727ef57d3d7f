"""The sync bulk job on an event loop of its own: the async job's pace, its cleanup, a private HTTP client."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_socket
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from langchain_tag.calls._direct import DirectChat
from langchain_tag.calls._own_loop import iterate_on_own_loop, job_async_client
from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule
from langchain_tag.scale.bulk import match_corpus
from tests.helpers.signals import judged, terminate_when
from tests.unit_tests.scale.test_ray_data import LOOPBACK, MODEL, FakeEndpoint

pytestmark = pytest.mark.enable_socket


@pytest.fixture(autouse=True)
def _loopback_only() -> None:
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    found = FakeEndpoint()
    yield found
    found.close()


def test_items_come_in_order_and_an_early_close_runs_the_jobs_cleanup_on_its_loop() -> None:
    events: list[str] = []

    async def job() -> AsyncIterator[int]:
        try:
            for n in range(5):
                await asyncio.sleep(0)
                yield n
        finally:
            events.append(f"cleanup on a running loop: {asyncio.get_running_loop().is_running()}")

    assert list(iterate_on_own_loop(job())) == [0, 1, 2, 3, 4]
    steps = iterate_on_own_loop(job())
    assert [next(steps), next(steps)] == [0, 1]
    steps.close()
    assert events == ["cleanup on a running loop: True"] * 2


def test_an_interrupt_mid_step_cancels_the_step_so_the_job_cleans_up_and_private_clients_close() -> None:
    events: list[str] = []
    model = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key=SecretStr("k"))
    private: list[Any] = []

    async def job() -> AsyncIterator[int]:
        private.append(job_async_client(model))
        try:
            yield 1
            asyncio.get_running_loop().call_soon(_interrupt)
            await asyncio.sleep(10)
            yield 2
        finally:
            events.append("cleanup")

    with pytest.raises(KeyboardInterrupt):
        list(iterate_on_own_loop(job()))
    assert events == ["cleanup"]
    assert private[0] is not None and private[0] is not model.root_async_client and private[0].is_closed()
    assert job_async_client(model) is None  # outside a job: the model's own client


def _interrupt() -> None:
    raise KeyboardInterrupt


def test_an_interrupt_between_a_steps_end_and_its_callback_still_cleans_up_and_comes_out_as_itself() -> None:
    """A signal that lands after a step has ended, before the loop has run the step's done-callback.

    That callback (which stops the loop) is then still queued, and would stop the next run the cleanup makes before
    that run is done ("Event loop stopped before Future completed", not the interrupt).
    """
    events: list[str] = []
    model = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key=SecretStr("k"))
    private: list[Any] = []

    async def job() -> AsyncIterator[int]:
        private.append(job_async_client(model))
        try:
            asyncio.get_running_loop().call_soon(_interrupt)  # runs just before the step's done-callback
            yield 1
            yield 2
        finally:
            await asyncio.sleep(0)  # the job's cleanup waits on the loop (the bulk job's commits the verdicts)
            events.append("cleanup")

    with pytest.raises(KeyboardInterrupt):
        list(iterate_on_own_loop(job()))
    assert events == ["cleanup"]
    assert private[0].is_closed()


def test_an_interrupt_inside_a_request_the_step_awaits_still_cancels_the_others_and_closes_the_clients(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A signal that lands in the code of a request the step awaits ends that request with it.

    The cleanup then cancels the step, which wakes up to the same interrupt and raises it again out of the loop.
    That must not cut the cleanup short: the other requests are still cancelled (their own cleanup runs) and the
    private clients are closed.
    """
    events: list[str] = []
    model = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", api_key=SecretStr("k"))
    private: list[Any] = []

    async def request() -> int:
        await asyncio.sleep(0)
        raise KeyboardInterrupt  # where SIGTERM's handler raises it: in a request's own code

    async def other_request() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            await asyncio.sleep(0)
            events.append("request cancelled")

    async def job() -> AsyncIterator[int]:
        private.append(job_async_client(model))
        in_flight = [asyncio.ensure_future(other_request()) for _ in range(2)]
        yield await asyncio.ensure_future(request())
        await asyncio.gather(*in_flight)

    with pytest.raises(KeyboardInterrupt):
        list(iterate_on_own_loop(job()))
    gc.collect()  # a task destroyed while pending, or with its exception never read, is logged as it goes
    assert events == ["request cancelled"] * 2
    assert private[0].is_closed()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def test_the_sync_bulk_job_runs_on_its_own_loop_with_the_async_pace_and_the_same_records(
    endpoint: FakeEndpoint, rules: list[Rule], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(self: DirectChat, messages: Any) -> Any:
        raise AssertionError("a worker thread sent a request")

    model = ChatOpenAI(model=MODEL, base_url=endpoint.base_url, api_key=SecretStr("k"), max_retries=0)
    endpoint.delay = 0.02
    retriever = ApplicabilityRetriever(
        llm=model, rules=rules, calibration=None, max_concurrency=3, cache=SQLiteVerdictCache(tmp_path / "v.sqlite")
    )
    texts = [f"from os import *\nx = {n}" for n in range(6)]
    with monkeypatch.context() as patched:
        patched.setattr(DirectChat, "send", never)  # the sync client in worker threads is not used
        records = list(match_corpus(texts, retriever, show_progress=False))
    assert endpoint.most_in_flight == 3 and len(endpoint.bodies) == 6 * len(rules)

    def threaded(self: Any) -> bool:
        return False  # as for a model with an HTTP client of its own: worker threads, the sync client

    monkeypatch.setattr(DirectChat, "may_run_on_own_loop", property(threaded))
    fresh = ApplicabilityRetriever(llm=model, rules=rules, calibration=None, max_concurrency=3)
    assert list(match_corpus(texts, fresh, show_progress=False)) == records
    assert len(endpoint.bodies) == 12 * len(rules)  # judged again, through the threads


def test_inside_a_running_event_loop_the_sync_job_keeps_its_threads(endpoint: FakeEndpoint, rules: list[Rule]) -> None:
    model = ChatOpenAI(model=MODEL, base_url=endpoint.base_url, api_key=SecretStr("k"), max_retries=0)
    retriever = ApplicabilityRetriever(llm=model, rules=rules, calibration=None, max_concurrency=2)

    async def notebook_cell() -> list[dict[str, Any]]:  # a notebook runs cells inside its event loop
        return list(match_corpus(["from os import *"], retriever, show_progress=False))

    records = asyncio.run(notebook_cell())
    assert len(records) == 1 and len(endpoint.bodies) == len(rules)


def test_sigterm_stops_a_cli_job_on_its_own_loop_as_ctrl_c_does(
    endpoint: FakeEndpoint, rules: list[Rule], tmp_path: Path
) -> None:
    import json
    import os
    import subprocess
    import sys

    from langchain_tag.rules import save_rules

    endpoint.delay = 0.05
    rule_file = str(save_rules(rules, tmp_path / "rules.jsonl"))
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(json.dumps(f"x = {i}") + "\n" for i in range(40)))
    out, verdicts = tmp_path / "out.jsonl", tmp_path / "v.sqlite"
    argv = ["match", "--inputs", str(inputs), "--rules", rule_file, "-o", str(out), "--verdicts", str(verdicts)]
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
        "LANGCHAIN_TAG_BASE_URL": endpoint.base_url,
        "LANGCHAIN_TAG_MODEL": MODEL,
        "LANGCHAIN_TAG_API_KEY": "k",
    }
    env.pop("LANGCHAIN_TAG_PROVIDER", None)
    code = "import sys; from langchain_tag.cli.main import main; raise SystemExit(main(sys.argv[1:]))"
    child = subprocess.Popen(
        [sys.executable, "-c", code, *argv, "--raw", "--max-concurrency", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    err = terminate_when(child, lambda: judged(verdicts) >= 10, wait=60)
    assert child.returncode == 143, err
    assert "terminated" in err and "Traceback" not in err and not out.exists()
    assert not verdicts.with_name("v.sqlite-wal").exists()  # the cache was closed, not cut off
    kept = judged(verdicts)
    assert 10 <= kept < 40 * len(rules) and kept <= len(endpoint.bodies)  # what was judged stays judged
