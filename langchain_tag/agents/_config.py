"""The middleware's configuration, checked when it is built: the retriever (or rules and judge), texts, names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.documents import Document

from langchain_tag.cascade_retriever import CascadeRetriever
from langchain_tag.retrievers import ApplicabilityRetriever
from langchain_tag.rules import Rule

__all__ = ["DEFAULT_NAME", "OutagePolicy", "Retriever", "build_retriever", "outage_policy", "state_prefix", "text"]

Retriever = ApplicabilityRetriever | CascadeRetriever
"""What the middleware judges with."""

OutagePolicy = Literal["continue", "error"]
"""What an outage of the judge (every judgment of an input failed) does: go on without rules, or raise."""

DEFAULT_NAME = "TagMiddleware"
"""The name of a middleware built without ``name=`` (its state keys are ``tag_matches``, ...)."""


def _rule(item: Rule | Document | Mapping[str, Any]) -> Rule | Document:
    """A rule given as a mapping read as a :class:`Rule` (its fields checked now); a rule or document as it is."""
    if isinstance(item, Mapping):
        return Rule.model_validate(dict(item))
    return item


def _judge(judge: Any) -> Any:
    """A judge given as a model string (``"openai:gpt-4o-mini"``) made with ``init_chat_model``; others as given."""
    if isinstance(judge, str):
        from langchain.chat_models import init_chat_model

        return init_chat_model(judge)
    return judge


def build_retriever(
    retriever: Any,
    rules: Sequence[Rule | Document | Mapping[str, Any]] | None,
    judge: Any,
    options: Mapping[str, Any],
) -> Retriever:
    """The middleware's retriever: ``retriever`` checked, or an ``ApplicabilityRetriever`` of ``rules`` and ``judge``.

    Raises:
        TypeError: When ``retriever`` is not an ``ApplicabilityRetriever`` or a ``CascadeRetriever``.
        ValueError: When neither or both ways are given, on a rule missing a field, or a retriever option out of
            its range.
    """
    if retriever is None:
        if rules is None or judge is None:
            raise ValueError("TagMiddleware needs a retriever=, or rules= and judge=")
        if isinstance(rules, str | Mapping | Rule | Document):
            raise TypeError(f"rules= takes a list of rules, got {type(rules).__name__}")
        return ApplicabilityRetriever(llm=_judge(judge), rules=[_rule(item) for item in rules], **options)
    if rules is not None or judge is not None or options:
        raise ValueError("TagMiddleware takes a retriever= or rules= and judge= (with retriever options), not both")
    if not isinstance(retriever, ApplicabilityRetriever | CascadeRetriever):
        raise TypeError(
            "TagMiddleware judges with an ApplicabilityRetriever or a CascadeRetriever, got "
            f"{type(retriever).__name__}; for rules in a vector store use "
            "ApplicabilityRetriever.from_vectorstore(judge, store, candidates=N)"
        )
    return retriever


def text(name: str, value: Any, *, empty: bool = True) -> str:
    """``value`` checked to be a string (non-blank unless ``empty``).

    Raises:
        TypeError: When it is not a string.
        ValueError: When it is blank and must not be.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if not empty and not value.strip():
        raise ValueError(f"{name} must not be blank")
    return value


def state_prefix(name: str | None, kind: type) -> str:
    """The prefix of a middleware's state keys: ``tag`` for the default, ``tag_<name>`` for a named one or a subclass.

    Raises:
        ValueError: When ``name`` cannot be part of a state key (not an identifier).
    """
    if name is None:
        name = kind.__name__
    elif not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be an identifier (letters, digits, underscores), got {name!r}")
    return "tag" if name == DEFAULT_NAME else f"tag_{name}"


def outage_policy(on_outage: str | None, retriever: Retriever) -> OutagePolicy:
    """What an outage does: ``on_outage``, else ``"error"`` with the retriever's ``strict`` and ``"continue"`` without.

    Raises:
        ValueError: On an unknown policy.
    """
    if on_outage is None:
        strict = (retriever.strong if isinstance(retriever, CascadeRetriever) else retriever).strict
        return "error" if strict else "continue"
    if on_outage not in ("continue", "error"):
        raise ValueError(f"unknown on_outage {on_outage!r}: use 'continue' (go on without rules) or 'error'")
    return "continue" if on_outage == "continue" else "error"
