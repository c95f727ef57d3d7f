"""The example application served by ``langgraph dev`` on 127.0.0.1, driven with ``langgraph-sdk``.

The server runs the example folder's ``langgraph.json`` (copied to a temporary folder with its ``.env``, as the
README has a user do) in a child process; its models are an OpenAI-compatible fake on 127.0.0.1 that answers
from the prompt text (:mod:`tests.helpers.app_fakes`). The child may reach the loopback address only
(:mod:`tests.helpers.loopback_only`); the test stops it, and every wait is bounded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_socket

from langchain_tag.rules import Rule
from tests.helpers.app_fakes import STUBBORN, given_ids, is_judge_prompt, openai_reply
from tests.helpers.chat_endpoint import ChatEndpoint

pytest.importorskip("langgraph_api", reason="langgraph dev's in-memory server: pip install 'langgraph-cli[inmem]'")
langgraph_sdk = pytest.importorskip("langgraph_sdk")

pytestmark = pytest.mark.enable_socket

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "langgraph_app"
LOOPBACK = ["127.0.0.1", "::1"]
STARTUP_SECONDS = 90
RUN_SECONDS = 60
CODE = "def f(x=[]):  flag:R-004\n\ttry: pass  flag:R-003\nexcept: pass  flag:R-005"


class FakeEndpoint(ChatEndpoint):
    """The models: :func:`openai_reply` on 127.0.0.1, every request kept."""

    def __init__(self) -> None:
        super().__init__(openai_reply)

    @property
    def prompts(self) -> list[str]:
        return ["\n\n".join(str(m["content"]) for m in body["messages"]) for body in self.bodies]

    def executor_prompts(self) -> list[str]:
        return [p for p in self.prompts if not is_judge_prompt(p)]

    def judge_requests_streamed(self) -> int:
        return sum(
            1 for p, body in zip(self.prompts, self.bodies, strict=True) if is_judge_prompt(p) and body.get("stream")
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ready(url: str, child: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if child.poll() is not None:
            pytest.fail(f"langgraph dev exited with {child.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"langgraph dev did not answer /ok within {STARTUP_SECONDS} s:\n{log.read_text()[-4000:]}")


def _stop(child: subprocess.Popen[bytes]) -> None:
    """Stop the server and everything it started (it leads its own process group)."""
    if child.poll() is None:
        os.killpg(child.pid, signal.SIGTERM)
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=15)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeEndpoint, Path]]:
    """The example app served on 127.0.0.1 with the fake endpoint as its models: ``(url, endpoint, refused log)``."""
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    app = tmp_path_factory.mktemp("langgraph_app")
    shutil.copy(EXAMPLE / "langgraph.json", app)
    shutil.copy(EXAMPLE / ".env.example", app / ".env")  # the README's `cp .env.example .env`
    endpoint = FakeEndpoint()
    port = _free_port()
    refused, log = app / "refused.log", app / "server.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "helpers" / "loopback_only"), str(ROOT)]),
        "LOOPBACK_ONLY_LOG": str(refused),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGCHAIN_TAG_BASE_URL": endpoint.base_url,
        "LANGCHAIN_TAG_API_KEY": "not-needed",
        "LANGCHAIN_TAG_MODEL": "fake",
        "LANGCHAIN_TAG_CACHE_DIR": str(app / "cache"),
        "LANGCHAIN_TAG_MAX_RETRIES": "0",
    }
    for name in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_TRACING", "OPENAI_API_KEY"):
        env.pop(name, None)
    command = [sys.executable, "-m", "langgraph_cli", "dev", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--no-browser", "--no-reload"]
    with open(log, "wb") as out:
        child = subprocess.Popen(
            command, cwd=app, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _ready(url, child, log)
        yield url, endpoint, refused
    finally:
        _stop(child)
        endpoint.close()


@pytest.fixture
async def client(served: tuple[str, FakeEndpoint, Path]) -> AsyncIterator[Any]:
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    client = langgraph_sdk.get_client(url=served[0], timeout=RUN_SECONDS)
    yield client


def _rules(rules: list[Rule]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in rules]


async def _parts(stream: AsyncIterator[Any]) -> list[tuple[str, Any]]:
    return [(part.event, part.data) async for part in stream]


async def test_a_served_run_streams_values_updates_and_progress_and_returns_the_output_schema(
    client: Any, served: tuple[str, FakeEndpoint, Path], rules: list[Rule]
) -> None:
    thread = await client.threads.create()
    text = CODE + "\n# an input no other test judges: none of its verdicts is in the cache"
    stream = client.runs.stream(
        thread["thread_id"], "tag", input={"input": text, "rules": _rules(rules)}, context={"check_rounds": 1},
        stream_mode=["values", "updates", "custom", "messages-tuple"],
    )  # fmt: skip
    parts = await _parts(stream)
    events = [event for event, _ in parts]
    assert "error" not in events, parts
    updates = [next(iter(data)) for event, data in parts if event == "updates"]
    assert updates == ["match", "review", "execute", "check", "execute", "check"]
    progress = [data for event, data in parts if event == "custom"]
    match = [e for e in progress if e["stage"] == "match"]
    assert [e["judged"] for e in match] == [0, 1, 2, 3, 4, 5, 5] and match[-1]["matched"] == 3
    assert {e["stage"] for e in progress} == {"match", "check"}
    tokens = "".join(str(data[0].get("content", "")) for event, data in parts if event.startswith("messages"))
    assert "# given:" in tokens and "YES" not in tokens and "NO" not in tokens  # the executor streams, the judge never
    values = [data for event, data in parts if event == "values"][-1]
    assert [r["rule_id"] for r in values["matched"]] == ["R-003", "R-004", "R-005"]
    assert [r["score"] for r in values["matched"]] == pytest.approx([0.9] * 3)  # read from the logprobs
    assert values["rounds"] == 2 and [r["rule_id"] for r in values["findings"]] == [STUBBORN]
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"]["output"] == values["output"] and given_ids(values["output"]) == [STUBBORN]
    assert served[1].judge_requests_streamed() == 0


async def test_a_served_review_interrupts_and_the_executor_gets_exactly_the_edited_list(
    client: Any, served: tuple[str, FakeEndpoint, Path], rules: list[Rule]
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    context = {"review": True, "check_rounds": 0}
    first = await _parts(
        client.runs.stream(thread_id, "tag", input={"input": CODE, "rules": _rules(rules)}, context=context,
                           stream_mode=["updates"])
    )  # fmt: skip
    interrupts = [data["__interrupt__"] for event, data in first if event == "updates" and "__interrupt__" in data]
    assert len(interrupts) == 1
    payload = interrupts[0][0]["value"]
    assert payload["kind"] == "tag_review"
    assert [r["rule_id"] for r in payload["matched"]] == ["R-003", "R-004", "R-005"]
    assert [r["rule_id"] for r in payload["below"]] == ["R-001", "R-002"]
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["review"]

    asked = len(served[1].executor_prompts())
    decision = {"drop": ["R-004", "R-005"], "add": ["R-002"], "reviewer": "ana"}
    resumed = await _parts(client.runs.stream(thread_id, "tag", command={"resume": decision}, stream_mode=["values"]))
    assert "error" not in [event for event, _ in resumed], resumed
    values = [data for event, data in resumed if event == "values"][-1]
    assert given_ids(values["output"]) == ["R-003", "R-002"]
    assert [r["rule_id"] for r in values["matched"]] == ["R-003", "R-002"]
    assert values["review"]["reviewer"] == "ana" and values["review"]["dropped"] == ["R-004", "R-005"]
    (prompt,) = served[1].executor_prompts()[asked:]
    by_id = {r.rule_id: r for r in rules}
    for rule_id, rule in by_id.items():
        assert (rule.action in prompt) == (rule_id in {"R-003", "R-002"})


async def test_the_server_gives_studio_the_readable_schemas(client: Any) -> None:
    (assistant,) = await client.assistants.search(graph_id="tag")
    schemas = await client.assistants.get_schemas(assistant["assistant_id"])
    assert set(schemas["input_schema"]["properties"]) == {"input", "rules"}
    assert set(schemas["output_schema"]["properties"]) == {"output", "matched", "findings", "rounds", "mode", "review"}
    context = schemas["context_schema"]["properties"]
    assert {"judge_model", "threshold", "rules_file", "rule_set", "mode", "check_rounds", "review"} <= set(context)
    assert all(field.get("description") for field in context.values())


async def test_a_bad_setting_fails_the_run_not_the_server(
    client: Any, served: tuple[str, FakeEndpoint, Path], rules: list[Rule]
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    parts = await _parts(
        client.runs.stream(thread_id, "tag", input={"input": CODE, "rules": _rules(rules)}, context={"mode": "bm25"})
    )
    errors = [data for event, data in parts if event == "error"]
    assert len(errors) == 1 and "context key 'mode': 'bm25' is not a mode" in json.dumps(errors[0])
    again = await client.runs.wait(thread_id, "tag", input={"input": CODE, "rules": _rules(rules)},
                                   context={"mode": "all_rules", "check_rounds": 0})  # fmt: skip
    assert given_ids(again["output"]) == ["R-001", "R-002", "R-003", "R-004", "R-005"]


async def _error(client: Any, rules: list[Rule], context: dict[str, Any]) -> dict[str, Any]:
    """The one error event of a run on a new thread with ``context``."""
    thread_id = (await client.threads.create())["thread_id"]
    parts = await _parts(
        client.runs.stream(thread_id, "tag", input={"input": CODE, "rules": _rules(rules)}, context=context)
    )
    errors = [data for event, data in parts if event == "error"]
    assert len(errors) == 1, parts
    return dict(errors[0])


@pytest.mark.parametrize(
    ("context", "key", "meant"),
    [({"treshold": 0.99}, "treshold", "threshold"), ({"check_round": 0}, "check_round", "check_rounds")],
)
async def test_a_misspelt_context_key_fails_the_served_run_naming_it(
    client: Any, rules: list[Rule], context: dict[str, Any], key: str, meant: str
) -> None:
    error = await _error(client, rules, context)
    assert error["error"] == "ContextError"
    assert f"unknown context key {key!r} (did you mean {meant!r}?)" in error["message"]


async def test_a_rules_file_the_server_cannot_read_names_the_key_and_path(
    client: Any, served: tuple[str, FakeEndpoint, Path], tmp_path: Path
) -> None:
    for path in (tmp_path / "no-such-rules.jsonl", tmp_path):
        thread_id = (await client.threads.create())["thread_id"]
        parts = await _parts(
            client.runs.stream(thread_id, "tag", input={"input": CODE}, context={"rules_file": str(path)})
        )
        errors = [data for event, data in parts if event == "error"]
        assert len(errors) == 1, parts
        assert errors[0]["error"] == "ContextError" and errors[0]["message"].startswith("context key 'rules_file': ")
        assert str(path) in errors[0]["message"]


async def test_the_served_review_offers_conditions_and_sources_and_studio_a_rule_form(
    client: Any, rules: list[Rule]
) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    first = await _parts(
        client.runs.stream(thread_id, "tag", input={"input": CODE, "rules": _rules(rules)},
                           context={"review": True, "check_rounds": 0}, stream_mode=["updates"])
    )  # fmt: skip
    (payload,) = [d["__interrupt__"][0]["value"] for e, d in first if e == "updates" and "__interrupt__" in d]
    by_id = {r.rule_id: r for r in rules}
    for offered in payload["matched"] + payload["below"]:
        assert offered["condition"] == by_id[offered["rule_id"]].condition
        assert offered["source"]["text"] == by_id[offered["rule_id"]].source_text
    (assistant,) = await client.assistants.search(graph_id="tag")
    schema = (await client.assistants.get_schemas(assistant["assistant_id"]))["input_schema"]
    (listed,) = [s for s in schema["properties"]["rules"].get("anyOf", []) if s.get("type") == "array"]
    item = schema["$defs"][listed["items"]["$ref"].rsplit("/", 1)[1]]
    assert set(item["required"]) == {"rule_id", "rule_name", "condition", "action"}


def test_the_readme_sdk_example_runs_against_the_served_graph(served: tuple[str, FakeEndpoint, Path]) -> None:
    env = {**os.environ, "LANGGRAPH_URL": served[0], "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "drive.py")], capture_output=True, text=True, timeout=RUN_SECONDS, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    # The shipped demo rules, none flagged by the example's code: judged one by one (the judge's calls go
    # straight through its client here, no observer asking for messages), none matched, none given.
    assert [line for line in lines if line.startswith("match: ")][-1] == "match: 10/10 judged, 0 matched"
    assert "matched: []" in lines and "executor got: [] in 1 round(s)" in lines


def test_the_server_never_tried_to_leave_the_machine(served: tuple[str, FakeEndpoint, Path]) -> None:
    refused = served[2]
    assert not refused.exists() or refused.read_text() == ""
