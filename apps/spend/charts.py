"""The spend and usage charts (the daily cost bars, the outcome donut), drawn on the server as
inline SVG: no JavaScript build, and accessible —
``role="img"`` with a ``<title>`` and a ``<desc>`` that says in words what the bars show, and a
``<title>`` per bar (the browser's tooltip) with the day's exact figure.

A day that holds a run which could not be fully priced is a floor: its bar is hatched and its
tooltip says "at least". Every text is escaped, so a template may mark the result safe.
"""

from __future__ import annotations

import itertools
import math
from decimal import ROUND_HALF_UP, Decimal
from html import escape

_ids = itertools.count(1)


def usd(value: Decimal, *, partial: bool = False) -> str:
    """Dollars to the cent (a sub-cent amount keeps four places, so it does not read as free)."""
    value = Decimal(value)
    places = Decimal("0.01") if value == 0 or abs(value) >= Decimal("0.01") else Decimal("0.0001")
    text = f"${value.quantize(places, rounding=ROUND_HALF_UP):,}"
    return f"at least {text}" if partial else text


def daily_cost_svg(
    series: list[dict], *, width: int = 640, height: int = 180, title: str = "Daily cost"
) -> str:
    """Bars of ``cost_usd`` per day of ``series`` (the aggregates' daily series)."""
    uid = next(_ids)
    left, right, top, bottom = 52, 8, 10, 24
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((Decimal(point["cost_usd"]) for point in series), default=Decimal(0))
    scale_max = peak if peak > 0 else Decimal(1)
    total = sum((Decimal(point["cost_usd"]) for point in series), Decimal(0))
    floors = sum(1 for point in series if point["partial_run_count"])
    first, last = (series[0]["date"], series[-1]["date"]) if series else (None, None)

    description = (
        f"{len(series)} days from {first} to {last}: {usd(total, partial=bool(floors))} in all; "
        f"the most in one day was {usd(peak)}."
        if series
        else "No days in the window."
    )
    if floors:
        description += f" {floors} day(s) include runs that could not be fully priced (hatched bars are floors)."

    parts = [
        f'<svg class="spend-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-labelledby="spend-chart-title-{uid} spend-chart-desc-{uid}">',
        f'<title id="spend-chart-title-{uid}">{escape(title)}</title>',
        f'<desc id="spend-chart-desc-{uid}">{escape(description)}</desc>',
        f'<defs><pattern id="spend-floor-{uid}" width="6" height="6" patternUnits="userSpaceOnUse" '
        f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#93a8ee"/>'
        f'<line x1="0" y1="0" x2="0" y2="6" stroke="#3157d5" stroke-width="3"/></pattern></defs>',
        # The axis: zero and the peak, labelled.
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" y2="{top + plot_h}" stroke="#dfe3ea"/>',
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end" font-size="10" fill="#5b6475">$0</text>',
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end" font-size="10" fill="#5b6475">'
        f"{escape(usd(peak))}</text>",
    ]
    if series:
        slot = plot_w / len(series)
        bar_w = max(slot * 0.8, 1)
        for index, point in enumerate(series):
            cost = Decimal(point["cost_usd"])
            bar_h = float(cost / scale_max) * plot_h
            if cost > 0:
                bar_h = max(bar_h, 1.0)  # a cent on a $100 day is still a visible sliver
            x = left + index * slot + (slot - bar_w) / 2
            y = top + plot_h - bar_h
            partial = bool(point["partial_run_count"])
            fill = f"url(#spend-floor-{uid})" if partial else "#3157d5"
            tip = f"{point['date']}: {usd(cost, partial=partial)}, {point['runs']} run(s)"
            if partial:
                tip += f", {point['partial_run_count']} not fully priced"
            parts.append(
                f'<rect class="bar{" floor" if partial else ""}" x="{x:.2f}" y="{y:.2f}" '
                f'width="{bar_w:.2f}" height="{bar_h:.2f}" fill="{fill}"><title>{escape(tip)}</title></rect>'
            )
        parts.append(
            f'<text x="{left}" y="{height - 6}" font-size="10" fill="#5b6475">{escape(str(first))}</text>'
        )
        parts.append(
            f'<text x="{width - right}" y="{height - 6}" text-anchor="end" font-size="10" fill="#5b6475">'
            f"{escape(str(last))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


# One colour per outcome, each at least 3:1 against the white card (WCAG's non-text contrast).
OUTCOME_COLOURS = {
    "completed": "#1a7f37",
    "failed": "#c62828",
    "budget_exceeded": "#b45309",
    "cancelled": "#57606a",
    "guardrail_blocked": "#8250df",
    "awaiting_approval": "#0969da",
    "awaiting_answer": "#0550ae",
    "running": "#3157d5",
    "queued": "#6e7781",
}
OTHER_OUTCOME_COLOUR = "#6e7781"


def outcome_donut_svg(outcomes: dict[str, int], *, size: int = 160, title: str = "Outcomes") -> str:
    """A donut of the window's runs by status (``usage_cards``' ``outcomes``): each segment's
    share of the ring is its share of ``total_runs``; the legend with the counts is the list of
    links beside it, so the picture adds the shape and the description says it in words."""
    uid = next(_ids)
    total = sum(outcomes.values())
    radius, stroke = size / 2 - 14, 22
    circumference = 2 * math.pi * radius
    description = (
        ", ".join(f"{status} {count} of {total}" for status, count in outcomes.items())
        if total
        else "No runs in the window."
    )
    parts = [
        f'<svg class="outcome-donut" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size} {size}" '
        f'width="{size}" height="{size}" role="img" '
        f'aria-labelledby="outcome-title-{uid} outcome-desc-{uid}">',
        f'<title id="outcome-title-{uid}">{escape(title)}</title>',
        f'<desc id="outcome-desc-{uid}">{escape(description)}</desc>',
        f'<circle cx="{size / 2}" cy="{size / 2}" r="{radius:.2f}" fill="none" stroke="#dfe3ea" '
        f'stroke-width="{stroke}"/>',
    ]
    offset = 0.0
    for status, count in outcomes.items():
        if not count:
            continue
        length = circumference * count / total
        colour = OUTCOME_COLOURS.get(status, OTHER_OUTCOME_COLOUR)
        # Drawn from twelve o'clock clockwise: the ring is rotated a quarter turn back.
        parts.append(
            f'<circle class="segment" data-status="{escape(status)}" cx="{size / 2}" '
            f'cy="{size / 2}" r="{radius:.2f}" fill="none" stroke="{colour}" '
            f'stroke-width="{stroke}" stroke-dasharray="{length:.3f} {circumference - length:.3f}" '
            f'stroke-dashoffset="{-offset:.3f}" transform="rotate(-90 {size / 2} {size / 2})">'
            f"<title>{escape(status)}: {count} of {total}</title></circle>"
        )
        offset += length
    parts.append(
        f'<text x="{size / 2}" y="{size / 2 + 6}" text-anchor="middle" font-size="18" '
        f'fill="#1f2328">{total}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)
