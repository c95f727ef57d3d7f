"""A griffe extension for the API reference: a Google ``Example:`` section is read as ``Examples:``.

Both spellings are Google style, and the package's docstrings use the singular. Griffe reads only the plural as
an examples section (code, run as doctests); the singular would be rendered as Markdown prose, where a doctest's
``x[0]`` reads as a link.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename each docstring's ``Example:`` section heading to ``Examples:`` before it is parsed."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the object's docstring, if it has one."""
        if obj.docstring is not None:
            obj.docstring.value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
