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


# --- The dashboard's usage cards -------------------------------------------------------------
# The console's design tokens (static/console/console.css), written out: an SVG presentation
# attribute cannot read a CSS variable. Every fill is at least 3:1 against the white card (WCAG's
# non-text contrast) and every text at least 7:1.
INK = "#1b2130"  # --fg
MUTED = "#4f596b"  # --muted
TRACK = "#eef1f6"  # --surface-2: the empty part of a bar, drawn for the shape only
ACCENT = "#2d4fc4"  # --accent
ACCENT_LIGHT = "#7088d8"  # 3.4:1 on white: the delegated part of an adoption bar
GOOD = "#146c2e"  # --ok
BAD = "#a61b12"  # --bad

# A phone-sized canvas: drawn at 320 user units, a chart is about as wide as a 390 px screen's
# card, so its 13-unit text stays about 12 px there (CSS caps it on wider screens).
CARD_WIDTH = 320
_ROW_H = 36
_CHAR_W = 7.1  # an average glyph of the 13-unit system font, to shorten a label that would collide


def duration_text(ms: float | int | None) -> str:
    """Milliseconds as people read them: "850 ms", "4.8 s", "2 min 5 s"."""
    if ms is None:
        return "—"
    ms = int(round(ms))
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds} s"


def _fit(text: str, room: float) -> str:
    most = max(int(room / _CHAR_W), 4)
    return text if len(text) <= most else text[: most - 1] + "…"


def _open_svg(kind: str, width: float, height: float, title: str, description: str) -> tuple:
    uid = next(_ids)
    return uid, [
        f'<svg class="usage-chart {kind}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height:.0f}" width="100%" role="img" '
        f'aria-labelledby="usage-chart-title-{uid} usage-chart-desc-{uid}">',
        f'<title id="usage-chart-title-{uid}">{escape(title)}</title>',
        f'<desc id="usage-chart-desc-{uid}">{escape(description)}</desc>',
    ]


