"""channel_tools per platform: granted on the binding (never in a spec), bound on the server to
the channel the message arrived in, with the bot's own token; what a platform cannot answer is
not offered; outside a channel nothing attaches."""

from __future__ import annotations

import pytest

from apps.runs.models import Run
from apps.runs.runner import assemble
from apps.runs.services import run_create
from tests.memory.support import returns_of

from .conftest import (
    make_binding,
    mattermost_post,
    post_mattermost,
    post_slack,
    post_telegram,
    slack_event,
    telegram_update,
)

ALL = ["get_channel_info", "list_channel_members", "search_channels", "read_channel_history"]


def tool_names(assembly) -> set[str]:
    return {name for toolset in assembly.toolsets for name in getattr(toolset, "tools", {})}


def ask(post, capture):
    with capture(execute=True):
        response = post()
    assert response.status_code == 200, response.content
    return Run.objects.latest("created_at")


@pytest.mark.django_db
def test_slack_answers_all_four_about_the_channel_the_message_came_from(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    slack = fake("slack")
    slack.answers.update(
        {
            "conversations.info": {
                "ok": True,
                "channel": {
                    "name": "ops",
                    "topic": {"value": "Incidents"},
                    "purpose": {"value": "On call"},
                    "num_members": 5,
                },
            },
            "conversations.members": {"ok": True, "members": ["U1", "U2", "U3"]},
            "conversations.list": {
                "ok": True,
                "channels": [
                    {"name": "billing", "purpose": {"value": "Invoices and refunds"}},
                    {"name": "random", "purpose": {"value": "Anything"}},
                ],
            },
            "conversations.history": {
                "ok": True,
                "has_more": True,
                "messages": [
                    {"user": "U2", "ts": "2", "text": "newer"},
                    {"user": "U1", "ts": "1", "text": "older"},
                ],
            },
        }
    )
    binding = make_binding(
        org, builder, agent, "slack", channel_tools={"tools": ALL, "default_limit": 2}
    )
    text = (
        "<@U0BOT> /call get_channel_info {}\n/call list_channel_members {}\n"
        '/call search_channels {"query": "refunds"}\n/call read_channel_history {}'
    )
    run = ask(lambda: post_slack(binding, slack_event(text)), django_capture_on_commit_callbacks)
    info, members, found, history = returns_of(run)
    assert "Channel: ops on slack" in info and "Topic: Incidents" in info and "Members: 5" in info
    assert (
        "- U1" in members
        and "- U2" in members
        and "U3" not in members
        and "there are more" in members
    )
    assert "billing: Invoices and refunds" in found and "random" not in found
    assert history.index("older") < history.index("newer") and "older messages exist" in history
    # Bound on the server to the message's channel, with the bot's own token.
    for method in ("conversations.info", "conversations.members", "conversations.history"):
        call = slack.called(method)[0]
        assert call.body["channel"] == "C0815" and call.authorization == "Bearer slack-bot-token"


@pytest.mark.django_db
def test_a_platform_refusal_is_a_result_the_model_reads(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    slack = fake("slack")
    slack.answers["conversations.history"] = {"ok": False, "error": "not_in_channel"}
    binding = make_binding(
        org, builder, agent, "slack", channel_tools={"tools": ["read_channel_history"]}
    )
    run = ask(
        lambda: post_slack(binding, slack_event("<@U0BOT> /call read_channel_history {}")),
        django_capture_on_commit_callbacks,
    )
    assert run.status == "completed"
    assert (
        "could not be read: Slack refused conversations.history: not_in_channel"
        in returns_of(run)[0]
    )


@pytest.mark.django_db
def test_telegram_offers_info_and_its_administrators_only(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    telegram = fake("telegram")
    telegram.answers.update(
        {
            "getChat": {"ok": True, "result": {"title": "Ops", "description": "On call"}},
            "getChatMemberCount": {"ok": True, "result": 12},
            "getChatAdministrators": {
                "ok": True,
                "result": [{"user": {"id": 1, "username": "ada"}}],
            },
        }
    )
    binding = make_binding(
        org,
        builder,
        agent,
        "telegram",
        channel_tools={"tools": ["get_channel_info", "list_channel_members"]},
    )
    update = telegram_update(
        "/call get_channel_info {}\n/call list_channel_members {}", chat_id=-100, chat_type="group"
    )
    run = ask(lambda: post_telegram(binding, update), django_capture_on_commit_callbacks)
    info, members = returns_of(run)
    assert "Channel: Ops on telegram" in info and "Members: 12" in info
    assert "- ada" in members and "administrators only" in members
    assert telegram.called("getChat")[0].body == {"chat_id": -100}
    # Even a row granting more (written before the refusal, or by hand) never offers what
    # Telegram cannot answer.
    binding.channel_tools = {"tools": ALL, "default_limit": 20}
    binding.save(update_fields=["channel_tools"])
    assert tool_names(assemble(run)) >= {"get_channel_info", "list_channel_members"}
    assert not tool_names(assemble(run)) & {"search_channels", "read_channel_history"}


@pytest.mark.django_db
def test_mattermost_looks_up_the_posts_channel_and_searches_its_team(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    mattermost = fake("mattermost")
    mattermost.answers.update(
        {
            "GET /channels/chan1": {
                "display_name": "Ops",
                "header": "Incidents",
                "purpose": "On call",
            },
            "GET /channels/chan1/stats": {"member_count": 4},
            "POST /teams/team1/channels/search": [
                {"display_name": "Billing", "purpose": "Refunds"}
            ],
        }
    )
    binding = make_binding(
        org,
        builder,
        agent,
        "mattermost",
        server_url=mattermost.url,
        channel_tools={"tools": ["get_channel_info", "search_channels"]},
    )
    payload = mattermost_post(
        '/call get_channel_info {}\n/call search_channels {"query": "refunds"}'
    )
    run = ask(lambda: post_mattermost(binding, payload), django_capture_on_commit_callbacks)
    info, found = returns_of(run)
    assert "Channel: Ops on mattermost" in info and "Members: 4" in info
    assert "Billing: Refunds" in found
    assert mattermost.called("POST /teams/team1/channels/search")[0].body == {"term": "refunds"}


@pytest.mark.django_db
def test_nothing_attaches_outside_a_channel_or_without_a_grant(org, builder, agent, fake):
    fake("slack")
    api_run = run_create(actor=builder, organization=org, agent=agent, input="hi", enqueue=False)
    assert not tool_names(assemble(api_run)) & set(ALL)
    ungranted = make_binding(org, builder, agent, "slack")
    channel_run = run_create(
        actor=None,
        organization=org,
        agent=agent,
        input="hi",
        surface="slack",
        enqueue=False,
        exposure_id=ungranted.pk,
    )
    assert not tool_names(assemble(channel_run)) & set(ALL)


@pytest.mark.django_db
def test_no_tool_lets_the_model_name_a_channel_and_send_channel_file_is_not_offered(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    fake("slack")
    binding = make_binding(org, builder, agent, "slack", channel_tools={"tools": ALL})
    run = ask(
        lambda: post_slack(binding, slack_event("<@U0BOT> hi")), django_capture_on_commit_callbacks
    )
    toolsets = [t for t in assemble(run).toolsets if getattr(t, "id", None) == "channel_tools"]
    tools = toolsets[0].tools
    assert set(tools) == set(ALL)  # send_channel_file: declared, not offered (no workspace)
    for tool in tools.values():
        properties = tool.function_schema.json_schema.get("properties", {})
        assert not {"channel", "channel_id", "chat_id"} & set(properties)


@pytest.mark.django_db
def test_slack_members_and_authors_are_named_looked_up_once_each_per_call(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    slack = fake("slack")
    slack.people.update(
        {
            "U1": {"id": "U1", "name": "ada", "profile": {"display_name": "Ada"}},
            "U2": {"id": "U2", "name": "grace", "real_name": "Grace Hopper", "profile": {}},
        }
    )
    slack.answers.update(
        {
            "conversations.members": {"ok": True, "members": ["U1", "U2", "U9"]},
            "conversations.history": {
                "ok": True,
                "messages": [
                    {"user": "U1", "ts": "3", "text": "third"},
                    {"bot_id": "B7", "ts": "2", "text": "from a bot"},
                    {"user": "U1", "ts": "1", "text": "first"},
                ],
            },
        }
    )
    binding = make_binding(
        org,
        builder,
        agent,
        "slack",
        channel_tools={"tools": ["list_channel_members", "read_channel_history"]},
    )
    text = "<@U0BOT> /call list_channel_members {}\n/call read_channel_history {}"
    run = ask(lambda: post_slack(binding, slack_event(text)), django_capture_on_commit_callbacks)
    members, history = returns_of(run)
    assert "- Ada (U1)" in members and "- Grace Hopper (U2)" in members
    # Nobody Slack knows keeps the id.
    assert "- U9" in members
    assert "[1] Ada (U1): first" in history and "[2] B7: from a bot" in history
    # One users.info per distinct person per call: three for the members, one for the history
    # (the two tool calls run side by side, so their lookups interleave).
    looked_up = sorted(call.body["user"] for call in slack.called("users.info"))
    assert looked_up == ["U1", "U1", "U2", "U9"]
    # Slack's read methods are sent form fields (they take no JSON), with the bot's token.
    members_call = slack.called("conversations.members")[0]
    assert members_call.body == {"channel": "C0815", "limit": "21"}
    assert all(call.authorization == "Bearer slack-bot-token" for call in slack.calls)


@pytest.mark.django_db
def test_without_the_users_read_scope_slack_members_stay_ids_after_one_refusal(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    slack = fake("slack")
    slack.answers.update(
        {
            "conversations.members": {"ok": True, "members": ["U1", "U2", "U3"]},
            "users.info": {"ok": False, "error": "missing_scope"},
        }
    )
    binding = make_binding(
        org, builder, agent, "slack", channel_tools={"tools": ["list_channel_members"]}
    )
    run = ask(
        lambda: post_slack(binding, slack_event("<@U0BOT> /call list_channel_members {}")),
        django_capture_on_commit_callbacks,
    )
    (members,) = returns_of(run)
    assert run.status == "completed"
    assert "- U1" in members and "- U2" in members and "- U3" in members
    assert len(slack.called("users.info")) == 1


@pytest.mark.django_db
def test_mattermost_members_and_authors_are_named_in_one_lookup_per_call(
    org, builder, agent, fake, eager_celery, django_capture_on_commit_callbacks
):
    mattermost = fake("mattermost")
    mattermost.people.update(
        {
            "u1": {"id": "u1", "username": "ada", "first_name": "Ada", "last_name": "Lovelace"},
            "u2": {"id": "u2", "username": "grace", "nickname": "Amazing Grace"},
            "u3": {"id": "u3", "username": "linus"},
        }
    )
    mattermost.answers.update(
        {
            "GET /channels/chan1/members": [
                {"user_id": "u1"},
                {"user_id": "u2"},
                {"user_id": "u3"},
                {"user_id": "u9"},
            ],
            "GET /channels/chan1/posts": {
                "order": ["p2", "p1"],
                "posts": {
                    "p2": {"user_id": "u2", "create_at": 2, "message": "later"},
                    "p1": {"user_id": "u1", "create_at": 1, "message": "earlier"},
                },
            },
        }
    )
    binding = make_binding(
        org,
        builder,
        agent,
        "mattermost",
        server_url=mattermost.url,
        channel_tools={"tools": ["list_channel_members", "read_channel_history"]},
    )
    payload = mattermost_post("/call list_channel_members {}\n/call read_channel_history {}")
    run = ask(lambda: post_mattermost(binding, payload), django_capture_on_commit_callbacks)
    members, history = returns_of(run)
    assert "- Ada Lovelace (@ada)" in members and "- Amazing Grace (@grace)" in members
    assert "- @linus" in members and "- u9" in members
    assert "[1] Ada Lovelace (@ada): earlier" in history
    assert "[2] Amazing Grace (@grace): later" in history
    lookups = sorted(call.body for call in mattermost.called("POST /users/ids"))
    assert lookups == [["u1", "u2", "u3", "u9"], ["u2", "u1"]]
