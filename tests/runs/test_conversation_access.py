"""Posting a turn is its conversation owner's alone: runs:view reads a colleague's runs, it never
speaks in their private chat. Someone else's conversation is a 404 exactly like a missing one."""

import pytest

from apps.runs.models import Conversation, Message, Run
from apps.runs.selectors import conversation_for_writer

from .factories import published_agent


@pytest.fixture
def agent(org):
    return published_agent(org)


@pytest.fixture
def members_chat(org, member, agent, client_for):
    response = client_for(member, org).post(
        "/api/v1/runs/", {"agent_id": agent.pk, "input": "my private question"}, format="json"
    )
    assert response.status_code == 201
    return Conversation.objects.get(pk=response.json()["conversation_id"])


def _post_into(client, agent, conversation_id):
    return client.post(
        "/api/v1/runs/",
        {"agent_id": agent.pk, "input": "posted by someone", "conversation_id": conversation_id},
        format="json",
    )


@pytest.mark.django_db
def test_an_operator_posting_into_a_members_chat_gets_the_missing_conversations_404(
    org, operator, agent, members_chat, client_for
):
    runs_before = Run.objects.count()
    client = client_for(operator, org)

    into_members = _post_into(client, agent, members_chat.pk)
    missing = _post_into(client, agent, members_chat.pk + 1000)

    assert into_members.status_code == 404
    assert into_members.json() == missing.json()
    assert Run.objects.count() == runs_before
    assert not Message.objects.filter(conversation=members_chat, content="posted by someone")


@pytest.mark.django_db
def test_the_chats_owner_posts_the_next_turn(org, member, agent, members_chat, client_for):
    response = _post_into(client_for(member, org), agent, members_chat.pk)
    assert response.status_code == 201
    assert response.json()["conversation_id"] == members_chat.pk


@pytest.mark.django_db
def test_another_organizations_owner_gets_a_404(
    org, other_org, outsider, agent, members_chat, client_for
):
    other_agent = published_agent(other_org, name="Theirs")
    assert (
        _post_into(client_for(outsider, other_org), other_agent, members_chat.pk).status_code == 404
    )


@pytest.mark.django_db
def test_the_console_chat_refuses_the_same_post(client, org, operator, agent, members_chat):
    client.force_login(operator)
    response = client.post(
        f"/chat/send/?org={org.pk}",
        {"agent_id": agent.pk, "input": "posted by someone", "conversation_id": members_chat.pk},
    )
    assert response.status_code == 404
    assert not Message.objects.filter(conversation=members_chat, content="posted by someone")


@pytest.mark.django_db
def test_no_role_widens_the_writer_lookup(
    org, owner, admin, operator, member, app_admin, members_chat
):
    assert conversation_for_writer(member, org, members_chat.pk) == members_chat
    for reader in (owner, admin, operator, app_admin):
        assert conversation_for_writer(reader, org, members_chat.pk) is None
