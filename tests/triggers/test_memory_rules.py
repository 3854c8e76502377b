"""A triggered run reaches memory by the rule seed 000 writes for schedules and events
(apps.memory.ownership.trigger_memory_scope): run as its creator, a schedule reads and writes the
creator's notes and an event only reads them; run as no one, it has no store."""

from __future__ import annotations

import pytest

from apps.memory.models import MemoryNote
from apps.runs.models import Run
from apps.triggers import services
from apps.triggers.choices import FireVia
from apps.triggers.tasks import fire_scheduled_trigger
from tests.memory.support import returns_of, slash_call
from tests.runs.factories import published_agent

from .conftest import event_trigger, schedule_trigger

pytestmark = pytest.mark.django_db

WRITE_NOTE = slash_call("write_memory", name="standup.md", content="Mondays at nine.")


@pytest.fixture
def agent(org, builder):
    return published_agent(
        org, name="Reporter", created_by=builder, capabilities=[{"id": "memory_files"}]
    )


def test_a_schedule_running_as_its_creator_writes_the_creators_notes(org, builder, agent):
    trigger = schedule_trigger(builder, org, agent, prompt=WRITE_NOTE)

    fire_scheduled_trigger(trigger.pk)

    run = Run.objects.get(agent=agent)
    assert run.surface == "schedule" and run.user_id == builder.pk
    assert "Created note 'standup.md'" in returns_of(run)[0]
    note = MemoryNote.objects.get(name="standup.md")
    assert note.owner_user_id == builder.pk and note.body == "Mondays at nine."


def test_a_schedule_running_as_no_one_has_no_store(org, builder, agent):
    trigger = schedule_trigger(builder, org, agent, prompt=WRITE_NOTE, run_as_creator=False)

    fire_scheduled_trigger(trigger.pk)

    assert not MemoryNote.objects.exists()
    assert returns_of(Run.objects.get(agent=agent))[0]


def test_an_event_running_as_its_creator_only_reads_the_creators_notes(org, builder, agent):
    trigger, _secret = event_trigger(builder, org, agent, prompt=WRITE_NOTE)

    fire = services.trigger_fire(trigger_id=trigger.pk, via=FireVia.EVENT, event_body="{}")
    services.fire_drive(fire.pk)

    run = Run.objects.get(agent=agent)
    assert run.surface == "event" and run.user_id == builder.pk
    assert not MemoryNote.objects.exists()
    assert "may read its creator's notes" in returns_of(run)[0]
