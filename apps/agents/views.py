"""The console's agents pages: the list, the Builder, version history.

Plain server-rendered forms (no build step). The Builder is one form: Save draft stores it,
Publish stores it and publishes, and a refused publish re-renders the page with each error next
to the field it names.
"""

from __future__ import annotations

import copy
import difflib

import yaml
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.channels.builder import channels_section
from apps.mcp.builder import bind_tool_search, mcp_section, parse_mcp_post
from apps.orgs import permissions as perms
from apps.orgs.access import organization_from_request
from apps.runs.choices import TERMINAL_STATUSES, RunStatus
from apps.vault.selectors import secrets_for

from . import selectors, services
from .forms import (
    ALERT_FORM_ROLES,
    alert_rows,
    alerts_of,
    builder_context,
    parse_builder_post,
    warn_at_text,
)
from .services import PublishRefused
from .validation import PublishError, parse_spec, validate_spec


def _agent(request, agent_id, action="view"):
    agent = selectors.agent_for(request.user, organization_from_request(request), agent_id)
    if agent is None:
        raise Http404("No such agent.")
    if action != "view" and not selectors.can(request.user, agent, action):
        raise PermissionDenied(f"{selectors.ACTIONS[action][0]} is required on this agent")
    return agent


@login_required
def agent_list(request):
    organization = organization_from_request(request)
    show_archived = request.GET.get("archived") == "1"
    agents = selectors.agents_visible_to(request.user, organization, include_archived=show_archived)
    return render(
        request,
        "agents/agent_list.html",
        {
            "agents": agents,
            "show_archived": show_archived,
            "can_create": perms.has_org_permission(request.user, organization, perms.AGENTS_EDIT),
        },
    )


