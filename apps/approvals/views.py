"""The console's Approvals tab of Activity: the queue with Approve / Reject and a note, oldest
first, and the decided log with no controls on resolved rows.

Served at ``/approvals/`` by this app (the Activity page itself is another app's; it links here
for ``?tab=approvals``). Someone without approvals:decide is sent to the run history instead of
meeting a tab that is not there (seed 003, "La alerta de aprobación son dos correos").
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.orgs.permissions import APPROVALS_DECIDE, has_org_permission

from . import selectors, services
from .choices import ApprovalStatus

RUN_HISTORY_URL = "/activity/"
LOG_STATUSES = (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED)


def _organization(request):
    if request.organization is None:
        raise Http404("You are not a member of any organization yet.")
    return request.organization


def _age_text(seconds: int | None) -> str:
    if seconds is None:
        return ""
    hours, minutes = divmod(seconds // 60, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


@login_required
def approvals_tab(request):
    organization = _organization(request)
    if not has_org_permission(request.user, organization, APPROVALS_DECIDE):
        return redirect(RUN_HISTORY_URL)
    visible = selectors.approvals_visible_to(request.user, organization)
    pending = selectors.ApprovalFilters().apply(visible)[:200]
    decided = visible.filter(status__in=LOG_STATUSES).order_by("-decided_at", "-pk")[:100]
    return render(
        request,
        "approvals/queue.html",
        {
            "organization": organization,
            "pending": [selectors.approval_row(a) for a in pending],
            "decided": [selectors.approval_row(a) | {"run_status": a.run.status} for a in decided],
            "oldest_age_text": _age_text(
                selectors.oldest_pending_age_seconds(request.user, organization)
            ),
        },
    )


@login_required
@require_POST
def approval_decide_view(request, pk: int):
    organization = _organization(request)
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
    return redirect("approvals:queue")
