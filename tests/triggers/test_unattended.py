"""A trigger fires through beat, and what "unattended" adds to a refusal: each rule a test."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection

from apps.audit.models import AuditEntry
from apps.orgs.models import Membership
from apps.runs.models import Message, Run
from apps.triggers import services
from apps.triggers.choices import FireVia
from apps.triggers.models import Trigger, TriggerFire
from apps.triggers.tasks import fire_scheduled_trigger
from tests.runs.factories import compatible_profile, published_agent

from .conftest import schedule_trigger


@pytest.fixture
def beat(eager_celery):
    """django-celery-beat's own scheduler, as the beat process runs it; its due tasks run
    eagerly here. Its exit-time sync is cancelled (the test database is gone by then)."""
    from django_celery_beat.schedulers import DatabaseScheduler

    made = []

    def make():
        made.append(DatabaseScheduler(app=eager_celery))
        return made[-1]

    yield make
    for scheduler in made:
        scheduler._finalize.cancel()


# Beat commits and closes its connection between ticks, as it does in production: a real
# transaction per tick, so the test cannot wrap them in one.
@pytest.mark.django_db(transaction=True)
def test_a_cron_schedule_fires_through_beat_when_its_time_comes_in_its_timezone(
    org, builder, agent, beat, moved_clock
):
    trigger = schedule_trigger(builder, org, agent)  # 09:00 every day, Madrid time
    task = trigger.periodic_task
    task.last_run_at = dt.datetime(2026, 12, 2, 7, 0, tzinfo=dt.UTC)  # 08:00 in Madrid
    task.save(update_fields=["last_run_at"])
    scheduler = beat()

    moved_clock.now = dt.datetime(2026, 12, 2, 7, 59, 30, tzinfo=dt.UTC)  # 08:59:30 Madrid
    for _ in range(3):
        scheduler.tick()
    assert not Run.objects.filter(agent=agent).exists()

    moved_clock.now = dt.datetime(2026, 12, 2, 8, 0, 30, tzinfo=dt.UTC)  # 09:00:30 Madrid
    for _ in range(3):
        scheduler.tick()

    run = Run.objects.get(agent=agent)
    assert run.surface == "schedule"
    assert run.user == builder  # runs as its creator
    assert run.input == "Write the daily report"
    assert run.status == "completed", run.error
    trigger.refresh_from_db()
    assert trigger.last_run == run
    fire = TriggerFire.objects.get(trigger=trigger)
    assert (fire.via, fire.outcome, fire.run) == ("schedule", "finished", run)
    assert AuditEntry.objects.filter(action="trigger.fire", subject_id=str(trigger.pk)).exists()


# Beat commits and closes its connection between ticks, as it does in production: a real
# transaction per tick, so the test cannot wrap them in one.
@pytest.mark.django_db(transaction=True)
def test_an_interval_schedule_fires_once_per_period(org, builder, agent, beat, moved_clock):
    trigger = schedule_trigger(builder, org, agent, schedule={"every_seconds": 3600})
    task = trigger.periodic_task
    task.last_run_at = moved_clock.now
    task.save(update_fields=["last_run_at"])
    scheduler = beat()

    moved_clock.now += dt.timedelta(minutes=30)
    scheduler.tick()
    assert Run.objects.filter(agent=agent).count() == 0
    moved_clock.now += dt.timedelta(minutes=31)
    scheduler.tick()
    scheduler.tick()
    assert Run.objects.filter(agent=agent).count() == 1


# Beat commits and closes its connection between ticks, as it does in production: a real
# transaction per tick, so the test cannot wrap them in one.
@pytest.mark.django_db(transaction=True)
def test_a_paused_schedule_does_not_fire(org, builder, agent, beat, moved_clock):
    trigger = schedule_trigger(builder, org, agent, schedule={"every_seconds": 60})
    services.trigger_pause(actor=builder, trigger=trigger)
    trigger.periodic_task.refresh_from_db()
    assert trigger.periodic_task.enabled is False
    moved_clock.now += dt.timedelta(hours=2)
    beat().tick()
    assert not Run.objects.filter(agent=agent).exists()


@pytest.mark.django_db
def test_a_budget_refusal_ends_budget_exceeded_and_waits_for_the_next_fire(org, builder):
    org.monthly_budget_usd = Decimal("0")
    org.save(update_fields=["monthly_budget_usd"])
    agent = published_agent(org, created_by=builder)
    trigger = schedule_trigger(builder, org, agent)

    assert fire_scheduled_trigger(trigger.pk) == "finished"

    run = Run.objects.get(agent=agent)
    assert run.status == "budget_exceeded" and run.stop_reason == "budget"
    trigger.refresh_from_db()
    assert trigger.enabled and trigger.last_run == run  # not disabled, not retried
    assert Run.objects.filter(agent=agent).count() == 1
    # The next fire is a new run (refused again while the cap holds), never a retry of this one.
    fire_scheduled_trigger(trigger.pk)
    assert Run.objects.filter(agent=agent, status="budget_exceeded").count() == 2


@pytest.mark.django_db
def test_a_creator_who_lost_the_grant_disables_the_trigger_with_an_audit_entry(org, builder, agent):
    trigger = schedule_trigger(builder, org, agent)
    Membership.objects.filter(organization=org, user=builder).update(role="viewer")

    assert fire_scheduled_trigger(trigger.pk) == "refused"

    trigger.refresh_from_db()
    assert not trigger.enabled
    assert "lost the right to run Reporter" in trigger.disabled_reason
    trigger.periodic_task.refresh_from_db()
    assert trigger.periodic_task.enabled is False
    assert not Run.objects.filter(agent=agent).exists()
    entry = AuditEntry.objects.get(action="trigger.disabled", subject_id=str(trigger.pk))
    assert "lost the right to run" in entry.details["reason"]
    assert entry.actor_id is None


@pytest.mark.django_db
def test_a_creator_who_left_the_organization_disables_the_trigger(org, builder, agent):
    trigger = schedule_trigger(builder, org, agent)
    Membership.objects.filter(organization=org, user=builder).delete()

    fire_scheduled_trigger(trigger.pk)

    trigger.refresh_from_db()
    assert not trigger.enabled and "left the organization" in trigger.disabled_reason
    entry = AuditEntry.objects.get(action="trigger.disabled", subject_id=str(trigger.pk))
    assert "left the organization" in entry.details["reason"]
    assert not Run.objects.filter(agent=agent).exists()
    # Disabled, later fires are refused without a second audit entry.
    fire_scheduled_trigger(trigger.pk)
    assert AuditEntry.objects.filter(action="trigger.disabled").count() == 1


@pytest.mark.django_db
def test_a_model_failure_is_failed_not_retried_and_last_run_points_at_it(
    org, builder, allow_local_model_requests
):
    # Nothing listens on port 9: the provider is down.
    profile = compatible_profile(org, base_url="http://127.0.0.1:9/v1", model_name="down")
    agent = published_agent(org, created_by=builder, model_profile_id=profile.pk)
    trigger = schedule_trigger(builder, org, agent)

    fire_scheduled_trigger(trigger.pk)

    run = Run.objects.get(agent=agent)
    assert run.status == "failed" and run.stop_reason == "provider_error"
    trigger.refresh_from_db()
    assert trigger.enabled and trigger.last_run == run
    assert Run.objects.filter(agent=agent).count() == 1  # no retry
    assert fire_scheduled_trigger.max_retries == 0


@pytest.mark.django_db
def test_a_run_whose_recording_did_not_commit_fails_the_fire(org, builder, agent):
    trigger = schedule_trigger(builder, org, agent)
    # The assistant turn's insert fails inside the final booking, after the model answered.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            CREATE FUNCTION refuse_assistant_turn() RETURNS trigger AS $$
            BEGIN IF NEW.role = 'assistant' THEN RAISE EXCEPTION 'disk full'; END IF;
            RETURN NEW; END $$ LANGUAGE plpgsql;
            CREATE TRIGGER refuse_assistant_turn BEFORE INSERT ON "{Message._meta.db_table}"
            FOR EACH ROW EXECUTE FUNCTION refuse_assistant_turn();
            """
        )
    fire = services.trigger_fire(trigger_id=trigger.pk, via=FireVia.SCHEDULE)

    with pytest.raises(services.TriggerFireFailed):
        services.fire_drive(fire.pk)

    fire.refresh_from_db()
    assert fire.outcome == "failed"
    run = Run.objects.get(pk=fire.run_id)
    # The half-written completed end was rolled back: the run reads failed, with no answer.
    assert run.status == "failed" and run.stop_reason == "internal_error"
    assert run.output == "" and run.transcript == []
    assert not Message.objects.filter(run=run, role="assistant").exists()
    trigger.refresh_from_db()
    assert trigger.last_run == run
    assert AuditEntry.objects.filter(action="trigger.fire_failed").exists()


@pytest.mark.django_db
def test_a_trigger_not_running_as_its_creator_runs_as_no_one(org, builder, agent):
    trigger = schedule_trigger(builder, org, agent, run_as_creator=False)
    fire_scheduled_trigger(trigger.pk)
    run = Run.objects.get(agent=agent)
    assert run.user_id is None and run.surface == "schedule" and run.status == "completed"
    assert Trigger.objects.get(pk=trigger.pk).last_run == run
