"""The Builder's "Where this agent is available" section over plain HTTP: who sees the form and
the buttons, where each write sends the person back to, the tab's old address, and
another organization's agent."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.channels.models import Binding

from .conftest import channel_secret, make_binding

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_builder_page_shows_the_bindings_and_the_form_to_whoever_may_publish(
    org, builder, agent, settings
):
    settings.AGENTICOS_PUBLIC_URL = "https://agents.acme.test"
    binding = make_binding(org, builder, agent, "telegram")
    page = signed_in(builder).get(f"/agents/{agent.pk}/").content.decode()
    assert 'id="channels"' in page and "Where this agent is available" in page
    assert f"https://agents.acme.test/channels/telegram/{binding.pk}/webhook/" in page
    assert "Register webhook with Telegram" in page and "Disable" in page
    assert 'id="new-binding"' in page and "telegram token" in page  # the vault's chat secrets
    # The section is its own forms, outside the Builder's: no form nests in another.
    builder_form = page[page.index('id="builder-form"') : page.index("</form>")]
    assert 'id="channels"' not in builder_form


def test_a_member_sees_where_the_agent_is_available_but_not_the_form_or_the_buttons(
    org, builder, member, agent
):
    binding = make_binding(org, builder, agent, "slack")
    page = signed_in(member).get(f"/agents/{agent.pk}/").content.decode()
    assert f'id="binding-{binding.pk}"' in page
    assert 'id="new-binding"' not in page and "Test credentials" not in page
    assert 'id="binding-bot-token"' not in page
    # And the write is refused for them all the same.
    response = signed_in(member).post(f"/agents/{agent.pk}/channels/{binding.pk}/disable/")
    assert response.status_code == 302
    binding.refresh_from_db()
    assert binding.enabled is True


def test_each_write_leads_back_to_the_section_on_the_builder(org, builder, agent):
    client = signed_in(builder)
    response = client.post(
        f"/agents/{agent.pk}/channels/new/",
        {
            "platform": "slack",
            "name": "Acme",
            "bot_token_secret_id": channel_secret(org, "token", "xoxb").pk,
            "verification_secret_id": channel_secret(org, "signing", "shh").pk,
        },
    )
    binding = Binding.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/agents/{agent.pk}/#binding-{binding.pk}"

    refused = client.post(f"/agents/{agent.pk}/channels/new/", {"platform": "slack"})
    assert refused["Location"] == f"/agents/{agent.pk}/?add_binding=1#new-binding"
    page = client.get(refused["Location"]).content.decode()
    assert 'id="new-binding" open' in page  # back at the form, open
    assert "the bot&#x27;s token is required" in page or "the bot's token is required" in page

    disabled = client.post(f"/agents/{agent.pk}/channels/{binding.pk}/disable/")
    assert disabled["Location"] == f"/agents/{agent.pk}/#binding-{binding.pk}"
    binding.refresh_from_db()
    assert binding.enabled is False


def test_the_tabs_old_address_leads_to_the_builder_section(org, builder, agent):
    response = signed_in(builder).get(f"/agents/{agent.pk}/channels/")
    assert response.status_code == 302
    assert response["Location"] == f"/agents/{agent.pk}/#channels"


def test_another_organizations_agent_and_binding_are_not_found(
    org, other_org, builder, outsider, agent
):
    binding = make_binding(org, builder, agent, "slack")
    client = signed_in(outsider)
    assert client.get(f"/agents/{agent.pk}/channels/").status_code == 404
    assert client.post(f"/agents/{agent.pk}/channels/{binding.pk}/disable/").status_code == 404
    binding.refresh_from_db()
    assert binding.enabled is True
