"""The console's audit page, its download, and starting/stopping an impersonation."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Min
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_POST

from apps.orgs.access import organization_from_request
from apps.orgs.permissions import AUDIT_READ

from . import checkpoints
from .exports import EXPORT_ROW_LIMIT, audit_export, console_download, with_shown_window
from .forms import ImpersonationForm
from .impersonation import ImpersonationRefused, impersonation_start, impersonation_stop
from .selectors import (
    AuditFilters,
    audit_action_names,
    audit_entries_visible_to,
    audit_entry_row,
    parse_audit_filters,
)

PAGE_SIZE = 50
User = get_user_model()


def _actor_by_email(params):
    """The Actor box takes an email (or a user id): an email becomes the ``actor_user_id`` the
    shared filter parser reads, so the export link carries the same selection. Returns the
    params, and False when the email names nobody (the page then matches nothing, not every
    entry)."""
    params = params.copy()
    actor = (params.get("actor") or "").strip()
    if actor and not params.get("actor_user_id"):
        if actor.isdigit():
            params["actor_user_id"] = actor
        else:
            user_id = User.objects.filter(email__iexact=actor).values_list("pk", flat=True).first()
            if user_id is None:
                return params, False
            params["actor_user_id"] = str(user_id)
    return params, True


def _chain_state(organization) -> dict:
    """What the last signed checkpoint says about this organization's chain (written after the
    hourly verification; ``agenticos audit-verify`` checks it again on demand)."""
    try:
        checkpoint = checkpoints.read(f"org:{organization.pk}")
    except checkpoints.CheckpointInvalid as invalid:
        return {"state": "invalid", "problem": str(invalid)}
    except (RuntimeError, ValueError) as unavailable:
        return {"state": "unavailable", "problem": str(unavailable)}
    if checkpoint is None:
        return {"state": "none"}
    return {
        "state": "verified",
        "length": checkpoint.length,
        "head_entry_id": checkpoint.head_entry_id,
        "written_at": parse_datetime(checkpoint.written_at),
    }


@login_required
def audit_log(request):
    organization = organization_from_request(request, AUDIT_READ)
    entries = audit_entries_visible_to(request.user, organization)
    params, actor_exists = _actor_by_email(request.GET)
    if not actor_exists:
        entries = entries.none()
    try:
        filters = parse_audit_filters(params)
    except ValidationError as error:
        messages.error(
            request,
            "Filters ignored: "
            + "; ".join(
                f"{field}: {' '.join(problems)}" for field, problems in error.message_dict.items()
            ),
        )
        filters = AuditFilters()
    shown = filters.apply(entries)
    page = Paginator(shown.order_by("-created_at", "-sequence"), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    query = params.copy()
    query.pop("page", None)
    query.pop("actor", None)
    download_query = with_shown_window(
        query,
        ("created_from", "created_to"),
        earliest=shown.aggregate(earliest=Min("created_at"))["earliest"],
    )
    return render(
        request,
        "audit/log.html",
        {
            "organization": organization,
            "page": page,
            "rows": [
                audit_entry_row(entry) | {"when": entry.created_at} for entry in page.object_list
            ],
            "actor_query": request.GET.get("actor", ""),
            "chain": _chain_state(organization),
            "actions": audit_action_names(entries),
            "filters": filters,
            "query": query.urlencode(),
            # Nothing to download when the actor named is nobody.
            "download_query": download_query.urlencode() if actor_exists else None,
            "export_limit": EXPORT_ROW_LIMIT,
        },
    )


@login_required
def audit_download(request):
    organization_from_request(request, AUDIT_READ)
    return console_download(request, audit_export, page_url=reverse("audit:log"))


@login_required
def impersonation_start_view(request):
    """An app admin starts acting as another account (at most an hour)."""
    admin = request.user
    if getattr(request, "impersonator", None) is not None:
        messages.error(request, "Stop the current impersonation first.")
        return redirect("audit:log")
    if not admin.is_superuser:
        raise PermissionDenied("Only an app admin may act as another account.")
    form = ImpersonationForm(request.POST or None, initial={"email": request.GET.get("email", "")})
    if request.method == "POST" and form.is_valid():
        target = get_user_model().objects.filter(email__iexact=form.cleaned_data["email"]).first()
        if target is None:
            form.add_error("email", "No account has this email.")
        else:
            try:
                impersonation = impersonation_start(
                    admin=admin,
                    target=target,
                    session=request.session,
                    reason=form.cleaned_data["reason"],
                )
            except ImpersonationRefused as refused:
                form.add_error(None, str(refused))
            else:
                messages.warning(
                    request,
                    f"You are acting as {target.email} until {impersonation.expires_at:%H:%M} UTC. "
                    "Everything you do is recorded with both names.",
                )
                return redirect("console:dashboard")
    return render(request, "audit/impersonate.html", {"form": form})


@login_required
@require_POST
def impersonation_stop_view(request):
    admin = getattr(request, "impersonator", None) or request.user
    ended = impersonation_stop(admin=admin, session=request.session)
    if ended is not None:
        messages.success(
            request, f"You are yourself again; the impersonation of {ended.target.email} ended."
        )
    return redirect("console:dashboard")
