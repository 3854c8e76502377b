"""Charts sent as images: every chart a run draws follows its answer into the thread as a PNG —
the same drawing the console shows (the frame's server-drawn SVG, rasterized) — through each
platform's own upload: Slack's external upload (three calls), Telegram's sendPhoto, Mattermost's
files then a post with file_ids."""

from __future__ import annotations

import json

import pytest

from apps.channels.images import chart_png
from apps.runs.models import Run
from apps.runs.transcript import run_turn
from tests.runs.factories import published_agent

from .conftest import (
    make_binding,
    mattermost_post,
    post_mattermost,
    post_slack,
    post_telegram,
    slack_event,
    telegram_update,
)
from .fakes import Upload

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SALES = {
    "title": "Sales by month",
    "kind": "bar",
    "x_values": ["Jan", "Feb", "Mar"],
    "series": [{"name": "EUR", "values": [3, 5, 8]}],
}
COSTS = {**SALES, "title": "Costs", "kind": "line"}


def chart_call(*charts) -> str:
    return "\n".join("/call create_chart " + json.dumps(chart) for chart in charts)


@pytest.fixture
def charting(org, builder):
    return published_agent(org, name="Charts", created_by=builder, capabilities=[{"id": "charts"}])


def drawn(run) -> list[bytes]:
    """The run's charts as the console draws them from the stored conversation, rasterized:
    what the thread must have received."""

    def svgs(node):
        if isinstance(node, dict):
            if node.get("kind") == "chart":
                yield node["svg"]
            for value in node.values():
                yield from svgs(value)
        elif isinstance(node, list):
            for value in node:
                yield from svgs(value)

    return [chart_png(svg) for svg in svgs(run_turn(run.conversation, run.pk))]


@pytest.mark.django_db
def test_slack_gets_each_chart_uploaded_into_the_thread_after_the_answer(
    org, builder, charting, fake, eager_celery, django_capture_on_commit_callbacks
):
    slack = fake("slack")
    binding = make_binding(org, builder, charting, "slack")
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(
            binding,
            slack_event(f"<@U0BOT> {chart_call(SALES, COSTS)}", ts="1700000000.000500"),
        )
    run = Run.objects.get()
    assert run.status == "completed", run.error
    images = drawn(run)
    assert len(images) == 2 and all(image.startswith(PNG_SIGNATURE) for image in images)

    asked = slack.called("files.getUploadURLExternal")
    assert [call.body["filename"] for call in asked] == ["Sales-by-month.png", "Costs.png"]
    assert [int(call.body["length"]) for call in asked] == [len(image) for image in images]
    uploads = [call for call in slack.calls if call.path.startswith("/upload/v1/")]
    assert [call.body for call in uploads] == images
    # The pre-signed upload URL is not sent the bot's token.
    assert all(call.authorization == "" for call in uploads)
    completed = slack.called("files.completeUploadExternal")
    assert [call.body for call in completed] == [
        {
            "files": [{"id": f"F{n}", "title": title}],
            "channel_id": "C0815",
            "thread_ts": "1700000000.000500",
        }
        for n, title in zip(
            [upload.path.rsplit("/F", 1)[1] for upload in uploads],
            ["Sales by month", "Costs"],
            strict=True,
        )
    ]
    # The answer's text is in the thread first, then the charts.
    methods = [slack.method_of(call) for call in slack.calls]
    assert methods.index("chat.update") < methods.index("files.getUploadURLExternal")
    assert slack.called("chat.update")[-1].body["text"] == run.output


@pytest.mark.django_db
def test_telegram_gets_the_chart_as_a_photo_replying_in_the_group(
    org, builder, charting, fake, eager_celery, django_capture_on_commit_callbacks
):
    telegram = fake("telegram")
    binding = make_binding(org, builder, charting, "telegram")
    with django_capture_on_commit_callbacks(execute=True):
        post_telegram(
            binding,
            telegram_update(chart_call(SALES), chat_id=-1009, chat_type="group", message_id=77),
        )
    run = Run.objects.get()
    assert run.status == "completed", run.error
    (photo,) = telegram.called("sendPhoto")
    fields = photo.body
    assert fields["chat_id"] == "-1009" and fields["reply_to_message_id"] == "77"
    assert fields["caption"] == "Sales by month"
    assert isinstance(fields["photo"], Upload)
    assert fields["photo"].content_type == "image/png"
    assert fields["photo"].data == drawn(run)[0]


