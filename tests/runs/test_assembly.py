"""``assemble()`` is the half of preparing a run that reads only: a resume request checks a run
with it, so checking must not open a meter or touch a row."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.capabilities.run_context import RunResources
from apps.runs.models import Run
from apps.runs.runner import assemble, execute_run, open_meter
from apps.spend.models import Ledger

from .factories import published_agent, queued_run

WRITES = ("INSERT", "UPDATE", "DELETE")


@pytest.mark.django_db
def test_assembling_a_run_writes_nothing(org, member):
    agent = published_agent(
        org,
        capabilities=[{"id": "planning", "config": {}}, {"id": "clock", "config": {}}],
    )
    execute_run(queued_run(member, org, agent, "first turn").pk)  # the default profile exists now
    run = Run.objects.get(pk=queued_run(member, org, agent, "second turn").pk)
    ledgers_before = Ledger.objects.count()

    with CaptureQueriesContext(connection) as queries:
        assembly = assemble(run)

    writes = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(WRITES)]
    assert writes == []
    assert Ledger.objects.count() == ledgers_before
    assert isinstance(assembly.resources, RunResources)
    assert assembly.resources.plan is not None  # planning is bound: its store was seeded
    assert assembly.user_prompt == "second turn"


@pytest.mark.django_db
def test_opening_the_meter_is_the_step_that_writes(org, member):
    agent = published_agent(org)
    run = Run.objects.get(pk=queued_run(member, org, agent, "hello").pk)
    assembly = assemble(run)
    assert not Ledger.objects.filter(run=run).exists()

    prepared = open_meter(assembly)

    assert Ledger.objects.filter(run=run).exists()
    assert prepared.guard.meter is prepared.meter
    assert prepared.resources is assembly.resources
