"""The Mattermost event stream end to end: the listener holds the bot's websocket on a fake
Mattermost on 127.0.0.1, and what arrives on it — a DM, which no outgoing webhook delivers —
goes through the webhooks' own admission path into a run, replied in the DM by editing.

The listener runs on an event loop of its own in a thread, as it does in ``channels-listen``;
its database work commits for real (hence ``transaction=True``), and Celery is eager, so the
message's task runs in the listener's thread once the admission commits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
import time

import pytest

from apps.channels.models import AccountLink, Binding, ChannelMessage, LinkRequest
from apps.channels.platforms import parse_mattermost_event
from apps.channels.services import binding_create, binding_disable, binding_enable
from apps.channels.stream import Listener
from apps.memory.models import MemoryNote
from apps.runs.models import Run
from tests.runs.conftest import celery_worker, wait_for  # noqa: F401  (fixture)

from .conftest import make_binding, mattermost_post, post_mattermost

pytestmark = pytest.mark.django_db(transaction=True)

LINK = re.compile(r"(http\S+/channels/link/[\w-]+/)")
ACCOUNT = "127.0.0.1:u42"  # Mattermost accounts are per server: host:user_id


def eventually(check, timeout=30.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout} s")


@pytest.fixture
def mattermost(fake):
    return fake("mattermost")


@pytest.fixture
def binding(org, builder, memory_agent, mattermost):
    return make_binding(org, builder, memory_agent, "mattermost", server_url=mattermost.url)


@contextlib.contextmanager
def running_listener(settings):
    """``channels-listen``'s Listener on its own loop in a thread, looking at the bindings every
    0.1 s and reconnecting within a fraction of a second; stopped (its sockets closed) after."""
    settings.CHANNEL_STREAM_REFRESH_SECONDS = 0.1
    settings.CHANNEL_STREAM_RECONNECT_SECONDS = (0.05, 0.2)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    failure: list[BaseException] = []

    def run():
        try:
            loop.run_until_complete(Listener().run(stop))
        except BaseException as exc:  # surfaced by the assertion below
            failure.append(exc)

    thread = threading.Thread(target=run, name="test-channels-listen", daemon=True)
    thread.start()
    yield
    loop.call_soon_threadsafe(stop.set)
    thread.join(30)
    loop.close()
    assert not thread.is_alive() and not failure, failure


@pytest.fixture
def listener(settings, mattermost, eager_celery):
    with running_listener(settings):
        yield


def patches(mattermost):
    return [call for call in mattermost.calls if call.method == "PUT"]


def test_a_dm_from_a_linked_sender_runs_as_them_in_their_own_store_and_is_answered_in_the_dm(
    org, member, binding, mattermost, listener
):
    AccountLink.objects.create(
        organization=org, platform="mattermost", account_key=ACCOUNT, user=member
    )
    socket = mattermost.socket_number(1)
    # Proven with the binding's bot token, on the address the binding names.
    assert socket.token == "mattermost-bot-token"
    assert mattermost.called("GET /users/me")[0].authorization == "Bearer mattermost-bot-token"

    write = '/call write_memory {"name": "prefs.md", "content": "Likes tea."}'
    socket.send(mattermost.posted(write, post_id="dm1"))
    eventually(lambda: Run.objects.filter(status="completed").exists(), what="a completed run")
    eventually(lambda: bool(ChannelMessage.objects.get().reply_ids), what="the reply booked")

    run = Run.objects.get()
    assert (run.user, run.surface, run.exposure_id) == (member, "mattermost", binding.pk)
    # A DM is one-to-one: the conversation is the sender's and carries no room.
    assert run.conversation.user == member and run.conversation.group_chat_key == ""
    note = MemoryNote.objects.get()
    assert note.owner_user == member and note.chat_key == ""
    message = ChannelMessage.objects.get()
    assert (message.delivery_id, message.sender_id, message.outcome) == ("dm1", ACCOUNT, "run")

    # The placeholder in the DM itself (no thread: a DM is a conversation), then edited.
    placeholder = mattermost.called("POST /posts")[0]
    assert placeholder.body == {"channel_id": "dm-u42", "message": "…"}
    assert patches(mattermost)[-1].path == f"/api/v4/posts/{message.reply_ids[0]}/patch"
    assert patches(mattermost)[-1].body == {"message": run.output}


def test_on_a_real_worker_a_dm_is_handled_by_the_worker_and_answered_in_the_dm(
    org,
    member,
    binding,
    mattermost,
    settings,
    celery_worker,  # noqa: F811
):
    # The production path: the listener only admits; the worker takes the task from Redis.
    AccountLink.objects.create(
        organization=org, platform="mattermost", account_key=ACCOUNT, user=member
    )
    with running_listener(settings):
        mattermost.socket_number(1).send(mattermost.posted("hello", post_id="dm-w"))
        eventually(lambda: Run.objects.exists(), what="a run")
        run = wait_for(Run.objects.get().pk)
        eventually(lambda: bool(ChannelMessage.objects.get().reply_ids), what="the reply booked")
    assert run.status == "completed" and run.user == member
    assert patches(mattermost)[-1].body == {"message": run.output}
    assert mattermost.called("POST /posts")[0].body["channel_id"] == "dm-u42"


def test_the_bots_own_posts_and_channel_chatter_that_does_not_mention_it_run_nothing(
    binding, mattermost, listener
):
    socket = mattermost.socket_number(1)
    socket.send(mattermost.posted("my own reply", post_id="own", user_id="botuser"))
    socket.send(
        mattermost.posted(
            "lunch?", post_id="chatter", channel_id="chan1", channel_type="O", mentions=[]
        )
    )
    socket.send(mattermost.posted("ada joined", post_id="join", type="system_join_channel"))
    # A DM after them, on the same socket, is handled after them: once it ran, they were seen.
    socket.send(mattermost.posted("hello", post_id="after"))
    eventually(lambda: Run.objects.exists(), what="the DM's run")
    assert list(ChannelMessage.objects.values_list("delivery_id", flat=True)) == ["after"]


def test_link_in_a_dm_from_an_unlinked_sender_answers_with_the_private_link_in_that_dm(
    org, member, binding, mattermost, listener, client
):
    mattermost.socket_number(1).send(mattermost.posted("link", post_id="dmlink"))
    eventually(lambda: LinkRequest.objects.exists(), what="a link request")
    eventually(lambda: mattermost.called("POST /posts"), what="the link posted")
    assert not Run.objects.exists()  # asking to link is not a run
    sent = mattermost.called("POST /posts")[-1]
    assert sent.body["channel_id"] == "dm-u42" and "root_id" not in sent.body
    # Already in the DM: no other direct channel is opened for it.
    assert mattermost.called("POST /channels/direct") == []
    url = LINK.search(sent.body["message"]).group(1)

    client.force_login(member)
    path = "/" + url.split("/", 3)[3]
    assert client.post(path).status_code == 200
    link = AccountLink.objects.get()
    assert (link.user, link.account_key, link.display_name) == (member, ACCOUNT, "ada")


def test_a_sender_over_the_limit_in_a_dm_is_told_there_when_to_try_again(
    org, builder, memory_agent, mattermost, listener
):
    make_binding(
        org,
        builder,
        memory_agent,
        "mattermost",
        server_url=mattermost.url,
        sender_limit_per_minute=1,
    )
    socket = mattermost.socket_number(1)
    socket.send(mattermost.posted("one", post_id="l1"))
    socket.send(mattermost.posted("two", post_id="l2"))
    eventually(
        lambda: ChannelMessage.objects.filter(delivery_id="l2", outcome="limited").exists(),
        what="the second DM limited",
    )
    assert Run.objects.count() == 1
    told = [c.body for c in mattermost.called("POST /posts") if "Try again" in c.body["message"]]
    assert told and told[0]["channel_id"] == "dm-u42" and "1 a minute" in told[0]["message"]


def test_a_channel_post_seen_by_both_the_webhook_and_the_stream_runs_once(
    binding, mattermost, listener
):
    socket = mattermost.socket_number(1)
    # The webhook first: the stream's copy of the same post is a duplicate.
    assert post_mattermost(binding, mattermost_post("what changed?", post_id="p1")).json()["ok"]
    eventually(lambda: Run.objects.filter(status="completed").count() == 1, what="p1's run")
    socket.send(
        mattermost.posted(
            "@helper what changed?",
            post_id="p1",
            channel_id="chan1",
            channel_type="O",
            team_id="team1",
            mentions=["botuser"],
        )
    )
    # The stream first: the webhook's copy is answered as a duplicate.
    socket.send(
        mattermost.posted(
            "@helper and now?",
            post_id="p2",
            channel_id="chan1",
            channel_type="O",
            team_id="team1",
            mentions=["botuser"],
        )
    )
    eventually(lambda: ChannelMessage.objects.filter(delivery_id="p2").exists(), what="p2")
    again = post_mattermost(binding, mattermost_post("and now?", post_id="p2"))
    assert again.json()["duplicate"] is True
    eventually(lambda: Run.objects.filter(status="completed").count() == 2, what="p2's run")
    # Nothing can run a third time: each of the four deliveries has been answered (the stream's
    # are admitted one after another on its socket, p1's copy before p2's, and Celery is eager).

    assert sorted(ChannelMessage.objects.values_list("delivery_id", flat=True)) == ["p1", "p2"]
    assert Run.objects.count() == 2
    # Both paths make the same chat of a channel post: its thread, and the room as its store.
    p2 = ChannelMessage.objects.select_related("thread__conversation").get(delivery_id="p2")
    assert p2.thread.chat_key == "mattermost:team1:chan1:p2"
    assert p2.thread.conversation.group_chat_key == "mattermost:team1:chan1"
    assert Run.objects.get(pk=p2.run_id).input == "and now?"


def test_a_disabled_bindings_socket_is_closed_and_one_added_or_enabled_later_is_opened(
    org, builder, memory_agent, binding, mattermost, listener
):
    first = mattermost.socket_number(1)
    binding_disable(actor=builder, binding=binding)
    assert first.closed.wait(10) and first.closed_cleanly
    time.sleep(0.5)
    assert len(mattermost.sockets) == 1  # and not reopened while disabled

    binding_enable(actor=builder, binding=binding)
    reopened = mattermost.socket_number(2)
    # Another binding made while the listener runs gets its own socket, no restart needed.
    other = binding_create(
        actor=builder,
        organization=org,
        agent=memory_agent,
        platform="mattermost",
        name="second bot",
        bot_token_secret_id=binding.bot_token_id,
        verification_secret_id=binding.verification_secret_id,
        server_url=mattermost.url,
    )
    mattermost.socket_number(3)
    assert not reopened.closed.is_set()
    reopened.send(mattermost.posted("hello again", post_id="back"))
    eventually(lambda: Run.objects.filter(exposure_id=binding.pk).exists(), what="a run")
    assert not Run.objects.filter(exposure_id=other.pk).exists()


def test_a_dropped_socket_reconnects_and_the_next_dm_runs(
    org, member, binding, mattermost, listener
):
    AccountLink.objects.create(
        organization=org, platform="mattermost", account_key=ACCOUNT, user=member
    )
    mattermost.socket_number(1).drop()
    second = mattermost.socket_number(2)
    assert second.token == "mattermost-bot-token"
    second.send(mattermost.posted("still there?", post_id="after-drop"))
    eventually(lambda: Run.objects.filter(status="completed").exists(), what="the run")
    assert Run.objects.get().user == member


def test_a_refused_token_is_retried_with_backoff_and_never_admits_anything(
    binding, mattermost, listener
):
    first = mattermost.socket_number(1)
    mattermost.bot_token = "another-token"  # the server no longer takes the bot's token
    first.drop()
    eventually(lambda: len(mattermost.sockets) >= 3, what="further attempts")
    assert all(s.closed.wait(5) for s in mattermost.sockets[1:3])
    assert not any(s.authenticated.is_set() for s in mattermost.sockets[1:])
    assert not ChannelMessage.objects.exists()


def test_a_redirect_of_the_websocket_is_not_followed(binding, mattermost, listener):
    # Even to the same server: the address dialled is only ever the one that was checked.
    mattermost.websocket_redirect = "/api/v4/websocket-elsewhere"
    eventually(lambda: len(mattermost.called("GET /websocket")) >= 2, what="two attempts")
    assert mattermost.sockets == []
    assert not [c for c in mattermost.calls if "elsewhere" in c.path]


def test_a_server_address_this_deployment_will_not_dial_is_never_connected_to(
    binding, mattermost, listener, caplog
):
    caplog.set_level(logging.WARNING, logger="apps.channels.stream")
    first = mattermost.socket_number(1)
    # The server moved to a private address the operator did not list in OUTBOUND_ALLOW: the old
    # socket closes, and the new address is refused before anything is dialled.
    unlisted = mattermost.url.replace("127.0.0.1", "10.0.0.1")
    Binding.objects.filter(pk=binding.pk).update(server_url=unlisted)
    assert first.closed.wait(10)
    dialled = len(mattermost.calls)

    def refusals():
        return [
            record
            for record in caplog.records
            if f"binding {binding.pk}: PlatformError: The Mattermost server URL is refused"
            in record.getMessage()
        ]

    # The listener retries (a backoff apart): two refusals are the event that proves it kept
    # looking at the new address and never dialled it, however slow the machine is.
    eventually(lambda: len(refusals()) >= 2, what="two refusals of the unlisted address")
    assert len(mattermost.sockets) == 1 and len(mattermost.calls) == dialled
    Binding.objects.filter(pk=binding.pk).update(server_url=mattermost.url)
    # A socket to the restored address opens and authenticates. Not necessarily socket number 2:
    # a retry that read the binding just after the restore may connect and then be replaced by
    # the refresh that notices the change.
    eventually(
        lambda: any(socket.authenticated.is_set() for socket in mattermost.sockets[1:]),
        what="a socket to the restored address",
    )


# --- what the stream's events become (no socket) ---------------------------------------------


def _event(mattermost_fake, message, **kw):
    return parse_mattermost_event(
        mattermost_fake.posted(message, **kw),
        server_host="mm.example.com",
        bot_user_id="botuser",
        bot_username="helper",
    )


def test_a_reply_in_a_thread_belongs_to_the_threads_root_and_a_dm_thread_to_its_own_chat(
    mattermost,
):
    reply = _event(
        mattermost,
        "@helper more",
        post_id="r2",
        root_id="r1",
        channel_id="chan1",
        channel_type="P",
        team_id="team1",
        mentions=["botuser"],
    )
    assert (reply.chat_key, reply.target["root_id"], reply.text) == (
        "mattermost:team1:chan1:r1",
        "r1",
        "more",
    )
    assert reply.room_key == "mattermost:team1:chan1" and not reply.is_direct
    in_dm = _event(mattermost, "and?", post_id="d2", root_id="d1")
    assert (in_dm.chat_key, in_dm.target["root_id"], in_dm.is_direct) == (
        "mattermost:dm:dm-u42:d1",
        "d1",
        True,
    )
    assert in_dm.account_key == "mm.example.com:u42" and in_dm.sender_name == "ada"
    # A group message (G) is a room: answered only when it mentions the bot.
    assert _event(mattermost, "hi all", post_id="g1", channel_type="G", mentions=[]) is None
    assert _event(mattermost, "hi", post_id="w1", props={"from_webhook": "true"}) is None
    assert _event(mattermost, "hi", post_id="b1", props={"from_bot": "true"}) is None
    assert (
        parse_mattermost_event(
            {"event": "post_edited", "data": {}},
            server_host="h",
            bot_user_id="botuser",
        )
        is None
    )


@pytest.mark.django_db(transaction=False)
def test_reconnecting_waits_longer_after_each_failure_up_to_the_longest(settings):
    from apps.channels.stream import reconnect_delay

    settings.CHANNEL_STREAM_RECONNECT_SECONDS = (1.0, 60.0)
    assert 0.5 <= reconnect_delay(1) <= 1.0
    assert 2.0 <= reconnect_delay(3) <= 4.0
    assert 30.0 <= reconnect_delay(12) <= 60.0
