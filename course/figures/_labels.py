"""Text labels beside the points of a scatter figure, placed so that no two overlap and none covers a marker.

Plotly draws a ``"markers+text"`` label at a fixed side of its point, so labels of nearby points print over each
other (the capstone's figure, lesson 07). Here each label is an annotation with a thin leader line to its point,
and its offset is chosen in pixels: the figure has a fixed size and fixed margins, the axes fixed ranges, so a
point's pixel position is known before plotly draws it. A label's box is estimated from its text (characters ×
an average glyph width × the font size, plus padding and border); the first candidate offset, from near to far
and around the point, whose box stays inside the plotting area and clear of every marker and every label placed
before it is taken.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Glyph widths of the labels' sans-serif font, in font sizes: upper estimates (Arial/Helvetica: capitals
#: 0.67–0.83 but M and W 0.83–0.94, lower case 0.5–0.56 but m and w 0.72–0.83, digits 0.56, space 0.28).
_WIDE, _CAPITAL, _LOWER, _NARROW = 0.95, 0.8, 0.6, 0.45
#: Whatever the glyphs, a label is reserved at least this many font sizes per character (about a capital's width).
CHAR_WIDTH = 0.7
#: Height of a one-line label box, in font sizes, before padding and border.
LINE_HEIGHT = 1.35
#: Extra clearance kept between two boxes, in pixels.
GAP = 2.0
_DIRECTIONS = [0, 90, 180, 270, 45, 135, 225, 315, 22.5, 67.5, 112.5, 157.5, 202.5, 247.5, 292.5, 337.5]
_DISTANCES = [3, 8, 14, 22, 32, 44, 58, 75, 95, 120, 150, 185, 225, 270, 320, 380]


@dataclass(frozen=True)
class Frame:
    """The pixel frame of a figure: its size, its margins and the axes' ranges (``y`` grows upwards)."""

    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    x_range: tuple[float, float]
    y_range: tuple[float, float]

    @property
    def area(self) -> tuple[float, float, float, float]:
        """The plotting area in pixels: ``(x0, y0, x1, y1)`` from the figure's top-left corner."""
        return self.left, self.top, self.width - self.right, self.height - self.bottom

    def to_pixels(self, x: float, y: float) -> tuple[float, float]:
        """A data point's pixel position, from the figure's top-left corner (pixel y grows downwards)."""
        x0, y0, x1, y1 = self.area
        (a, b), (c, d) = self.x_range, self.y_range
        return x0 + (x - a) / (b - a) * (x1 - x0), y1 - (y - c) / (d - c) * (y1 - y0)


def label_size(text: str, font_size: float, pad: float = 2.0, border: float = 1.0) -> tuple[float, float]:
    """The estimated ``(width, height)`` in pixels of a one-line label box with padding ``pad`` and ``border``:
    an upper estimate of the text's width (per glyph, and at least :data:`CHAR_WIDTH` font sizes a character)."""
    glyphs = sum(_glyph(c) for c in text)
    extra = 2 * (pad + border)
    return max(glyphs, len(text) * CHAR_WIDTH) * font_size + extra, LINE_HEIGHT * font_size + extra


def _glyph(c: str) -> float:
    if c in "MWmw@%":
        return _WIDE
    if c.isupper() or c.isdigit():
        return _CAPITAL
    if c.islower() or c in "?&#$_":
        return _LOWER
    return _NARROW


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """The area two boxes ``(x0, y0, x1, y1)`` share, each grown by half of :data:`GAP`."""
    w = min(a[2], b[2]) - max(a[0], b[0]) + GAP
    h = min(a[3], b[3]) - max(a[1], b[1]) + GAP
    return w * h if w > 0 and h > 0 else 0.0


def _inside(box, area) -> bool:
    return box[0] >= area[0] and box[1] >= area[1] and box[2] <= area[2] and box[3] <= area[3]


def place_labels(
    points: Sequence[tuple[float, float]],
    sizes: Sequence[tuple[float, float]],
    radii: Sequence[float],
    area: tuple[float, float, float, float],
) -> list[tuple[float, float]]:
    """Pixel offsets ``(dx, dy)`` of each label's centre from its point (``dy`` grows downwards).

    Args:
        points: the points' pixel positions.
        sizes: each label's box ``(width, height)`` (:func:`label_size`).
        radii: each point's marker radius in pixels (a marker is kept clear as its bounding square).
        area: the plotting area ``(x0, y0, x1, y1)``: every label stays inside it.

    Labels are placed in order; for each, candidate centres go out from the point (distances from its marker's
    edge of 3 to 380 px, 16 directions each, up first) and the first whose box stays inside ``area`` and clear of
    every marker and every label placed before is taken. When none is (more labels than the area holds), the
    candidate overlapping least is taken.
    """
    markers = [(x - r, y - r, x + r, y + r) for (x, y), r in zip(points, radii)]
    placed: list[tuple[float, float, float, float]] = []
    offsets = []
    for (px, py), (w, h), r in zip(points, sizes, radii):
        best, best_cost = None, math.inf
        for distance in _DISTANCES:
            for angle in _DIRECTIONS:
                ux, uy = math.cos(math.radians(angle + 90)), -math.sin(math.radians(angle + 90))
                reach = r + distance + abs(ux) * w / 2 + abs(uy) * h / 2
                dx, dy = ux * reach, uy * reach
                box = (px + dx - w / 2, py + dy - h / 2, px + dx + w / 2, py + dy + h / 2)
                if not _inside(box, area):
                    continue
                cost = sum(_overlap(box, other) for other in placed + markers)
                if cost < best_cost:
                    best, best_cost = (dx, dy, box), cost
                if cost == 0:
                    break
            if best_cost == 0:
                break
        if best is None:  # not even inside the area: straight above the point
            best = (0.0, -(r + h / 2 + 3), (px - w / 2, py - r - h - 3, px + w / 2, py - r - 3))
        offsets.append((best[0], best[1]))
        placed.append(best[2])
    return offsets
