from __future__ import annotations

import pytest

from langchain_tag.app._context import settings_from_context
from langchain_tag.app._models import _judge_config, env_models


@pytest.fixture
def endpoint_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "LANGCHAIN_TAG_BASE_URL": "http://127.0.0.1:9/v1",
        "LANGCHAIN_TAG_API_KEY": "sk-env",
        "LANGCHAIN_TAG_MODEL": "exec-model",
    }.items():
        monkeypatch.setenv(name, value)


@pytest.mark.usefixtures("endpoint_env")
def test_the_judge_is_the_environments_unless_the_run_names_another() -> None:
    config = _judge_config(settings_from_context(None))
    assert (config.provider, config.base_url, config.api_key, config.model_for("judge")) == (
        "openai", "http://127.0.0.1:9/v1", "sk-env", "exec-model",
    )  # fmt: skip
    named = _judge_config(settings_from_context({"judge_model": "judge-model"}))
    assert named.model_for("judge") == "judge-model" and named.model_for("executor") == "exec-model"
    local = _judge_config(settings_from_context({"judge_model": "local:0.5b"}))
    assert (local.provider, local.local_model) == ("local", "0.5b")


@pytest.mark.usefixtures("endpoint_env")
def test_the_environments_key_goes_to_the_environments_endpoint_only() -> None:
    same = _judge_config(settings_from_context({"judge_base_url": "http://127.0.0.1:9/v1/"}))
    other = _judge_config(settings_from_context({"judge_base_url": "http://127.0.0.1:10/v1"}))
    assert same.api_key == "sk-env" and other.api_key == "not-needed" and other.base_url == "http://127.0.0.1:10/v1"


@pytest.mark.usefixtures("endpoint_env")
def test_env_models_make_the_judge_and_executor_of_a_run() -> None:
    pytest.importorskip("langchain_openai")
    models = env_models()
    judge = models.judge(settings_from_context({"judge_model": "judge-model"}))
    executor = models.executor(settings_from_context(None))
    assert (judge.model_name, executor.model_name) == ("judge-model", "exec-model")
    assert judge.max_tokens == 1 and judge.logprobs
