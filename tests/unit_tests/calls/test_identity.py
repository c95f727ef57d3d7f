"""A model's identity: the model behind a local endpoint, not its URL; remote endpoints kept apart."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import pytest_socket
from langchain_openai import ChatOpenAI

from langchain_tag.calls import _identity as identity
from langchain_tag.calls._identity import IDENTITY_METADATA_KEY, model_identity
from tests.helpers.loopback_server import LoopbackServer, as_json

LOOPBACK = ["127.0.0.1", "::1"]


class ModelsServer(LoopbackServer):
    """A fake OpenAI-compatible ``GET /v1/models`` on 127.0.0.1 reporting the models it was given.

    Its first ``stalls`` requests are answered ``stall`` seconds late (a busy server).
    """

    def __init__(self, *entries: dict[str, Any], stalls: int = 0, stall: float = 0.0) -> None:
        listing = {"object": "list", "data": list(entries)}

        def answer(path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
            if len(self.paths) <= stalls:
                time.sleep(stall)
            return as_json(*((200, listing) if path.startswith("/v1/models") else (404, {})))

        super().__init__(answer, gets=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/v1"


@pytest.fixture(autouse=True)
def _fresh_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(identity, "_SERVED", {}, raising=False)


@pytest.fixture
def servers() -> Iterator[list[ModelsServer]]:
    started: list[ModelsServer] = []
    yield started
    for server in started:
        server.close()


def _local(url: str, model: str = "local-judge") -> SimpleNamespace:
    return SimpleNamespace(model_name=model, openai_api_base=url)


@pytest.mark.enable_socket
def test_the_same_model_on_two_loopback_ports_and_under_localhost_is_one_identity(
    servers: list[ModelsServer],
) -> None:
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    gguf = {"id": "/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "object": "model", "meta": {"n_params": 1}}
    first, restarted = ModelsServer(gguf), ModelsServer(gguf)
    servers += [first, restarted]
    one = model_identity(_local(first.url()))
    assert one == "local-judge@qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert "qwen2.5-coder-1.5b" in one.lower()  # the shipped default calibrations match on it
    assert model_identity(_local(restarted.url())) == one
    assert model_identity(_local(first.url("localhost"))) == one
    assert "127.0.0.1" not in one and str(first.port) not in one
    # Asked once per endpoint: a second judge of the same endpoint does not ask again.
    asked = len(first.paths)
    model_identity(_local(first.url()))
    model_identity(_local(first.url("localhost")))
    assert len(first.paths) == asked == 2 and set(first.paths) == {"/v1/models"}


@pytest.mark.enable_socket
def test_two_different_served_models_are_two_identities(servers: list[ModelsServer]) -> None:
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    small = ModelsServer({"id": "qwen-1.5b.gguf"})
    large = ModelsServer({"id": "qwen-7b.gguf"})
    vllm = ModelsServer({"id": "other", "root": "/x"}, {"id": "Qwen/Qwen2.5-7B", "root": "/weights/qwen7b-awq"})
    servers += [small, large, vllm]
    assert model_identity(_local(small.url())) != model_identity(_local(large.url()))
    assert model_identity(_local(vllm.url(), "Qwen/Qwen2.5-7B")) == "Qwen/Qwen2.5-7B@Qwen/Qwen2.5-7B (qwen7b-awq)"


@pytest.mark.enable_socket
def test_a_real_chat_openai_on_a_local_server_is_named_by_its_model(servers: list[ModelsServer]) -> None:
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    server = ModelsServer({"id": "judge.gguf"})
    servers.append(server)
    llm = ChatOpenAI(model="judge", base_url=server.url("localhost"), api_key="k")  # type: ignore[arg-type]
    assert model_identity(llm) == "judge@judge.gguf"


@pytest.mark.enable_socket
def test_a_server_too_busy_to_answer_at_once_is_asked_again(
    servers: list[ModelsServer], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A lookup that times out is tried again, so a busy server does not change the judge's identity."""
    pytest_socket.socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    monkeypatch.setattr(identity, "LOOKUP_TIMEOUT", 0.2)
    busy = ModelsServer({"id": "judge.gguf"}, stalls=1, stall=0.6)
    servers.append(busy)
    assert model_identity(_local(busy.url(), "judge")) == "judge@judge.gguf"
    assert len(busy.paths) == 2 and not caplog.records

    stuck = ModelsServer({"id": "judge.gguf"}, stalls=99, stall=0.4)
    servers.append(stuck)
    with caplog.at_level(logging.WARNING, logger="langchain_tag.calls._identity"):
        assert model_identity(_local(stuck.url(), "judge")) == "judge"
    assert len(stuck.paths) == identity.LOOKUP_ATTEMPTS
    assert "did not answer within" in caplog.text and IDENTITY_METADATA_KEY in caplog.text


def test_without_a_server_or_with_sockets_blocked_the_identity_is_the_model_name_at_once() -> None:
    started = time.monotonic()
    # Sockets are blocked in unit tests: the lookup fails at once and quietly.
    assert model_identity(_local("http://127.0.0.1:41234/v1", "qwen-1.5b.gguf")) == "qwen-1.5b.gguf"
    assert model_identity(_local("http://localhost:41235/v1/", "qwen-1.5b.gguf")) == "qwen-1.5b.gguf"
    assert model_identity(_local("http://user:pw@192.168.1.20:8000/v1", "m")) == "m"
    assert time.monotonic() - started < 2.0


def test_remote_providers_keep_their_url_and_stay_apart_from_a_local_model_of_the_same_name() -> None:
    remote = SimpleNamespace(model_name="deepseek-chat", openai_api_base="https://api.deepseek.com/v1/")
    assert model_identity(remote) == "https://api.deepseek.com/v1/deepseek-chat"
    openai = ChatOpenAI(model="gpt-4o-mini", api_key="k")  # type: ignore[arg-type]
    assert model_identity(openai) == "https://api.openai.com/v1/gpt-4o-mini"
    assert model_identity(openai) != model_identity(_local("http://127.0.0.1:8080/v1", "gpt-4o-mini"))
    keyed = SimpleNamespace(model_name="m", openai_api_base="https://u:secret@llm.example.test/v1?api-key=s3")
    assert "secret" not in model_identity(keyed) and "s3" not in model_identity(keyed)


def test_an_explicit_identity_wins_over_the_endpoint() -> None:
    marked = SimpleNamespace(
        model_name="qwen-1.5b.gguf", openai_api_base="http://127.0.0.1:41234/v1", metadata={IDENTITY_METADATA_KEY: "q"}
    )
    assert model_identity(marked) == "q"
    remote = ChatOpenAI(model="gpt-4o-mini", api_key="k", metadata={IDENTITY_METADATA_KEY: "mine"})  # type: ignore[arg-type]
    assert model_identity(remote) == "mine"


def test_redacting_filter_masks_credentials_in_message_and_args() -> None:
    from langchain_tag.calls._identity import RedactingFilter

    record = logging.LogRecord(
        "httpx", logging.INFO, __file__, 1, 'HTTP Request: %s %s "%s %d %s"',
        ("POST", "http://user:pw@h:1/v1/chat/completions?api-key=s3", "HTTP/1.1", 200, "OK"), None,
    )  # fmt: skip
    assert RedactingFilter().filter(record)
    text = record.getMessage()
    assert "pw" not in text and "s3" not in text and "200 OK" in text and "***@h:1" in text
