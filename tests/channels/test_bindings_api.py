"""The bindings API: who may bind, what a 422 names, tenancy, disabling, the webhook URL."""

from __future__ import annotations

import pytest

from apps.audit.models import AuditEntry
from apps.channels.models import Binding
from tests.runs.factories import published_agent

from .conftest import channel_secret, make_binding


@pytest.fixture
def secrets(org):
    return (
        channel_secret(org, "Slack bot token", "xoxb-1").pk,
        channel_secret(org, "Slack signing secret", "shh").pk,
    )


def body(agent, secrets, **extra):
    return {
        "agent_id": agent.pk,
        "platform": "slack",
        "name": "Acme Slack",
        "bot_token_secret_id": secrets[0],
        "verification_secret_id": secrets[1],
        **extra,
    }


@pytest.mark.django_db
def test_a_builder_binds_a_published_agent_and_gets_its_webhook_url(
    org, builder, agent, secrets, client_for, settings
):
    settings.AGENTICOS_PUBLIC_URL = "https://agents.acme.test"
    response = client_for(builder, org).post(
        "/api/v1/channels/bindings/",
        body(
            agent,
            secrets,
            prompt="Answer in one paragraph.",
            channel_tools={"tools": ["get_channel_info"], "default_limit": 5},
        ),
        format="json",
    )
    assert response.status_code == 201, response.content
    answer = response.json()
    assert (
        answer["webhook_url"] == f"https://agents.acme.test/channels/slack/{answer['id']}/events/"
    )
    assert answer["channel_tools"] == {"tools": ["get_channel_info"], "default_limit": 5}
    assert answer["enabled"] is True and answer["unlinked_senders"] == "run"
    binding = Binding.objects.get(pk=answer["id"])
    assert binding.created_by == builder and binding.prompt == "Answer in one paragraph."
    assert AuditEntry.objects.filter(
        action="channel.binding.create", subject_id=str(binding.pk)
    ).exists()

    listed = client_for(builder, org).get(f"/api/v1/channels/bindings/?agent_id={agent.pk}").json()
    assert [row["id"] for row in listed["results"]] == [binding.pk]
    detail = client_for(builder, org).get(f"/api/v1/channels/bindings/{binding.pk}/").json()
    assert detail["webhook_url"].endswith(f"/channels/slack/{binding.pk}/events/")


@pytest.mark.django_db
def test_binding_needs_agents_publish(org, member, agent, secrets, client_for):
    response = client_for(member, org).post(
        "/api/v1/channels/bindings/", body(agent, secrets), format="json"
    )
    assert response.status_code == 403
    assert not Binding.objects.exists()


@pytest.mark.django_db
def test_another_organizations_binding_and_agent_are_404(
    org, other_org, builder, outsider, agent, secrets, client_for
):
    binding = make_binding(org, builder, agent, "telegram")
    outside = client_for(outsider, other_org)
    assert outside.get(f"/api/v1/channels/bindings/{binding.pk}/").status_code == 404
    assert outside.post(f"/api/v1/channels/bindings/{binding.pk}/disable/").status_code == 404
    assert outside.get("/api/v1/channels/bindings/").json()["count"] == 0
    # Binding another organization's agent, with another organization's secrets.
    response = outside.post("/api/v1/channels/bindings/", body(agent, secrets), format="json")
    assert response.status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"platform": "teams"}, "platform"),
        ({"name": ""}, "name"),
        ({"name": 3}, "name"),
        ({"bot_token_secret_id": 999999}, "bot_token_secret_id"),
        ({"verification_secret_id": "x"}, "verification_secret_id"),
        ({"sandbox_scope": "galaxy"}, "sandbox_scope"),
        ({"channel_tools": {"tools": ["send_channel_file"]}}, "channel_tools"),
        ({"channel_tools": {"default_limit": 500}}, "channel_tools"),
        ({"unlinked_senders": "maybe"}, "unlinked_senders"),
        ({"sender_limit_per_minute": 0}, "sender_limit_per_minute"),
        ({"server_url": "https://mm.acme.test"}, "server_url"),  # only Mattermost has one
    ],
)
def test_bad_input_is_a_422_naming_the_field(
    org, builder, agent, secrets, client_for, change, field
):
    response = client_for(builder, org).post(
        "/api/v1/channels/bindings/", {**body(agent, secrets), **change}, format="json"
    )
    assert response.status_code == 422, response.content
    assert field in response.content.decode()


@pytest.mark.django_db
def test_a_secret_stored_for_something_else_is_refused(org, builder, agent, secrets, client_for):
    from apps.vault.services import secret_create

    openai = secret_create(
        actor=None, organization=org, name="OpenAI", purpose="openai", value="sk"
    )
    response = client_for(builder, org).post(
        "/api/v1/channels/bindings/",
        body(agent, secrets, bot_token_secret_id=openai.pk),
        format="json",
    )
    assert response.status_code == 422
    assert "not a chat platform" in response.json()["bot_token_secret_id"][0]


@pytest.mark.django_db
def test_telegram_cannot_be_granted_what_it_cannot_answer(org, builder, agent, client_for):
    secrets = (channel_secret(org, "tg", "1:abc").pk, channel_secret(org, "tg secret", "s").pk)
    response = client_for(builder, org).post(
        "/api/v1/channels/bindings/",
        body(
            agent,
            secrets,
            platform="telegram",
            channel_tools={"tools": ["get_channel_info", "read_channel_history"]},
        ),
        format="json",
    )
    assert response.status_code == 422
    assert "read_channel_history" in response.json()["channel_tools"][0]


