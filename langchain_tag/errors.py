"""The package's errors, under one root.

Catch :class:`TagError` to handle anything this package raises on purpose.
:class:`~langchain_tag.judging.results.JudgmentsFailedError` (``strict=True``)
lives beside the match result it carries.
Each subclass also derives from the built-in a caller would expect
(``ValueError`` for bad input, ``RuntimeError`` for a failed provider,
``ImportError`` for a missing extra), so existing ``except`` clauses keep
working.
"""

from __future__ import annotations

__all__ = [
    "DocumentLoadError",
    "InputTooLongError",
    "MissingExtraError",
    "ParseError",
    "ProviderError",
    "RuleFileError",
    "TagError",
]


class TagError(Exception):
    """Root of every error raised by ``langchain_tag``."""


class ProviderError(TagError, RuntimeError):
    """A model provider failed every call of a batch after the last retry.

    The message names the provider (class, model, endpoint) and the call
    (extraction phase and item, or the rule being judged).

    Args:
        message: What failed.
        errors: The distinct errors the failed calls ended with, when known (one: they all failed the same way).
    """

    def __init__(self, message: str, *, errors: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.errors = errors


class ParseError(TagError, ValueError):
    """A model reply could not be read as the expected structure."""


class RuleFileError(TagError, ValueError):
    """A rule file or rule document could not be read.

    The message names the file, the line and the field at fault.
    """


class InputTooLongError(TagError, ValueError):
    """A judge prompt would not fit the model's context window."""


class DocumentLoadError(TagError, ValueError):
    """A file could not be read as a text document."""


class MissingExtraError(TagError, ImportError):
    """An optional part of the package is not installed.

    The message is one line naming the exact ``pip install`` to run.
    """


def require_extra(module: str, extra: str) -> None:
    """Import ``module`` or raise :class:`MissingExtraError` naming the extra that ships it.

    Args:
        module: The module to import, e.g. ``"langchain_chroma"``.
        extra: The ``langchain-tag`` extra that installs it, e.g. ``"chroma"``.

    Raises:
        MissingExtraError: When ``module`` cannot be imported.
    """
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f'{module} is not installed; install it with: pip install "langchain-tag[{extra}]"'
        ) from exc
