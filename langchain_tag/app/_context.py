"""Per-run settings of the served graph: LangGraph's runtime context, checked once at the start of a run.

A run gives them as its ``context`` (``graph.invoke(..., context={...})``, the SDK's
``client.runs.stream(..., context={...})``, or an assistant's context in LangGraph Studio). Every key is
optional; a missing one keeps the default (the models of the package's ``LANGCHAIN_TAG_*`` environment
variables, the calibration's threshold, the shipped demo rules, the ``tag`` mode, one check round, no review).
A bad value fails the run with :class:`ContextError`, whose message names the key and what it accepts.

Example:
    >>> settings_from_context({"mode": "all_rules", "check_rounds": 0})
    RunSettings(judge_model=None, judge_base_url=None, threshold=None, rules_file=None, rule_set='demo', \
mode='all_rules', check_rounds=0, review=False, executor='generic', k=4)
    >>> settings_from_context({"mode": "bm25"})
    Traceback (most recent call last):
    ...
    langchain_tag.app._context.ContextError: context key 'mode': 'bm25' is not a mode; choose one of: tag, \
relevance, all_rules, similarity, none
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict

from langchain_tag.errors import TagError
from langchain_tag.executors import EXECUTOR_PROMPTS
from langchain_tag.graph import MODES, Mode
from langchain_tag.ranges import CHECK_ROUNDS, SIMILARITY_K, THRESHOLD, Range

__all__ = ["RULE_SETS", "ContextError", "RunSettings", "TagContext", "check_context_keys", "settings_from_context"]

RULE_SETS: tuple[str, ...] = ("demo",)
"""The rule sets shipped with the package, by name: ``demo`` is the code review policy of ``langchain-tag demo``."""


class ContextError(TagError, ValueError):
    """A run's context (its per-run settings) holds an unknown key or a bad value."""


class TagContext(TypedDict, total=False):
    """Per-run settings of the TAG graph (LangGraph's runtime context). Every key is optional."""

    judge_model: Annotated[
        str | None,
        Field(
            description="The judge: a model name at the configured endpoint (LANGCHAIN_TAG_BASE_URL), or "
            "'local' / 'local:1.5b' / 'local:0.5b' for the embedded model. Default: LANGCHAIN_TAG_JUDGE_MODEL, "
            "else the executor's model."
        ),
    ]
    judge_base_url: Annotated[
        str | None,
        Field(
            description="An OpenAI-compatible endpoint for the judge (its key: LANGCHAIN_TAG_API_KEY). "
            "Default: LANGCHAIN_TAG_BASE_URL, else the embedded model."
        ),
    ]
    threshold: Annotated[
        float | None,
        Field(
            **THRESHOLD.bounds(),
            description="Calibrated score a rule needs to match (default: the calibration's, else 0.5).",
        ),
    ]
    rules_file: Annotated[
        str | None, Field(description="A rule file (JSONL, as `langchain-tag extract` writes) on the server.")
    ]
    rule_set: Annotated[str | None, Field(description="A rule set shipped with the package: 'demo' (the default).")]
    mode: Annotated[
        Mode | None,
        Field(description="tag (the method), relevance, all_rules, similarity or none. Default: tag."),
    ]
    check_rounds: Annotated[
        int | None,
        Field(
            **CHECK_ROUNDS.bounds(),
            description="After the executor's revision, the judge checks it against the rules it was given; "
            "while some still hold, the executor gets them and its revision again, at most this many times "
            "(default 1; 0: no check). The tag and relevance modes check.",
        ),
    ]
    review: Annotated[
        bool | None,
        Field(
            description="Stop after matching for a person to approve or edit the matched rules "
            "(resume with Command(resume=...)). Default: off."
        ),
    ]
    executor: Annotated[str | None, Field(description="The executor prompt: 'generic' (default) or 'code_review'.")]
    k: Annotated[int | None, Field(**SIMILARITY_K.bounds(), description="Top-k of the similarity mode (default 4).")]


