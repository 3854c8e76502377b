"""Deleting a conversation: `DELETE /api/v1/conversations/{id}/` and the service behind it. Its
messages go, its stored media (the media capability's blobs) go after the commit, its runs stay in
the run history unlinked; audited; another organization's is a 404; a live run refuses it."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from apps.audit.models import AuditEntry
from apps.capabilities.tools.media import media_prefix
from apps.runs.choices import RunStatus
from apps.runs.models import Conversation, Message, Run
from apps.runs.runner import execute_run
from tests.capabilities.tools.test_media import (  # noqa: F401  (fixture)
    DIGEST,
    PICTURE,
    media_agent,
    picture_tools,
)

from .factories import published_agent, queued_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def storage(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "storage"
    return default_storage


def conversation_of(user, org, agent) -> Conversation:
    return Conversation.objects.create(organization=org, agent=agent, user=user)


def url(conversation) -> str:
    return f"/api/v1/conversations/{conversation.pk}/"


def test_deleting_a_conversation_deletes_its_stored_media(
    org,
    member,
    picture_tools,  # noqa: F811
    client_for,
    django_capture_on_commit_callbacks,
):
    agent = media_agent(org)
    conversation = conversation_of(member, org, agent)
    run = queued_run(member, org, agent, "/call picture {}", conversation=conversation)
    execute_run(run.pk)
    blob = f"{media_prefix(org.pk, conversation.pk)}{DIGEST}"
    assert default_storage.exists(blob)
    # Another thread's blob of the same image stays: the prefix is the lifetime, not the hash.
    other = conversation_of(member, org, agent)
    kept = default_storage.save(f"{media_prefix(org.pk, other.pk)}{DIGEST}", ContentFile(PICTURE))

    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(member, org).delete(url(conversation))
    assert response.status_code == 204
    assert not default_storage.exists(blob)
    assert default_storage.exists(kept)
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert not Message.objects.filter(conversation_id=conversation.pk).exists()
    # The run stays in the history and the bill, unlinked; its reference reads as a placeholder.
    run.refresh_from_db()
    assert run.conversation_id is None and run.status == RunStatus.COMPLETED
    entry = AuditEntry.objects.get(action="conversation.delete", organization=org)
    assert entry.actor_id == member.pk and entry.subject_id == str(conversation.pk)
    assert entry.details["runs"] == 1 and entry.details["messages"] == 2


def test_another_organizations_conversation_is_a_404_like_a_missing_id(
    org, other_org, outsider, member, client_for, storage
):
    agent = published_agent(org)
    conversation = conversation_of(member, org, agent)
    client = client_for(outsider, other_org)
    theirs = client.delete(url(conversation))
    missing = client.delete("/api/v1/conversations/99999999/")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == missing.json()
    assert Conversation.objects.filter(pk=conversation.pk).exists()


def test_someone_elses_conversation_needs_settings_manage(
    org, member, operator, admin, client_for, storage
):
    agent = published_agent(org)
    conversation = conversation_of(member, org, agent)
    # An operator reads every run (runs:view), which is no right to delete what others said.
    assert client_for(operator, org).delete(url(conversation)).status_code == 403
    assert Conversation.objects.filter(pk=conversation.pk).exists()
    assert client_for(admin, org).delete(url(conversation)).status_code == 204
    assert not Conversation.objects.filter(pk=conversation.pk).exists()


def test_a_member_cannot_see_another_members_conversation(org, member, viewer, client_for):
    agent = published_agent(org)
    conversation = conversation_of(member, org, agent)
    assert client_for(viewer, org).delete(url(conversation)).status_code == 404


def test_a_conversation_with_a_live_run_is_refused_with_409(org, member, client_for, storage):
    agent = published_agent(org)
    conversation = conversation_of(member, org, agent)
    queued_run(member, org, agent, "hello", conversation=conversation)  # still queued
    response = client_for(member, org).delete(url(conversation))
    assert response.status_code == 409
    assert "still going" in str(response.json())
    assert Conversation.objects.filter(pk=conversation.pk).exists()
    assert not AuditEntry.objects.filter(action="conversation.delete").exists()
    assert Run.objects.filter(conversation=conversation).count() == 1


def test_deleting_needs_authentication(api_client, org, member):
    agent = published_agent(org)
    conversation = conversation_of(member, org, agent)
    assert api_client.delete(url(conversation)).status_code in (401, 403)


def test_the_chat_deletes_your_conversation_and_goes_back_to_the_chat(org, member, client, storage):
    agent = published_agent(org)
    conversation = conversation_of(member, org, agent)
    client.force_login(member)
    page = client.get(f"/chat/{conversation.pk}/")
    assert b'id="conversation-delete"' in page.content
    response = client.post(f"/chat/{conversation.pk}/delete/")
    assert response.status_code == 302 and response.url == "/chat/"
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert AuditEntry.objects.filter(action="conversation.delete", actor=member).count() == 1


def test_the_chat_cannot_delete_someone_elses_conversation(org, member, admin, client, storage):
    """Chat is private: even settings:manage deletes another person's thread over the API only."""
    agent = published_agent(org)
    conversation = conversation_of(member, org, agent)
    client.force_login(admin)
    assert client.post(f"/chat/{conversation.pk}/delete/").status_code == 404
    assert Conversation.objects.filter(pk=conversation.pk).exists()


def test_the_chat_says_a_live_run_holds_the_conversation(org, member, client, storage):
    agent = published_agent(org)
    conversation = conversation_of(member, org, agent)
    queued_run(member, org, agent, "hello", conversation=conversation)
    client.force_login(member)
    response = client.post(f"/chat/{conversation.pk}/delete/")
    assert response.status_code == 409 and b"still going" in response.content
    assert Conversation.objects.filter(pk=conversation.pk).exists()
