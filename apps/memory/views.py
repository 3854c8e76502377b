"""The console's memory pages: Settings → Memory (everyone's own notes; no permission guards it,
because the answer is the same for a Viewer and an Owner), and "Empty this agent's memory" from
the Builder."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.agents.selectors import agent_for
from apps.orgs.access import organization_from_request

from . import selectors, services
from .erasure import agent_memory_empty, agents_bound_to_mem0, memory_erase_person
from .services import MemoryErasureIncomplete


@login_required
def memory_settings(request):
    organization = organization_from_request(request)
    notes = list(selectors.memory_notes_of_person(request.user, organization))
    return render(
        request,
        "memory/settings_memory.html",
        {
            "notes": notes,
            "mem0_agents": agents_bound_to_mem0(organization),
            "personal_memory_allowed": organization.allow_personal_memory,
        },
    )


_ACTIONS = {
    "suspend": (services.memory_note_suspend, "{name} is no longer used by any agent."),
    "restore": (services.memory_note_restore, "{name} is in use again."),
    "delete": (services.memory_note_delete, "{name} was deleted."),
}


@login_required
@require_POST
def memory_note_action(request, note_id: int, action: str):
    organization = organization_from_request(request)
    note = selectors.memory_note_of_person(request.user, organization, note_id)
    if note is None or action not in _ACTIONS:
        raise Http404
    service, sentence = _ACTIONS[action]
    service(actor=request.user, note=note)
    messages.success(request, sentence.format(name=note.name))
    return redirect("memory:settings")


@login_required
@require_POST
def memory_erase_mine(request):
    organization = organization_from_request(request)
    try:
        erased = memory_erase_person(
            actor=request.user, organization=organization, person=request.user
        )
    except MemoryErasureIncomplete as incomplete:
        messages.error(request, str(incomplete))
    else:
        messages.success(
            request,
            f"Erased {erased['notes']} note(s) and {erased['mem0_spaces']} mem0 space(s) kept "
            "about you.",
        )
    return redirect("memory:settings")


@login_required
@require_POST
def memory_erase_member(request, user_id: int):
    """Settings → Members: someone with members:manage erases another person's memory."""
    organization = organization_from_request(request)
    person = selectors.memory_subject(organization, user_id)
    if person is None:
        raise Http404
    try:
        erased = memory_erase_person(actor=request.user, organization=organization, person=person)
    except PermissionDenied as denied:
        messages.error(request, f"Not erased: {denied}.")
    except MemoryErasureIncomplete as incomplete:
        messages.error(request, str(incomplete))
    else:
        messages.success(
            request,
            f"Erased {erased['notes']} note(s) and {erased['mem0_spaces']} mem0 space(s) kept "
            f"about {person.email}.",
        )
    return redirect("console:members")


@login_required
@require_POST
def agent_memory_empty_view(request, agent_id: int):
    organization = organization_from_request(request)
    agent = agent_for(request.user, organization, agent_id)
    if agent is None:
        raise Http404
    try:
        emptied = agent_memory_empty(actor=request.user, agent=agent)
    except PermissionDenied as denied:
        messages.error(request, f"Not emptied: {denied}.")
    except MemoryErasureIncomplete as incomplete:
        messages.error(request, str(incomplete))
    else:
        messages.success(
            request,
            f"Emptied {agent.name}'s memory: {emptied['notes']} note(s) and "
            f"{emptied['mem0_spaces']} mem0 space(s).",
        )
    return redirect("agents:builder", agent.pk)
