"""The frames websocket, through the project's ASGI application (auth middleware, origin check,
routing) with Channels' WebsocketCommunicator: who may follow a run, resume after a sequence,
the whole stream after the run ended, access re-checked before every send, the conversation
socket, and the cap on a run's stream."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import SESSION_KEY as AUTH_SESSION_KEY

from agenticos.asgi import application
from apps.orgs.models import Membership
from apps.orgs.services import api_key_create
from apps.runs import events
from apps.runs.consumers import ACCESS_FRESH_SECONDS
from apps.runs.events import REPLIES_READ_EVERY, FramePublisher, frames_after, reset_frames
from apps.runs.models import Run

from .factories import published_agent, queued_run

pytestmark = pytest.mark.django_db(transaction=True)


def key_for(user, organization) -> str:
    return api_key_create(actor=None, organization=organization, user=user, name="ws")[1]


def socket(path: str, key: str | None = None, headers: list | None = None) -> WebsocketCommunicator:
    headers = list(headers or [])
    if key is not None:
        headers.append((b"authorization", f"Bearer {key}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def handshake(communicator: WebsocketCommunicator):
    """How a socket starts, as a client sees it: refused sockets are accepted and then closed
    with their code (a close before the accept would reach a browser as an HTTP 403, no code)."""
    connected, detail = await communicator.connect()
    if not connected:
        return ("closed before accept", detail)
    try:
        message = await communicator.receive_output(timeout=1)
    except TimeoutError:
        return (True, None)
    if message["type"] == "websocket.close":
        return (False, message.get("code"))
    return (True, message)


def publish_run(run_id: int, *, deltas=("Hel", "lo"), finish=True) -> FramePublisher:
    reset_frames(run_id)
    frames = FramePublisher(run_id)
    frames.send({"type": "run_started", "model_label": "Offline model"})
    for delta in deltas:
        frames.send({"type": "text_delta", "delta": delta})
    frames.send(
        {
            "type": "cost",
            "request": 1,
            "input_tokens": 5,
            "output_tokens": 2,
            "cost_usd": "0.00004500",
            "cost_is_partial": False,
        }
    )
    if finish:
        finish_run(frames)
    frames.flush()  # stored before the test's client connects (FramePublisher's contract)
    return frames


def finish_run(frames: FramePublisher, status="completed") -> None:
    Run.objects.filter(pk=frames.run_id).update(status=status)
    frames.send(
        {
            "type": "run_finished",
            "status": status,
            "cost_usd": "0.00004500",
            "cost_is_partial": False,
            "error": "",
        }
    )


async def receive_until_closed(communicator, timeout=5) -> tuple[list[dict], int]:
    frames = []
    while True:
        message = await communicator.receive_output(timeout)
        if message["type"] == "websocket.close":
            return frames, message.get("code", 1000)
        frames.append(json.loads(message["text"]))


@pytest.fixture
def agent(org):
    return published_agent(org)


def test_a_client_connecting_after_the_run_ended_gets_the_whole_stream_and_the_terminal_frame(
    org, member, agent
):
    run = queued_run(member, org, agent)
    publish_run(run.pk)
    key = key_for(member, org)

    async def scenario():
        communicator = socket(f"/ws/runs/{run.pk}/", key)
        connected, _ = await communicator.connect()
        assert connected
        return await receive_until_closed(communicator)

    frames, code = async_to_sync(scenario)()
    assert [f["type"] for f in frames] == [
        "run_started",
        "text_delta",
        "text_delta",
        "cost",
        "run_finished",
    ]
    assert [f["seq"] for f in frames] == [1, 2, 3, 4, 5]
    terminal = frames[-1]
    assert (
        terminal["run_id"] == run.pk
        and terminal["status"] == "completed"
        and terminal["cost_usd"] == "0.00004500"
    )
    assert code == 1000


def test_after_seq_resumes_including_frames_sent_while_the_client_was_away(org, member, agent):
    run = queued_run(member, org, agent)
    frames = publish_run(run.pk, finish=False)  # seq 1..4

    async def scenario():
        key = await database_sync_to_async(key_for)(member, org)
        first = socket(f"/ws/runs/{run.pk}/", key)
        assert (await first.connect())[0]
        seen = [json.loads(await first.receive_from()) for _ in range(4)]
        await first.disconnect()
        # While away: two more frames and the end.
        frames.send({"type": "tool_call", "tool_name": "echo", "tool_call_id": "c1", "args": "{}"})
        frames.send(
            {"type": "tool_result", "tool_name": "echo", "tool_call_id": "c1", "content": "echo"}
        )
        await database_sync_to_async(finish_run)(frames)
        again = socket(f"/ws/runs/{run.pk}/?after={seen[-1]['seq']}", key)
        assert (await again.connect())[0]
        rest, _ = await receive_until_closed(again)
        return seen, rest

    seen, rest = async_to_sync(scenario)()
    assert [f["seq"] for f in seen] == [1, 2, 3, 4]
    assert [(f["seq"], f["type"]) for f in rest] == [
        (5, "tool_call"),
        (6, "tool_result"),
        (7, "run_finished"),
    ]


def test_live_frames_arrive_as_the_worker_writes_them(org, member, agent):
    run = queued_run(member, org, agent)
    reset_frames(run.pk)

    async def scenario():
        key = await database_sync_to_async(key_for)(member, org)
        communicator = socket(f"/ws/runs/{run.pk}/", key)
        assert (await communicator.connect())[0]
        assert await communicator.receive_nothing(0.2)
        frames = FramePublisher(run.pk)
        frames.send({"type": "run_started", "model_label": "Offline model"})
        first = json.loads(await communicator.receive_from(2))
        frames.send({"type": "text_delta", "delta": "Hi"})
        second = json.loads(await communicator.receive_from(2))
        await database_sync_to_async(finish_run)(frames)
        rest, code = await receive_until_closed(communicator)
        return [first, second, *rest], code

    frames, code = async_to_sync(scenario)()
    assert [f["type"] for f in frames] == ["run_started", "text_delta", "run_finished"]
    assert code == 1000


def test_runs_view_follows_a_colleagues_run_a_member_does_not(org, member, builder, viewer, agent):
    run = queued_run(member, org, agent)
    publish_run(run.pk)

    async def connect_as(user):
        key = await database_sync_to_async(key_for)(user, org)
        return await handshake(socket(f"/ws/runs/{run.pk}/", key))

    async def scenario():
        colleague = await database_sync_to_async(queued_run)(builder, org, agent)
        return (
            await connect_as(builder),
            await connect_as(viewer),
            await handshake(
                socket(
                    f"/ws/runs/{colleague.pk}/",
                    await database_sync_to_async(key_for)(member, org),
                )
            ),
        )

    builder_result, viewer_result, member_on_colleague = async_to_sync(scenario)()
    assert builder_result[0] is True
    assert viewer_result == (False, 4404)
    assert member_on_colleague == (False, 4404)


def test_another_organizations_run_reads_like_a_missing_one(
    org, other_org, outsider, member, agent
):
    run = queued_run(member, org, agent)
    publish_run(run.pk)

    async def scenario():
        key = await database_sync_to_async(key_for)(outsider, other_org)
        return await handshake(socket(f"/ws/runs/{run.pk}/", key)), await handshake(
            socket("/ws/runs/999999/", key)
        )

    foreign, missing = async_to_sync(scenario)()
    assert foreign == missing == (False, 4404)


def test_no_credentials_and_a_bad_key_are_refused(org, member, agent):
    run = queued_run(member, org, agent)

    async def scenario():
        # No key and no cookie: the origin check comes first for a browser-less, key-less client.
        anonymous = await handshake(
            socket(f"/ws/runs/{run.pk}/", headers=[(b"origin", b"http://127.0.0.1")])
        )
        bad_key = await handshake(socket(f"/ws/runs/{run.pk}/", "agos_not-a-key"))
        bad_cursor = await handshake(
            socket(
                f"/ws/runs/{run.pk}/?after=x", await database_sync_to_async(key_for)(member, org)
            )
        )
        return anonymous, bad_key, bad_cursor

    anonymous, bad_key, bad_cursor = async_to_sync(scenario)()
    assert anonymous == (False, 4401)
    assert bad_key == (False, 4401)
    assert bad_cursor == (False, 4422)


def test_access_is_checked_again_before_each_send(org, member, builder, agent):
    run = queued_run(member, org, agent)
    reset_frames(run.pk)

    async def scenario():
        key = await database_sync_to_async(key_for)(builder, org)
        communicator = socket(f"/ws/runs/{run.pk}/", key)
        assert (await communicator.connect())[0]
        frames = FramePublisher(run.pk)
        frames.send({"type": "run_started", "model_label": "Offline model"})
        first = json.loads(await communicator.receive_from(2))
        # The builder leaves the organization mid-run: the next frame is not theirs to read.
        await database_sync_to_async(
            Membership.objects.filter(organization=org, user=builder).delete
        )()
        # A send goes out only under a "yes" at most ACCESS_FRESH_SECONDS old (consumers.AccessCheck).
        await asyncio.sleep(ACCESS_FRESH_SECONDS + 0.05)
        frames.send({"type": "text_delta", "delta": "secret"})
        rest, code = await receive_until_closed(communicator)
        return first, rest, code

    first, rest, code = async_to_sync(scenario)()
    assert first["type"] == "run_started"
    assert rest == [] and code == 4403


def test_a_revoked_key_stops_the_stream(org, member, agent):
    from apps.orgs.models import ApiKey

    run = queued_run(member, org, agent)
    reset_frames(run.pk)

    async def scenario():
        key = await database_sync_to_async(key_for)(member, org)
        communicator = socket(f"/ws/runs/{run.pk}/", key)
        assert (await communicator.connect())[0]
        await database_sync_to_async(ApiKey.objects.filter(user=member).update)(
            revoked_at="2025-01-01T00:00:00Z"
        )
        FramePublisher(run.pk).send({"type": "run_started", "model_label": "Offline model"})
        return await receive_until_closed(communicator)

    frames, code = async_to_sync(scenario)()
    assert frames == [] and code == 4403


def test_the_console_session_cookie_authenticates_a_browser_on_an_allowed_origin(
    org, member, agent, client
):
    run = queued_run(member, org, agent)
    publish_run(run.pk)
    client.force_login(member)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    assert client.session[AUTH_SESSION_KEY] == str(member.pk)

    async def scenario():
        allowed = socket(
            f"/ws/runs/{run.pk}/", headers=[(b"cookie", cookie), (b"origin", b"http://127.0.0.1")]
        )
        assert (await allowed.connect())[0]
        frames, _ = await receive_until_closed(allowed)
        cross_site = await socket(
            f"/ws/runs/{run.pk}/",
            headers=[(b"cookie", cookie), (b"origin", b"http://evil.example")],
        ).connect()
        return frames, cross_site

    frames, cross_site = async_to_sync(scenario)()
    assert frames[-1]["type"] == "run_finished"
    assert cross_site[0] is False


def test_the_conversation_socket_carries_every_run_of_the_thread_to_its_owner_only(
    org, member, builder, agent
):
    first = queued_run(member, org, agent, text="one")
    publish_run(first.pk)

    async def scenario():
        key = await database_sync_to_async(key_for)(member, org)
        communicator = socket(f"/ws/conversations/{first.conversation_id}/", key)
        assert (await communicator.connect())[0]
        replayed = [json.loads(await communicator.receive_from(2)) for _ in range(5)]
        # A second turn in the same conversation: announced on commit, followed without reconnecting.
        conversation = await database_sync_to_async(lambda: first.conversation)()
        second = await database_sync_to_async(queued_run)(member, org, agent, "two", conversation)
        frames = FramePublisher(second.pk)
        frames.send({"type": "run_started", "model_label": "Offline model"})
        await database_sync_to_async(finish_run)(frames)
        live = [json.loads(await communicator.receive_from(3)) for _ in range(2)]
        await communicator.disconnect()
        # Resume in the middle of the first run: the rest of it, then all of the second.
        resumed = socket(
            f"/ws/conversations/{first.conversation_id}/?after_run={first.pk}&after=3", key
        )
        assert (await resumed.connect())[0]
        again = [json.loads(await resumed.receive_from(2)) for _ in range(4)]
        await resumed.disconnect()
        builder_key = await database_sync_to_async(key_for)(builder, org)
        colleague = await handshake(
            socket(f"/ws/conversations/{first.conversation_id}/", builder_key)
        )
        return second.pk, replayed, live, again, colleague

    second_id, replayed, live, again, colleague = async_to_sync(scenario)()
    assert [f["run_id"] for f in replayed] == [first.pk] * 5
    assert [(f["run_id"], f["type"]) for f in live] == [
        (second_id, "run_started"),
        (second_id, "run_finished"),
    ]
    assert [(f["run_id"], f["seq"]) for f in again] == [
        (first.pk, 4),
        (first.pk, 5),
        (second_id, 1),
        (second_id, 2),
    ]
    # runs:view reads a colleague's run, never their private thread (seed 003).
    assert colleague == (False, 4404)


def test_a_finished_run_whose_stream_expired_still_ends_with_its_terminal_frame(
    org, member, agent, monkeypatch
):
    from apps.runs import consumers

    monkeypatch.setattr(consumers, "BLOCK_MS", 50)
    run = queued_run(member, org, agent)
    Run.objects.filter(pk=run.pk).update(
        status="failed", error="The model provider failed to answer (HTTP 500)."
    )
    reset_frames(run.pk)

    async def scenario():
        communicator = socket(
            f"/ws/runs/{run.pk}/", await database_sync_to_async(key_for)(member, org)
        )
        assert (await communicator.connect())[0]
        return await receive_until_closed(communicator)

    frames, code = async_to_sync(scenario)()
    assert (
        len(frames) == 1 and frames[0]["type"] == "run_finished" and frames[0]["status"] == "failed"
    )
    assert frames[0]["run_id"] == run.pk and code == 1000


def test_a_runs_stream_is_capped_in_redis_and_numbering_survives_the_cap(
    org, member, agent, monkeypatch
):
    monkeypatch.setattr(events, "FRAME_STREAM_MAXLEN", 100)
    run = queued_run(member, org, agent)
    reset_frames(run.pk)
    frames = FramePublisher(run.pk)
    for index in range(1000):
        frames.send({"type": "text_delta", "delta": str(index)})
    frames.close()  # a segment's end: every frame it sent is stored (FramePublisher's contract)
    length = events._redis().xlen(events.stream_key(run.pk))
    assert length < 1000
    # A resumed segment (a new publisher) continues from the newest frame, not from the length.
    resumed = FramePublisher(run.pk)
    resumed.send(
        {
            "type": "run_finished",
            "status": "completed",
            "cost_usd": "0",
            "cost_is_partial": False,
            "error": "",
        }
    )
    resumed.close()
    assert frames_after(run.pk, after=1000) == [
        {
            "type": "run_finished",
            "status": "completed",
            "cost_usd": "0",
            "cost_is_partial": False,
            "error": "",
            "seq": 1001,
            "run_id": run.pk,
        }
    ]


def test_the_re_check_between_sends_agrees_with_the_selector_for_every_persona(
    org, other_org, owner, builder, member, viewer, outsider, app_admin, agent
):
    """The prepared statement asked between sends (consumers.still_followable) answers exactly
    what the selectors answer on connect, for every persona, key state and membership change."""
    from apps.orgs.models import ApiKey
    from apps.runs import consumers, selectors
    from apps.runs.models import Conversation

    own_run = queued_run(member, org, agent)
    colleagues_run = queued_run(builder, org, agent)
    conversation = Conversation.objects.get(pk=own_run.conversation_id)
    runs = [own_run, colleagues_run]

    def agree(user, organization, api_key_id=None):
        for run in runs:
            expected = selectors.run_followable(
                user_id=user.pk,
                organization_id=organization.pk,
                run_id=run.pk,
                api_key_id=api_key_id,
            )
            asked = consumers.still_followable(
                consumers.RUN_FOLLOWABLE_SQL,
                user_id=user.pk,
                organization_id=organization.pk,
                subject_id=run.pk,
                api_key_id=api_key_id,
            )
            assert asked == expected, (user.email, run.pk, api_key_id)
        expected = selectors.conversation_followable(
            user_id=user.pk,
            organization_id=organization.pk,
            conversation_id=conversation.pk,
            api_key_id=api_key_id,
        )
        asked = consumers.still_followable(
            consumers.CONVERSATION_FOLLOWABLE_SQL,
            user_id=user.pk,
            organization_id=organization.pk,
            subject_id=conversation.pk,
            api_key_id=api_key_id,
        )
        assert asked == expected, (user.email, "conversation", api_key_id)
        return expected

    for person in (owner, builder, member, viewer, app_admin):
        agree(person, org)
    agree(outsider, other_org)
    agree(outsider, org)  # a run of an organization the caller is not in
    key_for(member, org)
    key = ApiKey.objects.get(user=member)
    assert agree(member, org, key.pk)
    ApiKey.objects.filter(pk=key.pk).update(revoked_at="2025-01-01T00:00:00Z")
    assert not agree(member, org, key.pk)
    Membership.objects.filter(organization=org, user=builder).update(role="viewer")  # demoted
    agree(builder, org)
    Membership.objects.filter(organization=org, user=viewer).delete()  # left the organization
    agree(viewer, org)
    type(member).objects.filter(pk=member.pk).update(is_active=False)  # deactivated
    assert not agree(member, org)


def test_a_publisher_frame_is_stored_once_flushed_and_a_refused_frame_is_an_error(
    org, member, agent
):
    import redis

    run = queued_run(member, org, agent)
    reset_frames(run.pk)
    first = FramePublisher(run.pk)
    first.send({"type": "text_delta", "delta": "a"})
    first.flush()
    assert [frame["seq"] for frame in frames_after(run.pk)] == [1]
    # A second writer numbering from the same point is refused by Redis (ids only grow), and the
    # refusal reaches the writer rather than being lost with the unread reply.
    second = FramePublisher(run.pk)
    first.send({"type": "text_delta", "delta": "b"})
    second.send({"type": "text_delta", "delta": "c"})
    first.flush()
    with pytest.raises(redis.ResponseError):
        second.flush()
    second.close()
    first.close()
    assert [frame["delta"] for frame in frames_after(run.pk)] == ["a", "b"]


def test_frames_sent_together_are_numbered_in_order_and_every_reply_is_read(org, member, agent):
    run = queued_run(member, org, agent)
    reset_frames(run.pk)
    frames = FramePublisher(run.pk)

    frames.send({"type": "cost", "request": 1}, {"type": "context_usage", "input_tokens": 10})
    for n in range(REPLIES_READ_EVERY * 3):  # past the point where replies are read along the way
        frames.send({"type": "text_delta", "delta": str(n)})
    frames.close()

    stored = frames_after(run.pk)
    assert [frame["seq"] for frame in stored] == list(range(1, REPLIES_READ_EVERY * 3 + 3))
    assert [frame["type"] for frame in stored[:3]] == ["cost", "context_usage", "text_delta"]
    assert not frames._unacknowledged


def test_held_frames_keep_their_number_and_go_out_with_the_next_write_or_the_flush(
    org, member, agent
):
    run = queued_run(member, org, agent)
    reset_frames(run.pk)
    frames = FramePublisher(run.pk)

    frames.hold({"type": "tool_call", "tool_name": "think"})
    frames.flush()  # a flush writes what is held
    frames.hold({"type": "cost", "request": 1})
    assert [frame["seq"] for frame in frames_after(run.pk)] == [1]  # held: numbered, not written
    frames.send({"type": "text_delta", "delta": "a"})
    frames.hold({"type": "context_usage", "input_tokens": 3})
    frames.release()
    frames.flush()

    stored = frames_after(run.pk)
    assert [(frame["seq"], frame["type"]) for frame in stored] == [
        (1, "tool_call"),
        (2, "cost"),
        (3, "text_delta"),
        (4, "context_usage"),
    ]
    frames.close()
