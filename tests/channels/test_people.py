"""People: linking a chat account (and its refusal while impersonating), who a run runs as, the
memory a DM and a group chat reach, what an unlinked sender gets, and per-sender limits."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from apps.audit.models import AuditEntry
from apps.channels.models import AccountLink, ChannelMessage, LinkRequest
from apps.memory.models import MemoryNote
from apps.runs.models import Run
from tests.memory.support import returns_of

from .conftest import make_binding, post_slack, slack_event

LINK = re.compile(r"(http\S+/channels/link/[\w-]+/)")


def dm(text, *, event_id, user="U42", ts="1700000100.000001"):
    return slack_event(
        text, event_id=event_id, kind="message", channel="D042", channel_type="im", user=user, ts=ts
    )


def send(binding, payload, capture):
    with capture(execute=True):
        response = post_slack(binding, payload)
    assert response.status_code == 200, response.content
    return response


@pytest.fixture
def slack(fake):
    return fake("slack")


@pytest.fixture
def binding(org, builder, memory_agent, slack):
    return make_binding(org, builder, memory_agent, "slack")


def path_of(url: str) -> str:
    return "/" + url.split("/", 3)[3] if url.startswith("http") else url


@pytest.mark.django_db
def test_link_in_a_dm_sends_a_private_link_that_links_the_signed_in_person(
    org, member, binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    send(binding, dm("link", event_id="EvLink"), django_capture_on_commit_callbacks)
    assert not Run.objects.exists()  # asking to link is not a run
    assert ChannelMessage.objects.get().outcome == "link"
    url = LINK.search(slack.texts()[-1]).group(1)
    assert slack.called("chat.postMessage")[-1].body["channel"] == "D042"  # the DM itself

    browser = Client()
    browser.force_login(member)
    page = browser.get(path_of(url))
    assert page.status_code == 200 and b"U42" in page.content
    assert browser.post(path_of(url)).status_code == 200
    link = AccountLink.objects.get()
    assert (link.user, link.platform, link.account_key) == (member, "slack", "T042:U42")
    assert AuditEntry.objects.filter(action="channel.account.link", actor=member).exists()
    # The link works once.
    assert browser.post(path_of(url)).status_code == 404


@pytest.mark.django_db
def test_link_is_refused_in_a_channel_where_others_could_open_it(
    binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    send(
        binding,
        slack_event("<@U0BOT> link", event_id="EvChanLink"),
        django_capture_on_commit_callbacks,
    )
    assert not LinkRequest.objects.exists()
    assert "direct message" in slack.texts()[-1]


@pytest.mark.django_db
def test_linking_is_refused_with_403_while_impersonating(
    org, member, binding, slack, admin_client, eager_celery, django_capture_on_commit_callbacks
):
    send(binding, dm("link", event_id="EvLink"), django_capture_on_commit_callbacks)
    url = LINK.search(slack.texts()[-1]).group(1)
    assert admin_client.post("/audit/impersonate/", {"email": member.email}).status_code == 302
    assert admin_client.get(path_of(url)).status_code == 403
    assert admin_client.post(path_of(url)).status_code == 403
    assert not AccountLink.objects.exists()
    assert LinkRequest.objects.get().used_at is None


@pytest.mark.django_db
def test_a_linked_sender_runs_as_themselves_and_their_dm_reaches_their_own_memory(
    org, member, binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    AccountLink.objects.create(
        organization=org, platform="slack", account_key="T042:U42", user=member
    )
    write = '/call write_memory {"name": "prefs.md", "content": "Likes tea."}'
    send(binding, dm(write, event_id="EvDM"), django_capture_on_commit_callbacks)
    run = Run.objects.get()
    assert run.user == member and run.conversation.group_chat_key == ""
    note = MemoryNote.objects.get()
    assert note.owner_user == member and note.chat_key == ""


@pytest.mark.django_db
def test_a_group_chat_is_its_own_memory_store_and_conversation_search_is_refused(
    org, member, binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    AccountLink.objects.create(
        organization=org, platform="slack", account_key="T042:U42", user=member
    )
    MemoryNote.objects.create(
        organization=org, agent=binding.agent, owner_user=member, name="prefs.md", body="Private."
    )
    write = '<@U0BOT> /call write_memory {"name": "team.md", "content": "Standup at 9."}'
    send(binding, slack_event(write, event_id="EvRoom1"), django_capture_on_commit_callbacks)
    note = MemoryNote.objects.get(name="team.md")
    assert note.owner_user_id is None and note.chat_key == "slack:T042:C0815"

    read = '<@U0BOT> /call read_memory {"name": "prefs.md"}'
    send(
        binding,
        slack_event(read, event_id="EvRoom2", ts="1700000000.000900"),
        django_capture_on_commit_callbacks,
    )
    assert "There is no note named 'prefs.md'" in returns_of(Run.objects.latest("created_at"))[0]

    search = '<@U0BOT> /call search_conversations {"query": "tea"}'
    send(
        binding,
        slack_event(search, event_id="EvRoom3", ts="1700000000.000950"),
        django_capture_on_commit_callbacks,
    )
    assert "group chat" in returns_of(Run.objects.latest("created_at"))[0]


@pytest.mark.django_db
def test_an_unlinked_sender_runs_as_no_one_without_a_personal_store(
    binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    write = '/call write_memory {"name": "prefs.md", "content": "Likes tea."}'
    send(binding, dm(write, event_id="EvAnon"), django_capture_on_commit_callbacks)
    run = Run.objects.get()
    assert run.user is None and run.status == "completed"
    assert "not linked" in returns_of(run)[0]
    assert not MemoryNote.objects.exists()


@pytest.mark.django_db
def test_a_binding_that_requires_a_link_asks_for_one_and_runs_nothing(
    org, builder, memory_agent, slack, eager_celery, django_capture_on_commit_callbacks
):
    binding = make_binding(org, builder, memory_agent, "slack", unlinked_senders="require_link")
    send(binding, dm("hello", event_id="EvStrict"), django_capture_on_commit_callbacks)
    assert not Run.objects.exists()
    assert ChannelMessage.objects.get().outcome == "refused"
    assert "Send me `link`" in slack.texts()[-1]


@pytest.mark.django_db
def test_a_linked_person_who_may_not_run_the_agent_is_told(
    org, viewer, binding, slack, eager_celery, django_capture_on_commit_callbacks
):
    AccountLink.objects.create(
        organization=org, platform="slack", account_key="T042:U42", user=viewer
    )
    send(binding, dm("hello", event_id="EvViewer"), django_capture_on_commit_callbacks)
    assert not Run.objects.exists()
    assert "may not run" in slack.texts()[-1]


@pytest.mark.django_db
def test_a_sender_over_the_limit_is_told_when_to_try_again_and_others_are_not_limited(
    org, builder, memory_agent, slack, eager_celery, django_capture_on_commit_callbacks
):
    binding = make_binding(org, builder, memory_agent, "slack", sender_limit_per_minute=2)
    for n in range(3):
        send(
            binding,
            dm("hi", event_id=f"EvBurst{n}", ts=f"1700000200.00000{n}"),
            django_capture_on_commit_callbacks,
        )
    assert Run.objects.count() == 2
    limited = ChannelMessage.objects.get(delivery_id="EvBurst2")
    assert limited.outcome == "limited"
    said = slack.texts()[-1]
    assert re.search(r"Try again in \d+ s\.", said) and "2 a minute" in said
    # Another sender has a bucket of their own.
    send(binding, dm("hi", event_id="EvOther", user="U77"), django_capture_on_commit_callbacks)
    assert Run.objects.count() == 3


@pytest.mark.django_db
def test_the_deployment_default_limit_applies_without_a_binding_limit(
    binding, slack, settings, eager_celery, django_capture_on_commit_callbacks
):
    settings.CHANNEL_SENDER_MESSAGES_PER_MINUTE = 1
    send(binding, dm("one", event_id="EvA"), django_capture_on_commit_callbacks)
    send(
        binding,
        dm("two", event_id="EvB", ts="1700000300.000001"),
        django_capture_on_commit_callbacks,
    )
    assert Run.objects.count() == 1
    assert ChannelMessage.objects.get(delivery_id="EvB").outcome == "limited"
