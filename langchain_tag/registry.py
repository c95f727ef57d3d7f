"""Named registries (judge prompts, executor prompts): a name is looked up, an object of the kind passes through."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

__all__ = ["resolve"]

T = TypeVar("T")


def resolve(value: str | T, registry: Mapping[str, T], kind: type[T], what: str) -> T:
    """Return ``registry[value]`` for a name, or ``value`` itself when it is already a ``kind``.

    Args:
        value: A registry name or an object of the registry's kind.
        registry: The registry.
        kind: The type of the registry's objects.
        what: What an entry is called in the error message, e.g. ``"judge predicate"``.

    Raises:
        ValueError: For an unknown name, listing the known ones.

    >>> resolve("b", {"a": 1, "b": 2}, int, "number")
    2
    >>> resolve("c", {"a": 1, "b": 2}, int, "number")
    Traceback (most recent call last):
    ...
    ValueError: unknown number 'c'; choose one of: a, b
    """
    if isinstance(value, kind):
        return value
    try:
        return registry[str(value)]
    except KeyError:
        known = ", ".join(sorted(registry))
        raise ValueError(f"unknown {what} {value!r}; choose one of: {known}") from None
