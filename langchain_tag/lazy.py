"""Public names imported on first use, so importing one module of the package does not import them all.

A package's ``__init__`` lists where each of its names lives and gets its module ``__getattr__`` and
``__dir__`` from :func:`lazy_exports` (PEP 562), as ``langchain_core``'s packages do. A Ray worker that
unpickles one pipeline step, or the CLI answering ``--help``, then imports only what it uses.

Example:
    >>> getattr_, dir_ = lazy_exports("json", {"dumps": ""}, {})
    >>> getattr_("dumps")({"a": 1})
    '{"a": 1}'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, modules: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` serving ``modules``' names from their modules on first use.

    Args:
        package: The package's name (``__name__``).
        modules: Each public name -> the module it lives in, relative to ``package`` (``""``: ``package``
            itself is the module).
        namespace: The package's ``globals()``: a name, once imported, is kept there.

    Returns:
        The ``__getattr__`` and ``__dir__`` to assign in the package's ``__init__``.
    """

    def __getattr__(name: str) -> Any:
        if name not in modules:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        where = f"{package}.{modules[name]}" if modules[name] else package
        value = getattr(import_module(where), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *modules})

    return __getattr__, __dir__
