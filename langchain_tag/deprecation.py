"""Renamed keyword arguments: the old name keeps working for one release, with a warning."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["renamed_argument"]


def renamed_argument(owner: str, old: str, new: str, old_value: Any, new_value: Any, default: Any) -> Any:
    """The value of argument ``new``, taking the deprecated ``old`` name when it was given instead.

    Args:
        owner: The function or class, for the message.
        old: The deprecated name.
        new: The current name.
        old_value: What was passed as ``old`` (``None``: not passed).
        new_value: What was passed as ``new``.
        default: ``new``'s default, to tell whether it was passed too.

    Raises:
        TypeError: When both names were given different values.
    """
    if old_value is None:
        return new_value
    warnings.warn(f"{owner}({old}=...) is deprecated; use {new}=", DeprecationWarning, stacklevel=3)
    if new_value != default and new_value != old_value:
        raise TypeError(f"{owner} got both {old}= (deprecated) and {new}=; pass {new}= only")
    return old_value
