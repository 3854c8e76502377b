"""The console's Triggers tab of an agent: its triggers with next fire, last run and status,
pause / resume / fire now, a new schedule or event trigger, and each trigger's history."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.agents.selectors import agent_for
from apps.orgs.access import organization_from_request

from . import selectors, services
from .choices import FireVia
from .schedules import next_fire


def _agent(request, agent_id):
    agent = agent_for(request.user, organization_from_request(request), agent_id)
    if agent is None:
        raise Http404("No such agent.")
    return agent


def _trigger(request, agent, trigger_id):
    trigger = selectors.trigger_for(request.user, request.organization, trigger_id)
    if trigger is None or trigger.agent_id != agent.pk:
        raise Http404("No such trigger.")
    return trigger


@login_required
def trigger_list(request, agent_id):
    agent = _agent(request, agent_id)
    triggers = selectors.triggers_visible_to(request.user, request.organization).filter(agent=agent)
    rows = [
        {
            "trigger": trigger,
            "next_fire": next_fire(trigger.periodic_task) if trigger.enabled else None,
            "schedule": services.describe_schedule(trigger),
            "fires": list(selectors.fires_of(trigger)[:10]),
        }
        for trigger in triggers
    ]
    return render(
        request,
        "triggers/trigger_list.html",
        {
            "agent": agent,
            "rows": rows,
            "can_manage": services.may_manage(request.user, agent),
            "new_secret": request.session.pop("trigger_secret", None),
        },
    )


def _refusal(request, error) -> None:
    """A service's refusal, said on the page (a field's name and what is wrong with it)."""
    if isinstance(error, ValidationError) and hasattr(error, "error_dict"):
        text = "; ".join(f"{field}: {' '.join(m)}" for field, m in error.message_dict.items())
    elif isinstance(error, ValidationError):
        text = " ".join(error.messages)
    else:
        text = str(error)
    messages.error(request, text)


@login_required
@require_POST
def trigger_new(request, agent_id):
    agent = _agent(request, agent_id)
    kind = request.POST.get("kind", "")
    schedule = None
    if kind == "schedule":
        every = (request.POST.get("every_seconds") or "").strip()
        if every:
            schedule = {"every_seconds": int(every) if every.isdigit() else every}
        else:
            schedule = {
                "cron": request.POST.get("cron", ""),
                "timezone": request.POST.get("timezone") or "UTC",
            }
    try:
        trigger, secret = services.trigger_create(
            actor=request.user,
            organization=request.organization,
            agent=agent,
            kind=kind,
            name=request.POST.get("name", ""),
            prompt=request.POST.get("prompt", ""),
            schedule=schedule,
            run_as_creator=request.POST.get("run_as_creator") == "on",
        )
    except (ValidationError, PermissionDenied) as error:
        _refusal(request, error)
        return redirect("triggers:list", agent_id=agent.pk)
    if secret:
        # Shown once, on the next page only (the session entry is popped when it is drawn).
        request.session["trigger_secret"] = {"trigger_id": trigger.pk, "secret": secret}
    messages.success(request, f"Trigger {trigger.name} created.")
    return redirect("triggers:list", agent_id=agent.pk)


@login_required
@require_POST
def trigger_action(request, agent_id, trigger_id, verb):
    agent = _agent(request, agent_id)
    trigger = _trigger(request, agent, trigger_id)
    try:
        if verb == "pause":
            services.trigger_pause(actor=request.user, trigger=trigger)
            messages.success(request, f"{trigger.name} paused.")
        elif verb == "resume":
            services.trigger_resume(actor=request.user, trigger=trigger)
            messages.success(request, f"{trigger.name} resumed.")
        elif verb == "fire":
            with transaction.atomic():
                fire = services.trigger_fire(
                    trigger_id=trigger.pk, via=FireVia.MANUAL, actor=request.user
                )
                services.enqueue_drive(fire)
            if fire.run_id:
                messages.success(request, f"{trigger.name} fired: run {fire.run_id}.")
            else:
                messages.error(request, fire.detail or "The trigger did not fire.")
        elif verb == "rotate":
            secret = services.trigger_rotate_secret(actor=request.user, trigger=trigger)
            request.session["trigger_secret"] = {"trigger_id": trigger.pk, "secret": secret}
            messages.success(request, "New signing secret; the old one no longer verifies.")
        elif verb == "delete":
            services.trigger_delete(actor=request.user, trigger=trigger)
            messages.success(request, f"{trigger.name} deleted.")
        else:
            raise Http404
    except (ValidationError, PermissionDenied) as error:
        _refusal(request, error)
    return redirect("triggers:list", agent_id=agent.pk)
