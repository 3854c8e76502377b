"""Draw a stored chart artifact as inline SVG, on the server: no JavaScript build, and the same
picture on every reload because it is drawn from the stored data (``charts.chart_artifact``).

``render_chart_svg(chart)`` returns a complete ``<svg>`` element whose every text is escaped, so a
template may mark it safe. Kinds: line, area, bar (grouped), scatter, pie.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

WIDTH, HEIGHT = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 40, 56
PALETTE = (
    "#2563eb",
    "#dc2626",
    "#16a34a",
    "#d97706",
    "#7c3aed",
    "#0891b2",
    "#db2777",
    "#65a30d",
    "#475569",
    "#ea580c",
    "#4f46e5",
    "#059669",
)


def _fmt(value: float) -> str:
    if value == int(value) and abs(value) < 1e12:
        return f"{int(value):,}"
    return f"{value:,.4g}"


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high == low:
        high = low + 1
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=raw)
    start = math.floor(low / step) * step
    ticks, value = [], start
    while value <= high + step * 0.5:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _text(
    x: float,
    y: float,
    content: str,
    *,
    anchor: str = "middle",
    size: int = 11,
    fill: str = "#334155",
    extra: str = "",
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
        f'font-family="system-ui, sans-serif" fill="{fill}"{extra}>{escape(content)}</text>'
    )


def _legend(series: list[dict[str, Any]]) -> list[str]:
    parts, x = [], LEFT
    for index, one in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        parts.append(f'<rect x="{x}" y="{HEIGHT - 18}" width="10" height="10" fill="{colour}"/>')
        parts.append(_text(x + 14, HEIGHT - 9, one["name"], anchor="start"))
        x += 24 + 7 * len(one["name"])
    return parts


def _pie(chart: dict[str, Any]) -> list[str]:
    values = chart["series"][0]["values"]
    total = sum(values) or 1
    cx, cy, r = WIDTH / 2, (HEIGHT + TOP - 20) / 2, min(WIDTH, HEIGHT - TOP - 40) / 2 - 10
    parts, angle = [], -math.pi / 2
    for index, (label, value) in enumerate(zip(chart["x_values"], values, strict=True)):
        sweep = 2 * math.pi * value / total
        colour = PALETTE[index % len(PALETTE)]
        if sweep >= 2 * math.pi - 1e-9:
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="{colour}"/>')
        elif sweep > 0:
            x1, y1 = cx + r * math.cos(angle), cy + r * math.sin(angle)
            x2, y2 = cx + r * math.cos(angle + sweep), cy + r * math.sin(angle + sweep)
            large = 1 if sweep > math.pi else 0
            parts.append(
                f'<path d="M{cx:.1f},{cy:.1f} L{x1:.1f},{y1:.1f} A{r:.1f},{r:.1f} 0 {large} 1 {x2:.1f},{y2:.1f} Z" '
                f'fill="{colour}"><title>{escape(str(label))}: {escape(_fmt(value))}</title></path>'
            )
        middle = angle + sweep / 2
        if sweep > 0.15:
            parts.append(
                _text(
                    cx + r * 0.65 * math.cos(middle),
                    cy + r * 0.65 * math.sin(middle),
                    str(label),
                    fill="#fff",
                )
            )
        angle += sweep
    return parts


def render_chart_svg(chart: dict[str, Any]) -> str:
    """The chart as an ``<svg>`` element (escaped throughout)."""
    kind = chart.get("kind", "line")
    series = chart.get("series") or []
    x_values = chart.get("x_values") or []
    parts = [_text(WIDTH / 2, 22, chart.get("title", ""), size=15, extra=' font-weight="600"')]
    if kind == "pie" and series:
        parts += _pie(chart)
    elif series and x_values:
        numbers = [v for one in series for v in one["values"]]
        low, high = min(0.0, *numbers), max(0.0, *numbers)
        ticks = _ticks(low, high)
        low, high = min(ticks[0], low), max(ticks[-1], high)
        plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

        def y_of(value: float) -> float:
            return TOP + plot_h - (value - low) / ((high - low) or 1) * plot_h

        numeric_x = kind == "scatter"
        if numeric_x:
            x_low, x_high = min(x_values), max(x_values)

            def x_of(index: int) -> float:
                return LEFT + (x_values[index] - x_low) / ((x_high - x_low) or 1) * plot_w
        else:
            slot = plot_w / len(x_values)

            def x_of(index: int) -> float:
                return LEFT + slot * (index + 0.5)

        for tick in ticks:
            y = y_of(tick)
            parts.append(
                f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#e2e8f0"/>'
            )
            parts.append(_text(LEFT - 6, y + 4, _fmt(tick), anchor="end", size=10))
        every = max(1, math.ceil(len(x_values) / 12))
        for index, label in enumerate(x_values):
            if index % every == 0:
                shown = _fmt(label) if isinstance(label, int | float) else str(label)[:14]
                parts.append(_text(x_of(index), TOP + plot_h + 16, shown, size=10))
        zero = y_of(max(low, min(0.0, high)))
        for s_index, one in enumerate(series):
            colour = PALETTE[s_index % len(PALETTE)]
            points = [(x_of(i), y_of(v)) for i, v in enumerate(one["values"])]
            if kind == "bar":
                width = (plot_w / len(x_values)) * 0.8 / len(series)
                for i, v in enumerate(one["values"]):
                    x = x_of(i) - (plot_w / len(x_values)) * 0.4 + width * s_index
                    top, bottom = sorted((y_of(v), zero))
                    parts.append(
                        f'<rect x="{x:.1f}" y="{top:.1f}" width="{width:.1f}" height="{max(bottom - top, 0.5):.1f}" fill="{colour}">'
                        f"<title>{escape(one['name'])}: {escape(_fmt(v))}</title></rect>"
                    )
                continue
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            if kind == "area":
                parts.append(
                    f'<polygon points="{points[0][0]:.1f},{zero:.1f} {path} {points[-1][0]:.1f},{zero:.1f}" '
                    f'fill="{colour}" fill-opacity="0.25" stroke="none"/>'
                )
            if kind in ("line", "area"):
                parts.append(
                    f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
                )
            for (x, y), v in zip(points, one["values"], strict=True):
                parts.append(
                    f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{4 if kind == "scatter" else 3}" fill="{colour}">'
                    f"<title>{escape(one['name'])}: {escape(_fmt(v))}</title></circle>"
                )
        parts.append(
            f'<line x1="{LEFT}" y1="{zero:.1f}" x2="{WIDTH - RIGHT}" y2="{zero:.1f}" stroke="#94a3b8"/>'
        )
        if chart.get("x_label"):
            parts.append(_text(LEFT + plot_w / 2, HEIGHT - 24, chart["x_label"], size=11))
        if chart.get("y_label"):
            parts.append(
                _text(
                    14,
                    TOP + plot_h / 2,
                    chart["y_label"],
                    extra=f' transform="rotate(-90 14 {TOP + plot_h / 2:.1f})"',
                )
            )
    parts += _legend(series if kind != "pie" else [])
    label = escape(f"{kind} chart: {chart.get('title', '')}")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{label}" '
        f'class="agenticos-chart" data-chart-id="{escape(str(chart.get("id", "")))}">'
        + "".join(parts)
        + "</svg>"
    )
