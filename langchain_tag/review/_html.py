"""The page's HTML: the package's Jinja2 templates rendered with the page's content, escaped throughout."""

from __future__ import annotations

from typing import Any

from langchain_tag.errors import require_extra

__all__ = ["render_html"]


def _score(value: float | None) -> str:
    """A score as the page prints it.

    >>> _score(0.12345), _score(None)
    ('0.123', 'n/a')
    """
    return "n/a" if value is None else f"{value:.3f}"


def _percent(value: float | None) -> str:
    """A share as the page prints it.

    >>> _percent(0.5), _percent(None)
    ('50.0%', 'n/a')
    """
    return "n/a" if value is None else f"{value:.1%}"


def render_html(context: dict[str, Any]) -> str:
    """Render the review template with ``context``.

    Raises:
        MissingExtraError: When Jinja2 (the ``review`` extra) is not installed.
    """
    require_extra("jinja2", "review")
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    environment = Environment(
        loader=PackageLoader("langchain_tag.review", "templates"),
        autoescape=select_autoescape(["html", "j2"], default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["score"] = _score
    environment.filters["percent"] = _percent
    return environment.get_template("review.html.j2").render(**context)