@pytest.mark.django_db
def test_mattermost_needs_its_server_and_refuses_a_private_one_unless_listed(
    org, builder, agent, client_for, settings
):
    secrets = (channel_secret(org, "mm", "tok").pk, channel_secret(org, "mm hook", "hook").pk)
    settings.OUTBOUND_ALLOW = []
    client = client_for(builder, org)
    missing = client.post(
        "/api/v1/channels/bindings/", body(agent, secrets, platform="mattermost"), format="json"
    )
    assert missing.status_code == 422 and "server_url" in missing.json()
    private = client.post(
        "/api/v1/channels/bindings/",
        body(agent, secrets, platform="mattermost", server_url="http://127.0.0.1:8065"),
        format="json",
    )
    assert private.status_code == 422 and "server_url" in private.json()
    settings.OUTBOUND_ALLOW = ["127.0.0.1"]
    listed = client.post(
        "/api/v1/channels/bindings/",
        body(agent, secrets, platform="mattermost", server_url="http://127.0.0.1:8065"),
        format="json",
    )
    assert listed.status_code == 201, listed.content
    assert listed.json()["webhook_url"].endswith(
        f"/channels/mattermost/{listed.json()['id']}/webhook/"
    )


@pytest.mark.django_db
def test_an_unpublished_agent_cannot_be_bound(org, builder, secrets, client_for):
    from apps.agents.models import Agent

    draft = Agent.objects.create(organization=org, name="Draft", draft_spec={}, created_by=builder)
    response = client_for(builder, org).post(
        "/api/v1/channels/bindings/", body(draft, secrets), format="json"
    )
    assert response.status_code == 422 and "agent_id" in response.json()


@pytest.mark.django_db
def test_disable_and_enable_are_audited(org, builder, member, agent, client_for):
    binding = make_binding(org, builder, agent, "slack")
    assert (
        client_for(member, org).post(f"/api/v1/channels/bindings/{binding.pk}/disable/").status_code
        == 403
    )
    response = client_for(builder, org).post(f"/api/v1/channels/bindings/{binding.pk}/disable/")
    assert response.status_code == 200 and response.json()["enabled"] is False
    assert (
        client_for(builder, org)
        .post(f"/api/v1/channels/bindings/{binding.pk}/enable/")
        .json()["enabled"]
    )
    actions = set(
        AuditEntry.objects.filter(subject_id=str(binding.pk)).values_list("action", flat=True)
    )
    assert {"channel.binding.disable", "channel.binding.enable"} <= actions


@pytest.mark.django_db
def test_testing_credentials_asks_the_platform_who_the_bot_is(
    org, builder, agent, client_for, fake
):
    slack = fake("slack")
    binding = make_binding(org, builder, agent, "slack")
    answer = client_for(builder, org).post(f"/api/v1/channels/bindings/{binding.pk}/test/").json()
    assert answer == {"ok": True, "detail": "Connected to Slack workspace Acme as helperbot."}
    assert slack.called("auth.test")[0].authorization == "Bearer slack-bot-token"
    slack.answers["auth.test"] = {"ok": False, "error": "invalid_auth"}
    answer = client_for(builder, org).post(f"/api/v1/channels/bindings/{binding.pk}/test/").json()
    assert answer == {"ok": False, "detail": "Slack refused auth.test: invalid_auth"}


@pytest.mark.django_db
def test_a_second_agent_cannot_reach_the_first_ones_bindings_through_the_list_filter(
    org, builder, agent, client_for
):
    other = published_agent(org, name="Other", created_by=builder)
    make_binding(org, builder, agent, "slack")
    listed = client_for(builder, org).get(f"/api/v1/channels/bindings/?agent_id={other.pk}").json()
    assert listed["count"] == 0
    assert client_for(builder, org).get("/api/v1/channels/bindings/?agent_id=x").status_code == 422


@pytest.mark.django_db
def test_a_telegram_webhook_is_registered_with_its_url_and_secret_token(
    org, builder, member, agent, client_for, fake, settings
):
    settings.AGENTICOS_PUBLIC_URL = "https://agents.acme.test"
    telegram = fake("telegram")
    binding = make_binding(org, builder, agent, "telegram")
    path = f"/api/v1/channels/bindings/{binding.pk}/register-webhook/"
    assert client_for(member, org).post(path).status_code == 403
    answer = client_for(builder, org).post(path).json()
    assert answer["ok"] is True
    call = telegram.called("setWebhook")[0]
    assert call.body == {
        "url": f"https://agents.acme.test/channels/telegram/{binding.pk}/webhook/",
        "secret_token": "telegram-secret-token",
        "allowed_updates": ["message"],
    }
    assert AuditEntry.objects.filter(action="channel.binding.register_webhook").exists()
    telegram.answers["setWebhook"] = {"ok": False, "description": "bad webhook: HTTPS required"}
    answer = client_for(builder, org).post(path).json()
    assert answer == {
        "ok": False,
        "detail": "Telegram refused setWebhook: bad webhook: HTTPS required",
    }


@pytest.mark.django_db
def test_only_telegram_registers_its_webhook_from_here(org, builder, agent, client_for):
    binding = make_binding(org, builder, agent, "slack")
    response = client_for(builder, org).post(
        f"/api/v1/channels/bindings/{binding.pk}/register-webhook/"
    )
    assert response.status_code == 422 and "platform" in response.json()
