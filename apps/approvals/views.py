"""The console's Approvals tab of Activity: the queue with Approve / Reject and a note, oldest
first, and the decided log with no controls on resolved rows.

Activity's ``?tab=approvals`` (apps.runs.views.activity) draws this same queue inside the Activity
page through ``queue_context`` and ``approvals/_queue.html``; ``/approvals/`` serves it standalone.
Someone without approvals:decide is sent to the run history instead of meeting a tab that is not
there (seed 003, "La alerta de aprobación son dos correos"). A decision posted from the Activity
tab or from a chat's approval card names where to go back to in ``next``.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from apps.orgs.access import organization_from_request
from apps.orgs.permissions import APPROVALS_DECIDE, has_org_permission

from . import selectors, services
from .choices import ApprovalStatus

RUN_HISTORY_URL = "/activity/"
LOG_STATUSES = (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED)


def _age_text(seconds: int | None) -> str:
    if seconds is None:
        return ""
    hours, minutes = divmod(seconds // 60, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def queue_context(request, organization, *, back_to: str = "") -> dict:
    """What ``approvals/_queue.html`` draws: the queue oldest first, the decided log, the oldest
    wait. The caller has checked approvals:decide (the selectors answer nothing otherwise)."""
    visible = selectors.approvals_visible_to(request.user, organization)
    pending = selectors.ApprovalFilters().apply(visible)[:200]
    decided = visible.filter(status__in=LOG_STATUSES).order_by("-decided_at", "-pk")[:100]
    return {
        "organization": organization,
        "pending": [selectors.approval_row(a) for a in pending],
        "decided": [selectors.approval_row(a) | {"run_status": a.run.status} for a in decided],
        "oldest_age_text": _age_text(
            selectors.oldest_pending_age_seconds(request.user, organization)
        ),
        "back_to": back_to,
    }


@login_required
def approvals_tab(request):
    organization = organization_from_request(request)
    if not has_org_permission(request.user, organization, APPROVALS_DECIDE):
        return redirect(RUN_HISTORY_URL)
    return render(request, "approvals/queue.html", queue_context(request, organization))


def _back_to(request) -> str | None:
    """Where a decision posted from the Activity tab or a chat card returns: a local path only."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return None


@login_required
@require_POST
def approval_decide_view(request, pk: int):
    organization = organization_from_request(request)
    approval = get_object_or_404(selectors.approvals_visible_to(request.user, organization), pk=pk)
    decision = request.POST.get("decision", "")
    try:
        services.approval_decide(
            actor=request.user,
            approval=approval,
            decision=decision,
            note=request.POST.get("note", ""),
        )
    except services.AlreadyDecided as exc:
        messages.error(request, str(exc))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        verb = "Approved" if decision == "approve" else "Rejected"
        messages.success(request, f"{verb} {approval.tool_name} on run #{approval.run_id}.")
    return redirect(_back_to(request) or "approvals:queue")
