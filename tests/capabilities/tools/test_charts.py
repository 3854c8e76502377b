"""charts: create_chart validates columns and returns a chart artifact the console can redraw."""

import pytest

from apps.capabilities.tools.charts import ARTIFACT_METADATA, Series, chart_artifact, validate_chart
from apps.capabilities.tools.failures import WrongArguments

from .helpers import build, call, run_agent, tool_returns, toolset_context

THREE = {
    "title": "Q1 sales",
    "x_values": ["Jan", "Feb", "Mar"],
    "series": [{"name": "EU", "values": [3, 5, 8]}],
}


def first_return(args, **context):
    toolset = build("charts", context=toolset_context(**context))
    result, _ = run_agent([toolset], [[call("create_chart", **args)], "done"])
    return tool_returns(result.all_messages())[0]


def test_a_chart_of_three_numbers_is_drawn_and_carried_as_an_artifact():
    part = first_return(THREE)
    assert part.outcome == "success"
    assert part.content.startswith('Drew the line chart "Q1 sales"')
    chart = chart_artifact(part.metadata)
    assert chart["type"] == "chart" and chart["kind"] == "line"
    assert chart["x_values"] == ["Jan", "Feb", "Mar"]
    assert chart["series"] == [{"name": "EU", "values": [3.0, 5.0, 8.0]}]


def test_the_artifact_is_kept_in_the_stored_history():
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    toolset = build("charts")
    result, _ = run_agent([toolset], [[call("create_chart", **THREE)], "done"])
    stored = ModelMessagesTypeAdapter.validate_json(result.all_messages_json())
    (part,) = tool_returns(stored)
    assert chart_artifact(part.metadata)["series"][0]["values"] == [3.0, 5.0, 8.0]


def test_the_chart_is_also_handed_to_the_runner_when_it_asks():
    sink = []
    first_return(THREE, artifacts=sink)
    assert [c["title"] for c in sink] == ["Q1 sales"]


@pytest.mark.parametrize(
    ("args", "names"),
    [
        ({**THREE, "x_values": []}, "x_values is empty"),
        ({"title": "Q1", "series": [{"name": "EU", "values": [1]}]}, "x_values is empty"),
        ({**THREE, "series": []}, "no series"),
        ({"title": "Q1", "x_values": ["a"]}, "no series"),
        (
            {**THREE, "series": [{"name": "EU", "values": [3, 5]}]},
            "Series 'EU' has 2 values but the axis has 3 points",
        ),
        ({**THREE, "series": [{"name": "EU", "values": [3, 5, 8, 9]}]}, "more values than points"),
        ({**THREE, "series": [{"name": "EU"}]}, "Series 'EU' has 0 values"),
        ({**THREE, "title": " "}, "needs a title"),
        (
            {
                **THREE,
                "kind": "pie",
                "series": [{"name": "a", "values": [1, 2, 3]}, {"name": "b", "values": [1, 2, 3]}],
            },
            "exactly one series",
        ),
        ({**THREE, "kind": "scatter"}, "numeric x_values"),
    ],
    ids=[
        "empty axis",
        "missing axis",
        "no series",
        "missing series",
        "short series",
        "long series",
        "series without values",
        "no title",
        "pie of two",
        "scatter labels",
    ],
)
def test_an_empty_or_mismatched_chart_is_a_retry_naming_what_is_missing(args, names):
    part = first_return(args)
    assert part.outcome == "retried"
    assert names in part.content


def test_every_kind_is_accepted():
    for kind in ("line", "bar", "area", "pie"):
        assert (
            validate_chart(
                kind=kind, title="t", x_values=["a", "b"], series=[Series(name="s", values=[1, 2])]
            )["kind"]
            == kind
        )
    assert validate_chart(
        kind="scatter", title="t", x_values=[1, 2.5], series=[Series(values=[1, 2])]
    )["x_values"] == [1, 2.5]


def test_a_non_finite_value_is_refused():
    with pytest.raises(WrongArguments, match="not a finite number"):
        validate_chart(
            kind="line", title="t", x_values=["a"], series=[Series(name="s", values=[float("inf")])]
        )


def test_the_metadata_key_is_the_console_contract():
    assert ARTIFACT_METADATA == "agenticos_artifact"
    assert chart_artifact({"other": 1}) is None
    assert chart_artifact(None) is None


# --- drawing ----------------------------------------------------------------------------------------

from xml.etree import ElementTree  # noqa: E402

from apps.capabilities.tools.chart_svg import render_chart_svg  # noqa: E402


@pytest.mark.parametrize("kind", ["line", "bar", "area", "scatter", "pie"])
def test_every_kind_draws_as_well_formed_svg(kind):
    x_values = [1, 2, 3] if kind == "scatter" else ["Jan", "Feb", "Mar"]
    chart = validate_chart(
        kind=kind,
        title="Q1 <sales>",
        x_values=x_values,
        series=[Series(name="EU & UK", values=[3, 5, 8])],
    )
    svg = render_chart_svg(chart)
    root = ElementTree.fromstring(svg)  # parses: every text is escaped
    assert root.tag.endswith("svg")
    assert "Q1 &lt;sales&gt;" in svg and "<sales>" not in svg


def test_a_drawn_chart_shows_each_point():
    chart = validate_chart(
        kind="line",
        title="t",
        x_values=["a", "b", "c"],
        series=[Series(name="s", values=[3, 5, 8])],
    )
    svg = render_chart_svg(chart)
    assert svg.count("<circle") == 3 and "<polyline" in svg
    assert "<title>s: 8</title>" in svg