@dataclass(frozen=True)
class RunSettings:
    """The settings of one run, checked: :class:`TagContext` with the defaults filled in.

    Attributes:
        judge_model: The judge's model name, ``"local"``/``"local:<size>"``, or ``None`` for the environment's.
        judge_base_url: The judge's endpoint, or ``None`` for the environment's.
        threshold: The judge's threshold, or ``None`` for the calibration's.
        rules_file: A rule file to load, or ``None``.
        rule_set: A shipped rule set's name (used when no ``rules_file`` and no rules in the input).
        mode: The retrieval mode.
        check_rounds: Extra execute rounds the check may ask for.
        review: Whether a person reviews the matched rules before the executor runs.
        executor: The executor prompt's name.
        k: Top-k of the similarity mode.
    """

    judge_model: str | None = None
    judge_base_url: str | None = None
    threshold: float | None = None
    rules_file: str | None = None
    rule_set: str = "demo"
    mode: Mode = "tag"
    check_rounds: int = 1
    review: bool = False
    executor: str = "generic"
    k: int = 4

    def as_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (what the thread's state records)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSettings:
        """The settings a thread's state recorded (:meth:`as_dict`)."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


def _text(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ContextError(f"context key {key!r}: expected a non-empty string, got {value!r}")
    return value.strip()


def _in_range(key: str, value: Any, allowed: Range) -> Any:
    """``value`` checked by the setting's one range; a bad value's message is the range's, naming the key."""
    if value is None:
        return None
    if not allowed.whole and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)  # the number the setting holds, as the retriever's field makes it
    try:
        return allowed.check(value)
    except ValueError as exc:
        raise ContextError(f"context key {key!r}: {exc}") from None


def _choice(key: str, value: Any, choices: tuple[str, ...], what: str) -> str | None:
    if value is None:
        return None
    if value not in choices:
        raise ContextError(f"context key {key!r}: {value!r} is not {what}; choose one of: {', '.join(choices)}")
    return str(value)


def _judge_model(value: Any) -> str | None:
    name = _text("judge_model", value)
    if name is not None and name.lower().startswith("local:"):
        size = name.split(":", 1)[1].strip().lower()
        if size not in ("1.5b", "0.5b"):
            raise ContextError(
                f"context key 'judge_model': {name!r} names no embedded model; use local:1.5b or local:0.5b"
            )
    return name


def _base_url(value: Any) -> str | None:
    url = _text("judge_base_url", value)
    if url is not None and not url.lower().startswith(("http://", "https://")):
        raise ContextError(f"context key 'judge_base_url': expected an http(s) URL, got {url!r}")
    return url


def check_context_keys(context: Any) -> None:
    """Refuse a context that is no object of settings, or holds a key :class:`TagContext` does not name.

    The served graph's factory calls it on the run's context as the client sent it: the server drops the keys
    the schema does not name before the graph sees the context, so a misspelt key would otherwise go unnoticed.

    Args:
        context: The run's context, or ``None``.

    Raises:
        ContextError: On a context that is no object, or an unknown key (naming the closest known one).

    Example:
        >>> check_context_keys({"treshold": 0.9})
        Traceback (most recent call last):
        ...
        langchain_tag.app._context.ContextError: unknown context key 'treshold' (did you mean 'threshold'?); \
the settings are: judge_model, judge_base_url, threshold, rules_file, rule_set, mode, check_rounds, review, \
executor, k
    """
    if context is None:
        return
    if not isinstance(context, Mapping):
        raise ContextError(f"the run's context must be an object of settings, got {type(context).__name__}")
    known = tuple(TagContext.__annotations__)
    for key in context:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ContextError(f"unknown context key {key!r}{hint}; the settings are: {', '.join(known)}")


def settings_from_context(context: Mapping[str, Any] | None) -> RunSettings:
    """Check a run's context and fill in the defaults.

    Args:
        context: The run's context (a :class:`TagContext`), or ``None``.

    Returns:
        The run's settings.

    Raises:
        ContextError: On an unknown key (naming the closest known one) or a bad value (naming what fits).
    """
    if context is None:
        return RunSettings()
    check_context_keys(context)
    rules_file = _text("rules_file", context.get("rules_file"))
    rule_set = _choice("rule_set", context.get("rule_set"), RULE_SETS, "a shipped rule set")
    if rules_file is not None and rule_set is not None:
        raise ContextError("context keys 'rules_file' and 'rule_set' name two rule sources; give one")
    review = context.get("review")
    if review is not None and not isinstance(review, bool):
        raise ContextError(f"context key 'review': expected true or false, got {review!r}")
    values: dict[str, Any] = {
        "judge_model": _judge_model(context.get("judge_model")),
        "judge_base_url": _base_url(context.get("judge_base_url")),
        "threshold": _in_range("threshold", context.get("threshold"), THRESHOLD),
        "rules_file": rules_file,
        "rule_set": rule_set,
        "mode": _choice("mode", context.get("mode"), MODES, "a mode"),
        "check_rounds": _in_range("check_rounds", context.get("check_rounds"), CHECK_ROUNDS),
        "review": review,
        "executor": _choice("executor", context.get("executor"), tuple(EXECUTOR_PROMPTS), "an executor prompt"),
        "k": _in_range("k", context.get("k"), SIMILARITY_K),
    }
    return RunSettings(**{key: value for key, value in values.items() if value is not None})
