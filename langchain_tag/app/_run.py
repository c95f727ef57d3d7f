"""What the nodes of a run share: its verdict cache, judge model, judges and executor, built once per settings.

Every node of the served graph reads the run's settings (recorded in the thread's state); the resources they
need are kept here by those settings, so the match, each execute round and each check of one run use one
verdict cache, one judge model, one retriever (one judge state) per question asked, and one executor chain.
A few settings' worth are kept (least recently used dropped), so a graph serving many runs holds no more.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, Literal, TypeVar

from langchain_core.runnables import Runnable

from langchain_tag.app._context import RunSettings
from langchain_tag.app._models import AppModels
from langchain_tag.executors import executor_chain
from langchain_tag.judging.verdict_cache import VerdictCache
from langchain_tag.retrievers import ApplicabilityRetriever, RelevanceRetriever
from langchain_tag.rules import Rule

__all__ = ["KEPT", "Question", "RunResources"]

KEPT = 8
"""How many distinct settings' resources are kept."""

Question = Literal["applicability", "relevance"]
"""The question a judge asks of a rule: whether its condition holds, or whether it is relevant."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Kept(Generic[K, V]):
    """Values made once per key, the least recently used dropped beyond ``size`` (thread-safe)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, make: Callable[[], V]) -> V:
        with self._lock:  # held while making: one value per key, however many nodes ask at once
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            value = self._values[key] = make()
            if len(self._values) > self._size:
                self._values.popitem(last=False)
            return value


class RunResources:
    """The resources of runs, by their settings (see the module docstring).

    Args:
        models: Where the resources come from.
        kept: How many distinct settings' resources are kept.
    """

    def __init__(self, models: AppModels, *, kept: int = KEPT) -> None:
        self.models = models
        self._caches: _Kept[RunSettings, VerdictCache | None] = _Kept(kept)
        self._judges: _Kept[RunSettings, Any] = _Kept(kept)
        self._retrievers: _Kept[tuple[RunSettings, Question, tuple[str, ...]], ApplicabilityRetriever] = _Kept(kept)
        self._executors: _Kept[RunSettings, Runnable[dict[str, Any], str]] = _Kept(kept)

    def cache(self, settings: RunSettings) -> VerdictCache | None:
        """The verdict cache of runs with these settings."""
        return self._caches.get(settings, self.models.cache)

    def judge_model(self, settings: RunSettings) -> Any:
        """The judge model (its calls never stream: the judge binds ``stream=False``, ``configure_judge``)."""
        return self._judges.get(settings, lambda: self.models.judge(settings))

    def retriever(self, settings: RunSettings, rules: Sequence[Rule], question: Question) -> ApplicabilityRetriever:
        """The judge of ``rules`` asking ``question`` (``relevance``: the mode's baseline), with the run's threshold."""
        kind = RelevanceRetriever if question == "relevance" else ApplicabilityRetriever
        key = (settings, question, tuple(rule.model_dump_json() for rule in rules))
        return self._retrievers.get(
            key,
            lambda: kind(
                llm=self.judge_model(settings),
                rules=list(rules),
                threshold=settings.threshold,
                cache=self.cache(settings),
            ),
        )

    def executor(self, settings: RunSettings) -> Runnable[dict[str, Any], str]:
        """The executor chain of runs with these settings."""
        return self._executors.get(
            settings, lambda: executor_chain(self.models.executor(settings), executor=settings.executor)
        )
