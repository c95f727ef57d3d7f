"""Where the served graph gets its models, embeddings, verdict cache and named rule sets.

:func:`env_models` is the default: the package's ``LANGCHAIN_TAG_*`` environment variables (the embedded model
unless an endpoint is named), each run's ``judge_model``/``judge_base_url`` over them, and the SQLite verdict
cache of the CLI. Tests and applications with models of their own pass an :class:`AppModels` of their own to
:func:`~langchain_tag.app._graph.build_app_graph`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from langchain_tag.app._context import RunSettings
from langchain_tag.judging.verdict_cache import InMemoryVerdictCache, VerdictCache
from langchain_tag.rules import Rule

__all__ = ["AppModels", "env_models"]


def _no_embeddings() -> Embeddings:
    raise ValueError("the similarity mode needs embeddings, and this graph was built without them")


def _no_rule_sets(name: str, cache: VerdictCache | None) -> list[Rule]:
    raise ValueError(f"no rule set named {name!r} in this graph")


@dataclass(frozen=True)
class AppModels:
    """How a run gets what it needs.

    Attributes:
        executor: The executor model of a run.
        judge: The judge model of a run (its settings name a model or endpoint, or not).
        embeddings: Embeddings for the similarity mode.
        cache: The verdict cache of a run (a fresh in-memory one by default).
        rule_set: The rules of a named rule set; may put reference verdicts in the cache it is given.
    """

    executor: Callable[[RunSettings], BaseChatModel]
    judge: Callable[[RunSettings], Any]
    embeddings: Callable[[], Embeddings] = _no_embeddings
    cache: Callable[[], VerdictCache | None] = field(default=InMemoryVerdictCache)
    rule_set: Callable[[str, VerdictCache | None], list[Rule]] = _no_rule_sets


def _judge_config(settings: RunSettings) -> Any:
    from langchain_tag.local.models import ModelConfig

    overrides: dict[str, Any] = {}
    name = settings.judge_model
    if name is not None and (name.lower() == "local" or name.lower().startswith("local:")):
        overrides["provider"] = "local"
        if ":" in name:
            overrides["local_model"] = name.split(":", 1)[1]
    elif name is not None:
        overrides["judge_model"] = name
    if settings.judge_base_url is not None:
        overrides["provider"] = "openai"
        overrides["base_url"] = settings.judge_base_url
        if settings.judge_base_url.rstrip("/") != (ModelConfig.from_env().base_url or "").rstrip("/"):
            overrides["api_key"] = "not-needed"  # the environment's key goes to the environment's endpoint only
    return ModelConfig.from_env(**overrides)


def _env_executor(settings: RunSettings) -> BaseChatModel:
    from langchain_tag.local.models import get_chat_model

    return get_chat_model(role="executor")


def _env_judge(settings: RunSettings) -> Any:
    from langchain_tag.local.models import get_chat_model

    return get_chat_model(_judge_config(settings), role="judge")


def _env_embeddings() -> Embeddings:
    from langchain_tag.local.models import get_embeddings

    return get_embeddings()


def _env_cache() -> VerdictCache:
    from langchain_tag.judging.verdict_cache import SQLiteVerdictCache
    from langchain_tag.local.weights import default_cache_dir

    return SQLiteVerdictCache(default_cache_dir() / "verdicts.sqlite")


def _shipped_rule_set(name: str, cache: VerdictCache | None) -> list[Rule]:
    from langchain_tag.cli.demo import load_shipped_demo

    if name != "demo":
        raise ValueError(f"no rule set named {name!r}; the shipped one is 'demo'")
    shipped = load_shipped_demo()
    if cache is not None:
        shipped.preload(cache)  # the embedded model's reference verdicts: its calibration costs no call
    return shipped.rules


def env_models() -> AppModels:
    """The models of the package's environment variables, as ``langchain-tag run`` uses them.

    The executor is ``get_chat_model(role="executor")``; the judge ``get_chat_model(role="judge")`` with the
    run's ``judge_model`` (a model name at the endpoint, or ``local[:size]``) and ``judge_base_url`` over
    the environment (``LANGCHAIN_TAG_API_KEY`` is sent to the environment's endpoint only: a run's other
    endpoint gets no key); the verdicts are kept in the CLI's SQLite cache; the ``demo`` rule set is the
    shipped one.
    """
    return AppModels(
        executor=_env_executor,
        judge=_env_judge,
        embeddings=_env_embeddings,
        cache=_env_cache,
        rule_set=_shipped_rule_set,
    )
