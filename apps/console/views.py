"""The console shell: dashboard, org switcher, Settings → Organization, Members, API keys."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from apps.agents import selectors as agent_selectors
from apps.agents import services as agent_services
from apps.agents.models import Provider
from apps.approvals import selectors as approval_selectors
from apps.approvals.choices import ApprovalStatus
from apps.orgs import permissions as perms
from apps.orgs import selectors, services
from apps.orgs.access import organization_from_request
from apps.orgs.middleware import SESSION_KEY
from apps.runs import selectors as run_selectors
from apps.runs.filters import parse_run_history
from apps.spend.aggregates import (
    SpendScope,
    caps_approaching,
    daily_series,
    month_to_date,
    spend_by_agent,
    spend_by_provider,
    spend_totals,
)
from apps.spend.charts import daily_cost_svg, usage_card_charts
from apps.spend.filters import last_days
from apps.spend.usage_cards import usage_cards
from apps.vault.selectors import secrets_for

from .forms import ApiKeyForm, InviteForm, ModelProfileForm, OrganizationForm, RoleForm

_UNCHANGED = ...
DASHBOARD_DAYS = 30


def _error_text(error: ValidationError) -> str:
    return " ".join(error.messages)


def _errors_onto(form, error: ValidationError) -> None:
    """A service's refusal shown on the form: each message on its field, the rest above it."""
    for field, problems in error.message_dict.items():
        form.add_error(field if field in form.fields else None, problems)


@login_required
def dashboard(request):
    organization = organization_from_request(request)
    role = organization.role_of(request.user)
    context = {"organization": organization, "role": role, "spend": None}
    context.update(_attention(request.user, organization))
    # The cap card: the organization's month to date against its cap, and the last 30 days per
    # day — the same selectors as the Spend page. Spend is a runs:view read (seed 003): without
    # it the card is absent, not a question that comes back refused.
    if perms.has_org_permission(request.user, organization, perms.RUNS_VIEW):
        scope = SpendScope(organization=organization)
        window = last_days(DASHBOARD_DAYS)
        series = daily_series(scope, window)
        month = month_to_date(scope)
        by_agent = spend_by_agent(scope, window)
        context["spend"] = {
            "month": month,
            "approaching": caps_approaching(scope, month=month, by_agent=by_agent),
            "window": window,
            "chart": daily_cost_svg(
                series, width=480, height=120, title=f"Daily cost, last {DASHBOARD_DAYS} days (UTC)"
            ),
            "total": spend_totals(scope, window),
            "agents": by_agent[:8],
            "simulated": any(
                row["provider"] == "offline" for row in spend_by_provider(scope, window)
            ),
        }
        # The usage cards read the same window as the spend card above, and hand it to Activity
        # as period= (parsed there by the same last_days), so a card's count is its rows' count.
        usage = usage_cards(scope, window)
        total_runs = context["spend"]["total"]["run_count"]
        context.update(
            usage=usage,
            usage_charts=usage_card_charts(usage, total_runs=total_runs),
            usage_window=window,
            usage_days=DASHBOARD_DAYS,
            usage_period=f"{DASHBOARD_DAYS}d",
            usage_total_runs=total_runs,
        )
    return render(request, "console/dashboard.html", context)


# What a failed run is, for "needs attention": it ended without the answer it was asked for.
ATTENTION_STATUSES = ("failed", "budget_exceeded", "guardrail_blocked")


def _attention(user, organization) -> dict:
    """What needs someone: calls waiting for a decision (for those who decide) and the latest
    runs that ended badly — through the same selectors as the approvals queue and Activity."""
    waiting = None
    if perms.has_org_permission(user, organization, perms.APPROVALS_DECIDE):
        pending = approval_selectors.approvals_visible_to(user, organization).filter(
            status=ApprovalStatus.PENDING
        )
        waiting = {
            "count": pending.count(),
            "oldest_seconds": approval_selectors.oldest_pending_age_seconds(user, organization),
        }
    params = QueryDict(mutable=True)
    params.setlist("status", list(ATTENTION_STATUSES))
    failed = run_selectors.run_history(user, organization, parse_run_history(params))[:5]
    return {
        "waiting": waiting,
        "failed_runs": list(failed),
        "failed_link": "?" + params.urlencode(),
    }


@login_required
@require_POST
def switch_organization(request):
    organization = selectors.organization_for_user(
        request.user, request.POST.get("organization_id")
    )
    if organization is None:
        raise Http404
    request.session[SESSION_KEY] = organization.pk
    return redirect(request.POST.get("next") or "console:dashboard")