@login_required
@require_POST
def agent_new(request):
    """New agent: the AgenticOS template's capabilities, configuration, instructions and budget."""
    organization = organization_from_request(request)
    try:
        agent = services.agent_create(
            actor=request.user,
            organization=organization,
            name=request.POST.get("name") or "New agent",
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("agents:list")
    messages.success(request, f"{agent.name} created from the AgenticOS template.")
    return redirect("agents:builder", agent_id=agent.pk)


def _render_builder(request, agent, *, spec: dict, errors: list[PublishError], status=200):
    can_edit = selectors.can(request.user, agent, "edit")
    context = {
        "agent": agent,
        "spec": spec,
        "budget": (spec.get("budget") or {}).get("monthly_usd") or "",
        "max_steps": (spec.get("limits") or {}).get("max_steps", 25),
        "alerts": (alerts := alerts_of(spec.get("alerts"))),
        "alert_roles": ALERT_FORM_ROLES,
        "alert_rows": alert_rows(alerts),
        "warn_at": warn_at_text(alerts),
        "errors": errors,
        "can_edit": can_edit and agent.status == "active",
        "can_publish": selectors.can(request.user, agent, "publish") and agent.status == "active",
        "versions": selectors.versions_of(agent)[:50],
        "delegate_pins": selectors.delegate_pins(agent, spec),
        "inline_specialists": selectors.inline_specialists(spec),
        # "Try it" chats with the published version beside the configuration (runs:chat-send).
        "try_it": bool(agent.current_version_id)
        and agent.status == "active"
        and selectors.can(request.user, agent, "run"),
        "terminal_statuses": sorted(TERMINAL_STATUSES),
        "status_labels": dict(RunStatus.choices),
        "can_decide": perms.has_org_permission(
            request.user, agent.organization, perms.APPROVALS_DECIDE
        ),
        **builder_context(
            spec, errors, list(secrets_for(agent.organization).values("id", "name", "purpose"))
        ),
        **mcp_section(request.user, agent.organization, spec),
        **channels_section(request, agent),
    }
    return render(request, "agents/builder.html", context, status=status)


@login_required
def builder(request, agent_id):
    agent = _agent(request, agent_id)
    if request.method != "POST":
        return _render_builder(request, agent, spec=agent.draft_spec, errors=[])

    agent = _agent(request, agent_id, "edit")
    spec = parse_builder_post(request.POST, agent.draft_spec)
    spec["mcp_connections"] = parse_mcp_post(request.POST, spec, request.user, agent.organization)
    if request.POST.get("action") == "bind_tool_search":
        # The MCP section's button: the editor's decision, never taken on their behalf.
        spec = bind_tool_search(spec)
    parsed, structural = parse_spec(spec)
    if structural:
        # Every error in one pass: what is malformed, and what the publish rules would say about
        # the rest (checked on the spec without the malformed values).
        rest = validate_spec(
            _without(spec, structural),
            organization=agent.organization,
            actor=request.user,
            agent=agent,
        )
        errors = list(dict.fromkeys([*structural, *rest]))
        return _render_builder(request, agent, spec=spec, errors=errors, status=422)
    try:
        agent = services.agent_update_draft(
            actor=request.user,
            agent=agent,
            name=request.POST.get("name") or agent.name,
            description=request.POST.get("description", agent.description),
            spec=spec,
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return _render_builder(request, agent, spec=spec, errors=[], status=422)

    if request.POST.get("action") == "bind_tool_search":
        messages.success(
            request,
            "Tool search bound: the MCP tools are now found on demand instead of sent with every "
            "request. Draft saved; publish to apply it.",
        )
        return redirect("agents:builder", agent_id=agent.pk)
    if request.POST.get("action") != "publish":
        messages.success(request, "Draft saved.")
        return redirect("agents:builder", agent_id=agent.pk)
    if not selectors.can(request.user, agent, "publish"):
        raise PermissionDenied("agents:publish is required on this agent")
    try:
        version = services.agent_publish(
            actor=request.user, agent=agent, note=request.POST.get("note", "")
        )
    except PublishRefused as refused:
        messages.error(request, "Not published: fix what is marked below. The draft is saved.")
        return _render_builder(
            request, agent, spec=agent.draft_spec, errors=refused.errors, status=422
        )
    messages.success(request, f"Published version {version.number}.")
    return redirect("agents:builder", agent_id=agent.pk)


def _without(spec: dict, errors: list[PublishError]) -> dict:
    """``spec`` with each value a structural error names taken out (a copy)."""
    spec = copy.deepcopy(spec)
    bindings = {b.get("id"): b for b in spec.get("capabilities", []) if isinstance(b, dict)}
    for error in errors:
        node = bindings.get(error.binding) if error.binding else spec
        if error.binding and node is None:
            spec["capabilities"] = [
                b for b in spec.get("capabilities", []) if b is not bindings.get(error.binding)
            ]
            continue
        *parents, leaf = error.field.split(".")
        for name in parents:
            node = node.get(name) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    return spec


@login_required
def version_detail(request, agent_id, number):
    agent = _agent(request, agent_id)
    version = selectors.version_for(agent, number)
    if version is None:
        raise Http404("No such version.")
    previous = selectors.version_for(agent, number - 1) if number > 1 else None
    spec_yaml = _yaml(version.spec)
    diff = None
    if previous is not None:
        diff = [
            {"kind": {"+": "add", "-": "del"}.get(line[:1], "ctx"), "text": line}
            for line in difflib.unified_diff(
                _yaml(previous.spec).splitlines(),
                spec_yaml.splitlines(),
                fromfile=f"v{previous.number}",
                tofile=f"v{version.number}",
                lineterm="",
                n=2,
            )
            if not line.startswith(("---", "+++"))
        ]
    return render(
        request,
        "agents/version_detail.html",
        {
            "agent": agent,
            "version": version,
            "spec_yaml": spec_yaml,
            "previous": previous,
            "diff": diff,
        },
    )


def _yaml(spec: dict) -> str:
    """A spec as YAML a person reads: keys in the spec's order, text as text (no escapes)."""
    return yaml.safe_dump(
        spec, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )


@login_required
@require_POST
def specialist_promote(request):
    """Keep a specialist (inline, or one the model wrote during a run) as a draft agent: owned by
    whoever promoted it, behind agents:edit; it does not publish, pin or remove anything."""
    organization = organization_from_request(request)
    try:
        agent = services.specialist_promote(
            actor=request.user,
            organization=organization,
            name=request.POST.get("name", ""),
            description=request.POST.get("description", ""),
            instructions=request.POST.get("instructions", ""),
            model=request.POST.get("model", ""),
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("runs:chat")
    messages.success(request, f"{agent.name} kept as a draft agent; publish it to use it.")
    return redirect("agents:builder", agent_id=agent.pk)


@login_required
@require_POST
def pin_move(request, agent_id, delegate_id):
    agent = _agent(request, agent_id, "edit")
    try:
        services.agent_pin_move(actor=request.user, agent=agent, delegate_agent_id=delegate_id)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "Pin moved in the draft; publish to make callers use it.")
    return redirect("agents:builder", agent_id=agent.pk)


@login_required
@require_POST
def agent_archive(request, agent_id):
    agent = _agent(request, agent_id, "edit")
    try:
        services.agent_archive(actor=request.user, agent=agent)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"{agent.name} archived.")
    return redirect("agents:list")
