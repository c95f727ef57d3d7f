"""A review page: the rules laid over their source document, and how they matched a corpus.

:func:`render_review` writes one self-contained HTML file (no network, readable
without JavaScript) for a person who must sign off on extracted rules or see
how close the calls on a corpus were. It needs the ``review`` extra (Jinja2;
the plots are drawn as small SVG without a plotting library):
``pip install "langchain-tag[review]"``. The command line's ``langchain-tag
review`` calls it.

Example:
    .. code-block:: python

        from langchain_tag.review import render_review

        render_review("rules.jsonl", "policy.md", "review.html", verdicts="verdicts.jsonl", gold="gold.jsonl")
"""

from langchain_tag.review._files import ReviewError
from langchain_tag.review._render import render_review

__all__ = ["ReviewError", "render_review"]