@login_required
def organization_settings(request):
    organization = organization_from_request(request)
    can_manage_budget = perms.has_org_permission(request.user, organization, perms.BUDGETS_MANAGE)
    can_rename = perms.has_org_permission(request.user, organization, perms.SETTINGS_MANAGE)
    # The waiver switch belongs to those who decide approvals (apps.orgs.services); others do not
    # see it at all.
    can_waive = perms.has_org_permission(request.user, organization, perms.APPROVALS_DECIDE)
    form = OrganizationForm(
        request.POST or None,
        initial={
            "name": organization.name,
            "monthly_budget_usd": organization.monthly_budget_usd,
            "chat_may_waive_approvals": organization.chat_may_waive_approvals,
            "allow_personal_memory": organization.allow_personal_memory,
        },
    )
    if not can_waive:
        del form.fields["chat_may_waive_approvals"]
    if not can_rename:
        # The personal-memory switch is an organization setting (settings:manage).
        del form.fields["allow_personal_memory"]
    if not can_manage_budget:
        form.fields["monthly_budget_usd"].disabled = True
    if not can_rename:
        form.fields["name"].disabled = True
    if request.method == "POST" and form.is_valid():
        try:
            services.organization_update(
                actor=request.user,
                organization=organization,
                name=form.cleaned_data["name"] if can_rename else None,
                monthly_budget_usd=form.cleaned_data["monthly_budget_usd"]
                if can_manage_budget
                else _UNCHANGED,
                chat_may_waive_approvals=form.cleaned_data["chat_may_waive_approvals"]
                if can_waive
                else None,
                allow_personal_memory=form.cleaned_data["allow_personal_memory"]
                if can_rename
                else None,
            )
        except PermissionDenied as denied:
            messages.error(request, f"Not saved: {denied}.")
        except ValidationError as error:
            messages.error(request, f"Not saved: {_error_text(error)}")
        else:
            messages.success(request, "Organization settings saved.")
            return redirect("console:organization-settings")
    return render(
        request,
        "console/settings_organization.html",
        {
            "form": form,
            "can_manage_budget": can_manage_budget,
            "can_rename": can_rename,
            "can_waive": can_waive,
            "organization": organization,
        },
    )


@login_required
def members(request):
    organization = organization_from_request(request)
    if not perms.has_org_permission(request.user, organization, perms.MEMBERS_MANAGE):
        raise PermissionDenied
    form = InviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            invitation, _token = services.invitation_create(
                actor=request.user, organization=organization, **form.cleaned_data
            )
        except (ValidationError, PermissionDenied) as error:
            messages.error(
                request, _error_text(error) if isinstance(error, ValidationError) else str(error)
            )
        else:
            # The same sentence whether the address has an account or not.
            messages.success(
                request,
                services.INVITED_SENTENCE.format(
                    email=invitation.email,
                    role=invitation.get_role_display(),
                    days=settings.INVITATION_EXPIRY_DAYS,
                ),
            )
            return redirect("console:members")
    return render(
        request,
        "console/settings_members.html",
        {
            "form": form,
            "memberships": selectors.memberships_for(organization),
            "invitations": selectors.open_invitations_for(organization),
            "role_form": RoleForm(),
        },
    )


@login_required
@require_POST
def invitation_revoke(request, invitation_id: int):
    organization = organization_from_request(request, perms.MEMBERS_MANAGE)
    invitation = get_object_or_404(selectors.invitations_for(organization), pk=invitation_id)
    try:
        services.invitation_revoke(actor=request.user, invitation=invitation)
        messages.success(request, f"The invitation to {invitation.email} was withdrawn.")
    except services.InvitationClosed as closed:
        messages.error(request, str(closed))
    return redirect("console:members")


@login_required
@require_POST
def member_change_role(request, membership_id: int):
    organization = organization_from_request(request)
    membership = get_object_or_404(selectors.memberships_for(organization), pk=membership_id)
    form = RoleForm(request.POST)
    if form.is_valid():
        try:
            services.membership_change_role(
                actor=request.user, membership=membership, role=form.cleaned_data["role"]
            )
            messages.success(
                request, f"{membership.user.email} is now {membership.get_role_display()}."
            )
        except ValidationError as error:
            messages.error(request, _error_text(error))
    return redirect("console:members")


