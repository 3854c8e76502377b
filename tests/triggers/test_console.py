"""The Triggers tab of an agent, server-rendered."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.runs.models import Run
from apps.triggers.models import Trigger


def signed_in(user, org):
    client = Client()
    client.force_login(user)
    session = client.session
    session["organization_id"] = org.pk
    session.save()
    return client


@pytest.mark.django_db
def test_a_builder_creates_a_schedule_fires_it_now_and_sees_the_run(
    org, builder, agent, eager_celery, django_capture_on_commit_callbacks
):
    client = signed_in(builder, org)
    page = client.get(f"/agents/{agent.pk}/triggers/")
    assert page.status_code == 200 and b"No triggers yet" in page.content
    response = client.post(
        f"/agents/{agent.pk}/triggers/new/",
        {
            "name": "Morning",
            "kind": "schedule",
            "prompt": "Report",
            "cron": "0 9 * * *",
            "timezone": "Europe/Madrid",
            "run_as_creator": "on",
        },
    )
    assert response.status_code == 302
    trigger = Trigger.objects.get(name="Morning")
    page = client.get(f"/agents/{agent.pk}/triggers/").content.decode()
    assert "cron 0 9 * * * (Europe/Madrid)" in page and "never fired" in page

    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/agents/{agent.pk}/triggers/{trigger.pk}/fire/")
    run = Run.objects.get(agent=agent)
    page = client.get(f"/agents/{agent.pk}/triggers/").content.decode()
    assert f"?run={run.pk}" in page and "Completed" in page

    client.post(f"/agents/{agent.pk}/triggers/{trigger.pk}/pause/")
    assert not Trigger.objects.get(pk=trigger.pk).enabled
    assert "Resume" in client.get(f"/agents/{agent.pk}/triggers/").content.decode()


@pytest.mark.django_db
def test_an_event_triggers_secret_is_shown_once(org, builder, agent):
    client = signed_in(builder, org)
    client.post(
        f"/agents/{agent.pk}/triggers/new/", {"name": "Hook", "kind": "event", "prompt": "Triage"}
    )
    first = client.get(f"/agents/{agent.pk}/triggers/").content.decode()
    assert "shown this once" in first
    assert "shown this once" not in client.get(f"/agents/{agent.pk}/triggers/").content.decode()


@pytest.mark.django_db
def test_a_member_sees_the_tab_without_controls_and_another_org_gets_404(
    org, member, builder, agent, outsider, other_org
):
    page = signed_in(member, org).get(f"/agents/{agent.pk}/triggers/").content.decode()
    assert "New trigger" not in page
    assert signed_in(outsider, other_org).get(f"/agents/{agent.pk}/triggers/").status_code == 404
    refused = signed_in(member, org).post(
        f"/agents/{agent.pk}/triggers/new/", {"name": "x", "kind": "event", "prompt": "y"}
    )
    assert refused.status_code == 302 and not Trigger.objects.exists()