@pytest.mark.django_db
def test_mattermost_gets_the_chart_uploaded_then_posted_under_the_root(
    org, builder, charting, fake, eager_celery, django_capture_on_commit_callbacks
):
    server = fake("mattermost")
    binding = make_binding(org, builder, charting, "mattermost", server_url=server.url)
    with django_capture_on_commit_callbacks(execute=True):
        post_mattermost(binding, mattermost_post(chart_call(SALES), post_id="root5"))
    run = Run.objects.get()
    assert run.status == "completed", run.error
    (upload,) = server.called("POST /files")
    assert upload.body["channel_id"] == "chan1"
    assert upload.body["files"].filename == "Sales-by-month.png"
    assert upload.body["files"].data == drawn(run)[0]
    assert upload.authorization == "Bearer mattermost-bot-token"
    shared = server.called("POST /posts")[-1].body
    file_id = shared["file_ids"][0]
    assert shared == {
        "channel_id": "chan1",
        "message": "Sales by month",
        "file_ids": [file_id],
        "root_id": "root5",
    }
    assert file_id.startswith("file")


@pytest.mark.django_db
def test_a_chart_the_platform_refuses_is_said_in_words(
    org, builder, charting, fake, eager_celery, django_capture_on_commit_callbacks
):
    slack = fake("slack")
    slack.answers["files.getUploadURLExternal"] = {"ok": False, "error": "missing_scope"}
    binding = make_binding(org, builder, charting, "slack")
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(binding, slack_event(f"<@U0BOT> {chart_call(SALES)}"))
    run = Run.objects.get()
    assert run.status == "completed", run.error
    assert not slack.called("files.completeUploadExternal")
    said = slack.called("chat.postMessage")[-1].body
    assert said["thread_ts"] == "1700000000.000100"
    assert said["text"] == (
        "The chart “Sales by month” could not be sent here: Slack refused "
        "files.getUploadURLExternal: missing_scope."
    )


@pytest.mark.django_db
def test_an_upload_url_off_slack_is_never_sent_the_chart(
    org, builder, charting, fake, eager_celery, django_capture_on_commit_callbacks
):
    slack = fake("slack")
    slack.answers["files.getUploadURLExternal"] = {
        "ok": True,
        "upload_url": "https://files.attacker.test/upload",
        "file_id": "F1",
    }
    binding = make_binding(org, builder, charting, "slack")
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(binding, slack_event(f"<@U0BOT> {chart_call(SALES)}"))
    assert not slack.called("files.completeUploadExternal")
    assert "is not a Slack address (files.attacker.test)" in slack.texts()[-1]


@pytest.mark.django_db
def test_a_slack_dm_gets_the_chart_in_the_dm_without_a_thread(
    org, builder, charting, fake, eager_celery, django_capture_on_commit_callbacks
):
    slack = fake("slack")
    binding = make_binding(org, builder, charting, "slack")
    with django_capture_on_commit_callbacks(execute=True):
        post_slack(
            binding,
            slack_event(chart_call(SALES), channel="D042", channel_type="im", kind="message"),
        )
    (completed,) = slack.called("files.completeUploadExternal")
    assert completed.body["channel_id"] == "D042" and "thread_ts" not in completed.body


def test_the_png_is_the_drawing_at_twice_its_size_titled_from_it():
    import struct

    from apps.capabilities.tools.chart_svg import HEIGHT, WIDTH, render_chart_svg
    from apps.capabilities.tools.charts import Series, validate_chart
    from apps.channels.images import ChartUnreadable, chart_filename, chart_title

    chart = validate_chart(
        title='Q3 <"net"> & more',
        kind="bar",
        x_values=["Jan"],
        series=[Series(name="EUR", values=[1])],
    )
    svg = render_chart_svg(chart)
    image = chart_png(svg)
    assert image.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", image[16:24])  # the IHDR chunk
    assert (width, height) == (WIDTH * 2, HEIGHT * 2)
    assert chart_title(svg) == 'Q3 <"net"> & more'
    assert chart_filename(chart_title(svg)) == "Q3-net-more.png"
    with pytest.raises(ChartUnreadable):
        chart_png("<svg")
