"""Score distributions drawn by matplotlib as inline SVG, the threshold as a vertical line.

Each figure's element ids are prefixed with its own name, so many SVGs sit in
one page without clashing; the threshold line is ``<prefix>-threshold`` and
the plotting area ``<prefix>-axes`` (the browser tests read the line's place
off them). Figures are made without pyplot, so nothing global is kept.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

from langchain_tag.errors import require_extra

__all__ = ["score_histogram"]

BINS = 20
MATCHED = "#c0392b"
NOT_MATCHED = "#7f8c8d"
THRESHOLD = "#1f3a93"
SUGGESTED = "#27ae60"

_ID = re.compile(r'(\bid="|url\(#|xlink:href="#|href="#)')


def _svg_text(figure: Any, prefix: str) -> str:
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    buffer = io.StringIO()
    FigureCanvasSVG(figure)
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)
    return _ID.sub(lambda m: f"{m.group(1)}{prefix}-", text).strip()


def score_histogram(
    scores: Sequence[tuple[float, bool]],
    *,
    threshold: float | None,
    prefix: str,
    suggested: float | None = None,
    title: str = "",
    size: tuple[float, float] = (3.6, 1.5),
) -> str:
    """An SVG histogram of calibrated scores on [0, 1], matched and unmatched stacked, the threshold drawn.

    Args:
        scores: ``(score, matched)`` per pair.
        threshold: Where the threshold line goes (none drawn when ``None``).
        prefix: The figure's id prefix (unique in the page).
        suggested: A second, dotted line: the threshold suggested by a gold file.
        title: A title over the plot.
        size: Width and height in inches.

    Returns:
        The ``<svg>`` element's text.

    Raises:
        MissingExtraError: When matplotlib (the ``review`` extra) is not installed.
    """
    require_extra("matplotlib", "review")
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": prefix, "font.size": 7, "axes.titlesize": 8, "path.simplify": True}
    ):
        figure = Figure(figsize=size, dpi=72, layout="constrained")
        axes = figure.add_subplot()
        axes.patch.set_gid("axes")
        edges = [i / BINS for i in range(BINS + 1)]
        matched = [min(max(s, 0.0), 1.0) for s, hit in scores if hit]
        other = [min(max(s, 0.0), 1.0) for s, hit in scores if not hit]
        axes.hist(
            [other, matched],
            bins=edges,
            stacked=True,
            color=[NOT_MATCHED, MATCHED],
            label=["not matched", "matched"],
            edgecolor="white",
            linewidth=0.4,
        )
        if threshold is not None:
            axes.axvline(threshold, color=THRESHOLD, linewidth=1.4, gid="threshold")
        if suggested is not None:
            axes.axvline(suggested, color=SUGGESTED, linewidth=1.2, linestyle=":", gid="suggested")
        axes.set_xlim(0.0, 1.0)
        axes.set_xlabel("calibrated score")
        axes.set_ylabel("pairs")
        axes.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
        axes.spines[["top", "right"]].set_visible(False)
        if title:
            axes.set_title(title, loc="left")
        return _svg_text(figure, prefix)
