"""The memory and conversation tools on a real Celery worker: their blocking store calls go
through the worker host's thread pool (tools/_blocking), not the event loop's thread."""

import pytest

from apps.memory.models import MemoryNote
from apps.runs.models import Conversation, Message
from tests.runs.conftest import wait_for
from tests.runs.factories import published_agent

from .support import queue, returns_of, slash_call


@pytest.mark.django_db(transaction=True)
def test_a_note_written_and_a_conversation_found_on_a_worker(celery_worker, org, owner, member):
    agent = published_agent(
        org,
        created_by=owner,
        capabilities=[{"id": "memory_files"}, {"id": "conversation_search"}],
    )
    past = Conversation.objects.create(
        organization=org, agent=agent, user=member, surface="chat", title="Offsite"
    )
    Message.objects.create(conversation=past, role="user", content="The offsite is in Lisbon.")
    run = queue(
        member,
        org,
        agent,
        slash_call("write_memory", name="trips.md", content="Offsite: Lisbon.")
        + "\n"
        + slash_call("search_conversations", query="offsite"),
    )
    finished = wait_for(run.pk)
    assert finished.status == "completed", finished.error
    wrote, found = returns_of(finished)
    assert "Created note 'trips.md'" in wrote
    assert f"conversation_id {past.pk}: 'Offsite'" in found and "**offsite**" in found
    note = MemoryNote.objects.get()
    assert (note.owner_user_id, note.body) == (member.pk, "Offsite: Lisbon.")