@login_required
@require_POST
def member_remove(request, membership_id: int):
    organization = organization_from_request(request)
    membership = get_object_or_404(selectors.memberships_for(organization), pk=membership_id)
    if membership.user_id == request.user.pk:
        # Removing oneself from the members page is a slip, not a way out of an organization.
        messages.error(request, "You cannot remove yourself; another owner or admin can.")
        return redirect("console:members")
    try:
        services.membership_remove(actor=request.user, membership=membership)
        messages.success(request, f"{membership.user.email} was removed.")
    except ValidationError as error:
        messages.error(request, _error_text(error))
    return redirect("console:members")


@login_required
def api_keys(request):
    organization = organization_from_request(request)
    form = ApiKeyForm(request.POST or None)
    new_key = None
    if request.method == "POST" and form.is_valid():
        try:
            _, new_key = services.api_key_create(
                actor=request.user,
                organization=organization,
                user=request.user,
                name=form.cleaned_data["name"],
                expires_at=form.expires_at(),
            )
        except ValidationError as error:
            form.add_error("expires_on", _error_text(error))
        else:
            form = ApiKeyForm()
    return render(
        request,
        "console/settings_api_keys.html",
        {
            "form": form,
            "new_key": new_key,
            "keys": selectors.api_keys_visible_to(request.user, organization),
        },
    )


@login_required
@require_POST
def api_key_revoke(request, key_id: int):
    organization = organization_from_request(request)
    api_key = get_object_or_404(
        selectors.api_keys_visible_to(request.user, organization), pk=key_id
    )
    services.api_key_revoke(actor=request.user, api_key=api_key)
    messages.success(request, f"Key {api_key.prefix}… revoked.")
    return redirect("console:api-keys")


@login_required
def model_profiles(request):
    """Settings → Model profiles: the models this organization's agents may use, managed here
    and not only in the admin (the same services as ``/api/v1/model-profiles/``)."""
    organization = organization_from_request(request)
    if not perms.has_org_permission(request.user, organization, perms.SETTINGS_MANAGE):
        raise PermissionDenied
    form = ModelProfileForm(
        request.POST or None,
        providers=Provider.choices,
        secrets=list(secrets_for(organization).values("id", "name", "purpose")),
    )
    if request.method == "POST" and form.is_valid():
        try:
            profile = agent_services.model_profile_create(
                actor=request.user, organization=organization, **form.cleaned_data
            )
        except ValidationError as error:
            _errors_onto(form, error)
        else:
            messages.success(request, f"Model profile {profile.label} added.")
            return redirect("console:model-profiles")
    return render(
        request,
        "console/settings_model_profiles.html",
        {"form": form, "profiles": agent_selectors.model_profiles_for(organization)},
    )


@login_required
@require_POST
def model_profile_make_default(request, profile_id: int):
    organization = organization_from_request(request)
    profile = get_object_or_404(agent_selectors.model_profiles_for(organization), pk=profile_id)
    agent_services.model_profile_update(actor=request.user, profile=profile, is_default=True)
    messages.success(request, f"{profile.label} is now the default model.")
    return redirect("console:model-profiles")


@login_required
def model_profile_edit(request, profile_id: int):
    """Change a model profile (label, model, server, key, context window) with the API's service."""
    organization = organization_from_request(request)
    if not perms.has_org_permission(request.user, organization, perms.SETTINGS_MANAGE):
        raise PermissionDenied
    profile = get_object_or_404(agent_selectors.model_profiles_for(organization), pk=profile_id)
    form = ModelProfileForm(
        request.POST or None,
        initial={
            "label": profile.label,
            "provider": profile.provider,
            "model_name": profile.model_name,
            "base_url": profile.base_url,
            "secret_id": profile.secret_id,
            "context_window": profile.context_window,
            "is_default": profile.is_default,
        },
        providers=Provider.choices,
        secrets=list(secrets_for(organization).values("id", "name", "purpose")),
    )
    if request.method == "POST" and form.is_valid():
        changes = dict(form.cleaned_data)
        if not changes["is_default"]:
            changes.pop("is_default")  # "default" moves to another profile by choosing that one
        try:
            agent_services.model_profile_update(actor=request.user, profile=profile, **changes)
        except ValidationError as error:
            _errors_onto(form, error)
        else:
            messages.success(request, f"Model profile {changes['label']} saved.")
            return redirect("console:model-profiles")
    return render(
        request, "console/settings_model_profile_edit.html", {"form": form, "profile": profile}
    )
