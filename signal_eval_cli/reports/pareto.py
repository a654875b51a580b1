"""The matrix's Pareto chart as hand-made SVG: pass rate (y) against cost per case (x).

p50 latency is the third channel (the point's radius). Frontier points are filled and
joined by a step line; the recommended variant is ringed. Plain SVG needs no plotting
library and no JavaScript, and it reads the same in a browser, a PR or a printout.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from html import escape

from signal_eval_cli.matrix_ranking import VariantPoint
from signal_eval_cli.reports._format import fmt_cost, fmt_ms

__all__ = ["pareto_svg"]

WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 60, 160, 20, 50
R_MIN, R_MAX = 6.0, 18.0
RING = 6.0
"""The recommended point's ring, this far outside it (its label keeps clear of it too)."""


def _scale(value: float, low: float, high: float, start: float, end: float) -> float:
    if high <= low:
        return (start + end) / 2
    return start + (value - low) / (high - low) * (end - start)


def _label(text: str, x: float, y: float, r: float, *, right_edge: float) -> str:
    """A point's name beside it: to its left near the right edge, so it stays in the plot."""
    if x > right_edge:
        return f'<text class="plabel" x="{x - r - 4:.1f}" y="{y + 4:.1f}" text-anchor="end">{escape(text)}</text>'
    return f'<text class="plabel" x="{x + r + 4:.1f}" y="{y + 4:.1f}">{escape(text)}</text>'


def pareto_svg(
    points: Sequence[VariantPoint], frontier: Collection[str], recommended: str | None
) -> str:
    """One ``<circle class="point">`` per variant, ``frontier`` ones marked."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    costs = [p.cost for p in points] or [0.0]
    lats = [p.latency for p in points] or [0.0]
    c_low, c_high = min(costs), max(costs)
    pad = (c_high - c_low) * 0.1 or (c_high * 0.1) or 1e-6
    c_low, c_high = max(0.0, c_low - pad), c_high + pad

    def x(p: VariantPoint) -> float:
        return _scale(p.cost, c_low, c_high, LEFT, LEFT + plot_w)

    def y(p: VariantPoint) -> float:
        return _scale(p.pass_rate, 0.0, 1.0, TOP + plot_h, TOP)

    def r(p: VariantPoint) -> float:
        return _scale(p.latency, min(lats), max(lats), R_MIN, R_MAX) if len(points) > 1 else R_MIN

    parts = [
        f'<svg id="pareto-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}"'
        f' width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="pass rate against cost">',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>',
    ]
    for tick in range(0, 101, 25):
        ty = _scale(tick / 100, 0.0, 1.0, TOP + plot_h, TOP)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">{tick}%</text>'
        )
    for i in range(5):
        value = c_low + (c_high - c_low) * i / 4
        tx = LEFT + plot_w * i / 4
        parts.append(
            f'<text class="tick" x="{tx:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{fmt_cost(value)}</text>"
        )
    parts.append(
        f'<text class="axis" x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">'
        "cost per case →</text>"
        f'<text class="axis" x="14" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2})">pass rate →</text>'
    )
    on_frontier = sorted(
        (p for p in points if p.id in frontier), key=lambda p: (p.cost, p.pass_rate)
    )
    if len(on_frontier) > 1:
        path = " ".join(
            f"{'L' if i else 'M'}{x(p):.1f} {y(p):.1f}" for i, p in enumerate(on_frontier)
        )
        parts.append(f'<path id="frontier" class="frontier" d="{path}"/>')
    for p in points:
        classes = "point" + (" frontier" if p.id in frontier else " dominated")
        classes += " recommended" if p.id == recommended else ""
        label = (
            f"{p.id}: {p.pass_rate:.0%} pass ({p.passed}/{p.ran}), {fmt_cost(p.cost)}/case, "
            f"p50 {fmt_ms(p.latency)}" + (" — on the frontier" if p.id in frontier else "")
        )
        if p.id == recommended:
            parts.append(
                f'<circle class="ring" cx="{x(p):.1f}" cy="{y(p):.1f}" r="{r(p) + RING:.1f}"/>'
            )
        parts.append(
            f'<circle class="{classes}" data-variant="{escape(p.id)}" cx="{x(p):.1f}" '
            f'cy="{y(p):.1f}" r="{r(p):.1f}"><title>{escape(label)}</title></circle>'
            + _label(
                p.id,
                x(p),
                y(p),
                r(p) + RING * (p.id == recommended),
                right_edge=LEFT + plot_w * 0.7,
            )
        )
    lx = LEFT + plot_w + 24
    parts.append(
        f'<g class="legend"><circle class="point frontier" cx="{lx}" cy="{TOP + 10}" r="6"/>'
        f'<text x="{lx + 12}" y="{TOP + 14}">on the frontier</text>'
        f'<circle class="point dominated" cx="{lx}" cy="{TOP + 32}" r="6"/>'
        f'<text x="{lx + 12}" y="{TOP + 36}">dominated</text>'
        f'<circle class="ring" cx="{lx}" cy="{TOP + 54}" r="9"/>'
        f'<text x="{lx + 12}" y="{TOP + 58}">recommended</text>'
        f'<text x="{lx - 6}" y="{TOP + 84}">radius: p50 latency</text></g>'
    )
    parts.append("</svg>")
    return "".join(parts)
