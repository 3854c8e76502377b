"""A run's chart, as the picture a chat platform shows.

The runner draws every ``create_chart`` result as SVG on the server (``apps.capabilities.tools
.chart_svg``) and sends it in the ``tool_result`` frame the relay follows. A chat platform wants a
raster image: Telegram's ``sendPhoto`` refuses SVG, and Slack and Mattermost show a PNG inline but
an SVG as a file to download. So the same drawing — not a second renderer — is rasterized here
with resvg (``resvg-py``: the renderer ships inside the wheel, no system library), at twice its
size so it stays sharp on a phone, on white (the console's SVG has a transparent background,
which a dark-mode client would show as black on black).

Text is set in the machine's fonts (resvg reads the system's; the Docker image installs DejaVu).
"""

from __future__ import annotations

import re
from html import unescape

import resvg_py

ZOOM = 2.0
BACKGROUND = "#ffffff"
# chart_svg labels the drawing "<kind> chart: <title>" for screen readers; the title is reused as
# the image's caption and file name.
_ARIA_LABEL = re.compile(r'aria-label="(?:[a-z]+ chart: )?([^"]*)"')
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


class ChartUnreadable(Exception):
    """The frame's SVG could not be rasterized; ``sentence`` says why."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


def chart_title(svg: str) -> str:
    found = _ARIA_LABEL.search(svg or "")
    return unescape(found.group(1)).strip() if found and found.group(1).strip() else "Chart"


def chart_filename(title: str) -> str:
    stem = _UNSAFE_FILENAME.sub("-", title).strip("-.")[:60] or "chart"
    return f"{stem}.png"


def chart_png(svg: str) -> bytes:
    """The drawing as PNG bytes, or ``ChartUnreadable``."""
    if not svg:
        raise ChartUnreadable("the chart has no drawing")
    try:
        return bytes(resvg_py.svg_to_bytes(svg_string=svg, background=BACKGROUND, zoom=ZOOM))
    except ValueError as exc:
        raise ChartUnreadable(f"the chart could not be drawn as an image ({exc})") from None
