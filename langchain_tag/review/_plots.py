"""Score distributions drawn as small inline SVG: counts on a log scale, the threshold as a vertical line.

One compact style for every plot, written directly (no plotting library): twenty bins over [0, 1], each with a
grey bar (pairs not matched) and a red one beside it (pairs matched), their heights on a log scale so a handful
of matched pairs stays visible beside a thousand unmatched ones. The page's stylesheet colours them, so a plot
is a few hundred bytes.

Each figure's element ids are prefixed with its own name, so many SVGs sit in one page without clashing: the
figure is ``<prefix>``, the threshold line ``<prefix>-threshold``, the suggested one ``<prefix>-suggested`` and
the plotting area ``<prefix>-axes`` (the browser tests read the line's place off them). The bars are paths of
class ``other`` and ``matched``. The rule cards' plots share one x axis's labels, :data:`PLOT_DEFS`, which the page
holds once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["BINS", "PLOT_DEFS", "score_histogram"]

BINS = 20
"""Bins over [0, 1]."""

_LEFT, _RIGHT, _TOP, _BOTTOM = 28.0, 6.0, 6.0, 16.0
_NARROW, _WIDE = (260.0, 84.0), (560.0, 120.0)
_X_LABELS = ((0.0, "0"), (0.25, ".25"), (0.5, ".5"), (0.75, ".75"), (1.0, "1"))
_SHARED_X = "hist-x"


def _n(value: float) -> str:
    """A coordinate, short: one decimal, no trailing zero.

    >>> _n(12.0), _n(3.14159), _n(-0.04)
    ('12', '3.1', '0')
    """
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _count_label(count: int) -> str:
    """A tick's count: ``1``, ``10``, ``100``, ``1k``, ``10k``.

    >>> [_count_label(10**k) for k in range(6)]
    ['1', '10', '100', '1k', '10k', '100k']
    """
    return f"{count // 1000}k" if count >= 1000 else str(count)


def _x_labels(width: float, height: float) -> str:
    x0, x1, y1 = _LEFT, width - _RIGHT, height - _BOTTOM
    return "".join(f'<text x="{_n(x0 + (x1 - x0) * v)}" y="{_n(y1 + 11)}">{label}</text>' for v, label in _X_LABELS)


PLOT_DEFS = (
    '<svg class="plot-defs" width="0" height="0" aria-hidden="true"><defs>'
    f'<g id="{_SHARED_X}" font-size="8" fill="#5d6675" text-anchor="middle">{_x_labels(*_NARROW)}</g></defs></svg>'
)
"""The rule cards' plots' shared x-axis labels: once in the page, before any plot."""


def _counts(scores: Sequence[tuple[float, bool]]) -> tuple[list[int], list[int]]:
    other, matched = [0] * BINS, [0] * BINS
    for score, hit in scores:
        index = min(int(min(max(score, 0.0), 1.0) * BINS), BINS - 1)
        (matched if hit else other)[index] += 1
    return other, matched


def score_histogram(
    scores: Sequence[tuple[float, bool]],
    *,
    threshold: float | None,
    prefix: str,
    suggested: float | None = None,
    wide: bool = False,
) -> str:
    """An SVG histogram of calibrated scores on [0, 1], matched beside unmatched, counts on a log scale.

    Args:
        scores: ``(score, matched)`` per pair.
        threshold: Where the threshold line goes (none drawn when ``None``).
        prefix: The figure's id and its elements' id prefix (unique in the page; a safe anchor).
        suggested: A second, dotted line: the threshold suggested by a gold file.
        wide: The page-wide plot (wider and taller) rather than a rule card's.

    Returns:
        The ``<svg>`` element's text.

    >>> svg = score_histogram([(0.1, False), (0.1, False), (0.9, True)], threshold=0.5, prefix="p")
    >>> svg.count('class="matched"'), 'id="p-threshold"' in svg, len(svg) < 1000
    (1, True, True)
    """
    width, height = _WIDE if wide else _NARROW
    x0, x1, y0, y1 = _LEFT, width - _RIGHT, _TOP, height - _BOTTOM
    other, matched = _counts(scores)
    top = max(max(other), max(matched), 1)
    scale = (y1 - y0) / math.log10(1 + top)

    def y(count: int) -> float:
        return y1 - math.log10(1 + count) * scale

    def x(value: float) -> float:
        return x0 + (x1 - x0) * value

    x_labels = _x_labels(width, height) if wide else ""
    step = (x1 - x0) / BINS
    bar = step / 2 - 0.6

    def bars(counts: list[int], offset: float) -> str:
        return "".join(f"M{_n(x0 + i * step + offset)} {_n(y1)}V{_n(y(c))}" for i, c in enumerate(counts) if c)

    ticks = [10**k for k in range(int(math.log10(top)) + 1)]
    parts = [
        f'<svg id="{prefix}" class="hist{" wide" if wide else ""}" viewBox="0 0 {_n(width)} {_n(height)}" role="img" '
        f'aria-label="{len(scores)} pairs, {sum(matched)} matched; counts on a log scale">',
        f'<rect id="{prefix}-axes" class="ax" x="{_n(x0)}" y="{_n(y0)}" width="{_n(x1 - x0)}" height="{_n(y1 - y0)}"/>',
        '<path class="grid" d="' + "".join(f"M{_n(x0)} {_n(y(t))}H{_n(x1)}" for t in ticks) + '"/>',
        '<g class="lab">',
        *(f'<text x="{_n(x0 - 3)}" y="{_n(y(t) + 3)}" class="yl">{_count_label(t)}</text>' for t in ticks),
        x_labels,
        "</g>",
    ]
    if not wide:
        parts.append(f'<use href="#{_SHARED_X}"/>')
    if any(other):
        parts.append(f'<path class="other" stroke-width="{_n(bar)}" d="{bars(other, 0.3 + bar / 2)}"/>')
    if any(matched):
        parts.append(f'<path class="matched" stroke-width="{_n(bar)}" d="{bars(matched, step / 2 + bar / 2)}"/>')
    for name, value in (("threshold", threshold), ("suggested", suggested)):
        if value is not None:
            at = _n(x(min(max(value, 0.0), 1.0)))
            parts.append(f'<line id="{prefix}-{name}" class="{name}" x1="{at}" x2="{at}" y1="{_n(y0)}" y2="{_n(y1)}"/>')
    parts.append("</svg>")
    return "".join(parts)