def bar_list_svg(rows: list[dict], *, title: str, description: str, width: int = CARD_WIDTH) -> str:
    """Horizontal bars, one row each, longest first as given: the row's ``label`` and its figure
    (``text``) above a bar whose length is ``value`` against the largest row's.

    A row may carry ``part`` (a share of its value drawn lighter at the bar's end — the
    delegated runs of an adoption bar) and ``floor`` (hatched with an outline: money that is at
    least this much). ``tip`` is the bar's tooltip; ``description`` says in words what the bars
    show, and the card's table beside the chart holds every figure with its link.
    """
    top = 4
    height = top + _ROW_H * max(len(rows), 1) + 2
    uid, parts = _open_svg("bars", width, height, title, description)
    parts.append(
        f'<defs><pattern id="usage-floor-{uid}" width="6" height="6" patternUnits="userSpaceOnUse" '
        f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/>'
        f'<line x1="0" y1="0" x2="0" y2="6" stroke="{ACCENT}" stroke-width="3"/></pattern></defs>'
    )
    if not rows:
        parts.append(
            f'<text x="0" y="{top + 20}" font-size="13" fill="{MUTED}">Nothing in the window.</text>'
        )
    peak = max((float(row["value"]) for row in rows), default=0.0) or 1.0
    for index, row in enumerate(rows):
        y = top + index * _ROW_H
        value = float(row["value"])
        figure = str(row["text"])
        room = width - len(figure) * _CHAR_W - 10
        parts.append(f'<g class="bar-row" data-label="{escape(str(row["label"]))}">')
        parts.append(
            f'<text x="0" y="{y + 13}" font-size="13" fill="{INK}">'
            f"{escape(_fit(str(row['label']), room))}</text>"
        )
        parts.append(
            f'<text x="{width}" y="{y + 13}" font-size="13" font-weight="600" text-anchor="end" '
            f'fill="{INK}">{escape(figure)}</text>'
        )
        bar_y = y + 19
        parts.append(f'<rect x="0" y="{bar_y}" width="{width}" height="11" rx="2" fill="{TRACK}"/>')
        length = width * value / peak
        if value > 0:
            length = max(length, 2.0)  # a run on a busy day is still a visible sliver
        tip = escape(str(row.get("tip") or f"{row['label']}: {figure}"))
        if row.get("floor"):
            fill, stroke = f"url(#usage-floor-{uid})", f' stroke="{ACCENT}" stroke-width="1"'
        else:
            fill, stroke = ACCENT, ""
        part = float(row.get("part") or 0)
        own = length * (value - part) / value if value else 0.0
        parts.append(
            f'<rect class="bar{" floor" if row.get("floor") else ""}" x="0" y="{bar_y}" '
            f'width="{own:.2f}" height="11" rx="2" fill="{fill}"{stroke}><title>{tip}</title></rect>'
        )
        if part:
            # One unit of white between the two parts, so the split does not rest on colour.
            parts.append(
                f'<rect class="bar part" x="{own + 1:.2f}" y="{bar_y}" '
                f'width="{max(length - own - 1, 1):.2f}" height="11" rx="2" fill="{ACCENT_LIGHT}">'
                f"<title>{tip}</title></rect>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def latency_svg(latency: dict, *, title: str = "Latency") -> str:
    """p50 / p95 / p99 of the window's finished runs (``usage_cards``' ``latency``) as bars."""
    finished = latency.get("finished_runs") or 0
    if not finished:
        return bar_list_svg([], title=title, description="No run finished in the window.")
    rows = [
        {
            "label": f"{name} — {share} of runs took at most",
            "value": latency[name] or 0,
            "text": duration_text(latency[name]),
        }
        for name, share in (("p50", "half"), ("p95", "95 %"), ("p99", "99 %"))
    ]
    description = (
        f"Over {finished} finished run(s): half took at most {duration_text(latency['p50'])}, "
        f"95 % at most {duration_text(latency['p95'])}, 99 % at most "
        f"{duration_text(latency['p99'])}."
    )
    return bar_list_svg(rows, title=title, description=description)


def surfaces_svg(surfaces: list[dict], *, title: str = "Runs by surface") -> str:
    total = sum(row["run_count"] for row in surfaces)
    rows = [
        {"label": row["surface"], "value": row["run_count"], "text": str(row["run_count"])}
        for row in surfaces
    ]
    description = (
        f"{total} run(s): " + ", ".join(f"{row['surface']} {row['run_count']}" for row in surfaces)
        if surfaces
        else "No runs in the window."
    )
    return bar_list_svg(rows, title=title, description=description)


def adoption_svg(by_agent: list[dict], *, total_runs: int, title: str = "Runs by agent") -> str:
    """Adoption: each agent's runs, its delegated runs drawn lighter at the bar's end. Delegations
    are included, so the bars may add up to more than ``total_runs``; the description says so."""
    rows = [
        {
            "label": row["agent_name"],
            "value": row["run_count"],
            "part": row["delegated_run_count"],
            "text": str(row["run_count"]),
            "tip": f"{row['agent_name']}: {row['run_count']} run(s), "
            f"{row['delegated_run_count']} of them delegated",
        }
        for row in by_agent
    ]
    description = (
        "; ".join(
            f"{row['agent_name']} {row['run_count']} ({row['delegated_run_count']} delegated)"
            for row in by_agent
        )
        + f". Delegated runs are included, so these add up to "
        f"{sum(row['run_count'] for row in by_agent)} beside {total_runs} top-level run(s)."
        if by_agent
        else "No runs in the window."
    )
    return bar_list_svg(rows, title=title, description=description)


def providers_svg(by_provider: list[dict], *, title: str = "Spend by provider") -> str:
    """Each provider's own spend; a floor (a row some run of which could not be priced) is
    hatched and reads "≥"."""
    rows = [
        {
            "label": row["provider"],
            "value": Decimal(row["cost_usd"]),
            "floor": bool(row["partial_run_count"]),
            "text": ("≥ " if row["partial_run_count"] else "") + usd(row["cost_usd"]),
            "tip": f"{row['provider']}: {usd(row['cost_usd'], partial=bool(row['partial_run_count']))}"
            f" over {row['run_count']} run(s)"
            + (
                f", {row['partial_run_count']} not fully priced" if row["partial_run_count"] else ""
            ),
        }
        for row in by_provider
    ]
    floors = sum(1 for row in by_provider if row["partial_run_count"])
    description = (
        "; ".join(
            f"{row['provider']} {usd(row['cost_usd'], partial=bool(row['partial_run_count']))}"
            for row in by_provider
        )
        + (f". {floors} hatched bar(s) are floors." if floors else ".")
        if by_provider
        else "Nothing was spent in the window."
    )
    return bar_list_svg(rows, title=title, description=description)


def ratings_daily_svg(
    daily: list[dict], *, width: int = CARD_WIDTH, height: int = 120, title: str = "Ratings per day"
) -> str:
    """Thumbs per UTC day (``quality``'s ``daily``): up above the axis, down below it — the two
    told apart by their side of the line as well as by colour."""
    up_total = sum(point["up"] for point in daily)
    down_total = sum(point["down"] for point in daily)
    first, last = (daily[0]["date"], daily[-1]["date"]) if daily else (None, None)
    description = (
        f"{len(daily)} days from {first} to {last}: {up_total} thumbs up above the line, "
        f"{down_total} thumbs down below it."
        if daily
        else "No days in the window."
    )
    if daily and (busiest := max(daily, key=lambda point: (point["down"], point["date"])))["down"]:
        description += f" The most thumbs down in one day: {busiest['down']} on {busiest['date']}."
    uid, parts = _open_svg("daily-ratings", width, height, title, description)
    left, top, bottom = 36, 4, 18
    plot_h = height - top - bottom
    axis = top + plot_h / 2
    peak = max((max(point["up"], point["down"]) for point in daily), default=0) or 1
    parts += [
        f'<line x1="{left}" y1="{axis}" x2="{width}" y2="{axis}" stroke="{MUTED}"/>',
        f'<text x="0" y="{top + 10}" font-size="11" fill="{GOOD}">▲ up</text>',
        f'<text x="0" y="{top + plot_h}" font-size="11" fill="{BAD}">▼ down</text>',
    ]
    if daily:
        slot = (width - left) / len(daily)
        bar_w = max(slot * 0.7, 1)
        for index, point in enumerate(daily):
            x = left + index * slot + (slot - bar_w) / 2
            tip = escape(f"{point['date']}: {point['up']} up, {point['down']} down")
            for count, kind, colour in ((point["up"], "up", GOOD), (point["down"], "down", BAD)):
                if not count:
                    continue
                bar_h = max(plot_h / 2 * count / peak, 1.5)
                y = axis - bar_h if kind == "up" else axis
                parts.append(
                    f'<rect class="bar {kind}" x="{x:.2f}" y="{y:.2f}" width="{bar_w:.2f}" '
                    f'height="{bar_h:.2f}" fill="{colour}"><title>{tip}</title></rect>'
                )
        parts.append(
            f'<text x="{left}" y="{height - 4}" font-size="11" fill="{MUTED}">{escape(str(first))}</text>'
        )
        parts.append(
            f'<text x="{width}" y="{height - 4}" text-anchor="end" font-size="11" fill="{MUTED}">'
            f"{escape(str(last))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def usage_card_charts(cards: dict, *, total_runs: int) -> dict[str, str]:
    """Every usage card's chart, from ``usage_cards``' blocks of one window."""
    return {
        "outcomes": outcome_donut_svg(cards["outcomes"], title="Outcomes of the window's runs"),
        "latency": latency_svg(cards["latency"], title="Latency of the window's finished runs"),
        "surfaces": surfaces_svg(cards["surfaces"]),
        "quality": ratings_daily_svg(cards["quality"]["daily"], title="Thumbs per day"),
        "providers": providers_svg(cards["by_provider"]),
        "agents": adoption_svg(cards["by_agent"], total_runs=total_runs),
    }
