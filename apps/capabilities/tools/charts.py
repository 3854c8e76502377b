"""charts: ``create_chart`` draws numbers the model already has (seed 000, "Gráficos").

The numbers arrive as columns — one ``x_values`` list for the axis and one ``values`` list per
series — because a free-form ``data`` argument is not something a JSON Schema can describe, and a
model given an array of objects with no declared properties returned a single empty one.

A chart with nothing in it is inexpressible rather than merely refused: an axis without points, a
chart without series, or a series with fewer numbers than the axis has points come back as a retry
naming what is missing. A frame drawn around no data reads as "no trend", not as an error — and it
would be persisted and redrawn on every replay of the conversation.

The chart is returned as an artifact (:func:`chart_artifact`): JSON carried in the tool return's
``metadata``, which the transcript stores with the conversation, so the console redraws it from
the stored data on every reload (``chart_svg.render_chart_svg``). When the runner hands a list in
``resources.artifacts``, the chart is appended there too.
"""

from __future__ import annotations

import math
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext
from pydantic_ai.messages import ToolReturn

from ._toolsets import declared_toolset
from .failures import WrongArguments, budgeted

CAPABILITY_ID = "charts"
ARTIFACT_METADATA = "agenticos_artifact"
CHART_ARTIFACT_TYPE = "chart"
CHART_ARTIFACT_VERSION = 1
CHART_KINDS = ("line", "bar", "area", "scatter", "pie")
MAX_POINTS = 1000
MAX_SERIES = 12
MAX_LABEL_CHARS = 200

ChartKind = Literal["line", "bar", "area", "scatter", "pie"]


class Series(BaseModel):
    """One series of a chart: a name and exactly one value per axis point."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("", description="The series' name, shown in the legend.")
    # Defaults let a missing list reach our own check, which names what is missing (a schema
    # error would only say "field required").
    values: list[float] = Field(
        default_factory=list, description="One number per x_value, in the same order."
    )


def validate_chart(
    *,
    title: str,
    kind: str,
    x_values: list[Any],
    series: list[Series],
    x_label: str = "",
    y_label: str = "",
) -> dict[str, Any]:
    """The chart's stored form, or :class:`WrongArguments` naming what is missing or wrong."""
    title = " ".join((title or "").split())
    if not title:
        raise WrongArguments('The chart needs a title, e.g. title="Monthly sales".')
    if kind not in CHART_KINDS:
        raise WrongArguments(f"kind must be one of {', '.join(CHART_KINDS)}; got {kind!r}.")
    if not x_values:
        raise WrongArguments(
            "x_values is empty: the axis has no points. Pass the axis points in order, e.g. "
            'x_values=["Jan", "Feb", "Mar"], with one value per point in each series.'
        )
    if len(x_values) > MAX_POINTS:
        raise WrongArguments(
            f"x_values has {len(x_values)} points; a chart takes at most {MAX_POINTS}."
        )
    if not series:
        raise WrongArguments(
            f'The chart has no series. Pass at least one, e.g. series=[{{"name": "Sales", '
            f'"values": [...{len(x_values)} numbers...]}}], one value per x_value.'
        )
    if len(series) > MAX_SERIES:
        raise WrongArguments(f"The chart has {len(series)} series; it takes at most {MAX_SERIES}.")
    if kind == "pie" and len(series) != 1:
        raise WrongArguments(
            f"A pie chart takes exactly one series; got {len(series)}. Use a bar chart to compare several."
        )
    points = [
        x if isinstance(x, int | float) and not isinstance(x, bool) else str(x) for x in x_values
    ]
    if kind == "scatter" and not all(isinstance(x, int | float) for x in points):
        raise WrongArguments(
            "A scatter chart needs numeric x_values; use a line or bar chart for labels."
        )
    stored_series = []
    for index, one in enumerate(series):
        name = " ".join((one.name or "").split()) or f"Series {index + 1}"
        if len(one.values) != len(points):
            fewer = "fewer" if len(one.values) < len(points) else "more"
            raise WrongArguments(
                f"Series {name!r} has {len(one.values)} values but the axis has {len(points)} points "
                f"({fewer} values than points). Give exactly one value per x_value, in the same order."
            )
        bad = [i for i, v in enumerate(one.values) if not math.isfinite(v)]
        if bad:
            raise WrongArguments(
                f"Series {name!r} has a value that is not a finite number at position {bad[0] + 1}."
            )
        if kind == "pie" and any(v < 0 for v in one.values):
            raise WrongArguments("A pie chart cannot show negative values; use a bar chart.")
        stored_series.append({"name": name[:MAX_LABEL_CHARS], "values": list(one.values)})
    return {
        "type": CHART_ARTIFACT_TYPE,
        "version": CHART_ARTIFACT_VERSION,
        "id": uuid.uuid4().hex,
        "title": title[:MAX_LABEL_CHARS],
        "kind": kind,
        "x_values": points,
        "series": stored_series,
        "x_label": " ".join((x_label or "").split())[:MAX_LABEL_CHARS],
        "y_label": " ".join((y_label or "").split())[:MAX_LABEL_CHARS],
    }


def chart_artifact(metadata: Any) -> dict[str, Any] | None:
    """The chart a tool return's metadata carries, or None (for the console and the transcript)."""
    if isinstance(metadata, dict):
        artifact = metadata.get(ARTIFACT_METADATA)
        if isinstance(artifact, dict) and artifact.get("type") == CHART_ARTIFACT_TYPE:
            return artifact
    return None


def build_charts_toolset(binding, context):
    sink = context.resources.artifacts

    @budgeted
    def create_chart(
        ctx: RunContext[Any],
        title: str = "",
        kind: ChartKind = "line",
        x_values: list[str | float] | None = None,
        series: list[Series] | None = None,
        x_label: str = "",
        y_label: str = "",
    ) -> ToolReturn:
        chart = validate_chart(
            title=title,
            kind=kind,
            x_values=list(x_values or []),
            series=list(series or []),
            x_label=x_label,
            y_label=y_label,
        )
        if isinstance(sink, list):
            sink.append(chart)
        names = ", ".join(s["name"] for s in chart["series"])
        return ToolReturn(
            return_value=(
                f'Drew the {chart["kind"]} chart "{chart["title"]}" in the conversation: '
                f"{len(chart['x_values'])} points, series {names}."
            ),
            metadata={ARTIFACT_METADATA: chart},
        )

    return declared_toolset(
        CAPABILITY_ID, binding, {"create_chart": create_chart}, toolset_id="charts"
    )
