"""Settings → Connections: the MCP servers this organization and this member connected.

Every member who runs agents sees the page: the organization's connections (changed by those with
``settings:manage``) and their own personal ones. Add, test, list tools, rotate or clear the token,
delete — each a form posting to one service, the same rules as the API (a token typed while
impersonating is a 403 from the service itself).
"""

from __future__ import annotations

from typing import cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.orgs.access import organization_from_request
from apps.orgs.permissions import AGENTS_RUN, SETTINGS_MANAGE, has_org_permission

from . import selectors, services
from .choices import Scope, Transport
from .client import McpUnreachable


class ConnectionForm(forms.Form):
    name = forms.CharField(max_length=100)
    url = forms.CharField(
        label="Server URL", max_length=500, help_text="The server's streamable HTTP or SSE address."
    )
    transport = forms.ChoiceField(choices=Transport.choices, initial=Transport.STREAMABLE_HTTP)
    scope = forms.ChoiceField(
        choices=Scope.choices,
        label="Who it belongs to",
        help_text="An organization connection is shared with every agent that binds it; a "
        "personal one speaks as you and only your agents can bind it.",
    )
    token = forms.CharField(
        label="Bearer token (optional)",
        required=False,
        max_length=8192,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Stored encrypted; never shown again.",
    )
    # django-stubs reads this as overriding BaseForm.prefix (the form's own name prefix); the form
    # metaclass moves declared fields into base_fields, so nothing is shadowed at runtime.
    prefix = forms.CharField(  # type: ignore[assignment]
        label="Tool prefix (optional)",
        required=False,
        max_length=40,
        help_text="Its tools reach the model as <prefix>_<tool>; by default from the name.",
    )

    def __init__(self, *args, may_share: bool, **kwargs):
        super().__init__(*args, **kwargs)
        if not may_share:
            scope = cast(forms.ChoiceField, self.fields["scope"])
            scope.choices = [(Scope.PERSONAL, Scope.PERSONAL.label)]
        self.fields["scope"].initial = Scope.ORGANIZATION if may_share else Scope.PERSONAL


def _connection(request, connection_id):
    connection = selectors.connection_visible_to(
        request.user, organization_from_request(request, AGENTS_RUN), connection_id
    )
    if connection is None:
        raise Http404("No such connection.")
    return connection


def _listed(request, connection) -> None:
    """List the tools and fix them on the connection, saying the outcome on the page."""
    try:
        connection = services.connection_list_tools(actor=request.user, connection=connection)
    except McpUnreachable as exc:
        messages.error(request, f"{exc.plain}. Its tools were not listed.")
        return
    names = ", ".join(connection.tool_names) or "none"
    messages.success(
        request, f"{connection.name}: {len(connection.tool_names)} tools listed ({names})."
    )


@login_required
def connections(request):
    organization = organization_from_request(request, AGENTS_RUN)
    may_share = has_org_permission(request.user, organization, SETTINGS_MANAGE)
    form = ConnectionForm(request.POST or None, may_share=may_share)
    if request.method == "POST" and form.is_valid():
        data = {k: v for k, v in form.cleaned_data.items() if v not in ("", None)}
        try:
            connection = services.connection_create(
                actor=request.user, organization=organization, **data
            )
        except ValidationError as error:
            for field, problems in error.message_dict.items():
                form.add_error(field if field in form.fields else None, problems)
        else:
            messages.success(request, f"{connection.name} added.")
            _listed(request, connection)
            return redirect("mcp:connections")
    rows = [
        {"connection": c, "may_manage": services.may_manage(request.user, c)}
        for c in selectors.connections_visible_to(request.user, organization)
    ]
    return render(
        request, "mcp/connections.html", {"form": form, "rows": rows, "may_share": may_share}
    )


@login_required
@require_POST
def test(request, connection_id: int):
    connection = _connection(request, connection_id)
    try:
        tools = services.connection_test(actor=request.user, connection=connection)
    except McpUnreachable as exc:
        messages.error(request, f"{exc.plain}.")
    else:
        messages.success(
            request, f"Reached {connection.name}: the server offers {len(tools)} tools."
        )
    return redirect("mcp:connections")


@login_required
@require_POST
def list_tools(request, connection_id: int):
    _listed(request, _connection(request, connection_id))
    return redirect("mcp:connections")


@login_required
@require_POST
def token(request, connection_id: int):
    connection = _connection(request, connection_id)
    clear = request.POST.get("clear") == "1"
    value = request.POST.get("token", "")
    try:
        services.connection_update(
            actor=request.user,
            connection=connection,
            token=services.UNSET if clear else value,
            clear_token=clear,
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"{connection.name}: token {'cleared' if clear else 'rotated'}.")
    return redirect("mcp:connections")


@login_required
@require_POST
def delete(request, connection_id: int):
    connection = _connection(request, connection_id)
    services.connection_delete(actor=request.user, connection=connection)
    messages.success(request, f"{connection.name} deleted.")
    return redirect("mcp:connections")
