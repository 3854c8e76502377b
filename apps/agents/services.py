"""Every write to agents, versions, grants and model profiles.

Each function names its actor (``None`` only for an operator's shell command or the organization
setup hook) and is audited in the same transaction: publish, archive and grant changes always;
creation too, so an agent's history starts somewhere.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from guardian.shortcuts import assign_perm, remove_perm

from apps.audit.services import record_audit
from apps.orgs import permissions as perms
from apps.orgs.permissions import has_org_permission
from apps.outbound.addresses import field_error as outbound_field_error

from .models import Agent, AgentStatus, AgentVersion, ModelProfile
from .selectors import ACTIONS, can
from .spec import AgentSpec
from .template import TEMPLATE_AGENT_DESCRIPTION, TEMPLATE_AGENT_NAME, new_agent_spec
from .validation import PublishError, normalized_spec, parse_spec, pin_delegates, validate_spec


class PublishRefused(ValidationError):
    """Publish validation failed; ``errors`` lists each refused thing by binding and field."""

    def __init__(self, errors: list[PublishError]):
        self.errors = errors
        super().__init__([str(e) for e in errors])


def _require_org(actor, organization, permission: str) -> None:
    if actor is not None and not has_org_permission(actor, organization, permission):
        raise PermissionDenied(f"{permission} is required")


def _require_agent(actor, agent: Agent, action: str) -> None:
    if actor is not None and not can(actor, agent, action):
        raise PermissionDenied(f"{ACTIONS[action][0]} is required on {agent.name}")


def _structural(spec: Any) -> AgentSpec:
    parsed, errors = parse_spec(spec)
    if parsed is None:
        raise ValidationError({"spec": [str(e) for e in errors]})
    return parsed


@transaction.atomic
def agent_create(
    *,
    actor,
    organization,
    name: str,
    description: str = "",
    spec: Any = None,
    is_template: bool = False,
    owner=None,
) -> Agent:
    """Create an agent with a draft; no ``spec`` means New agent: the AgenticOS template's.

    The creator (or ``owner`` for the setup hook) receives every object grant on the new agent,
    so the person who made it keeps it even if their role later narrows.
    """
    _require_org(actor, organization, perms.AGENTS_EDIT)
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": ["an agent needs a name"]})
    draft = _structural(new_agent_spec() if spec is None else spec)
    agent = Agent.objects.create(
        organization=organization,
        name=name,
        description=description or "",
        draft_spec=draft.model_dump(mode="json"),
        is_template=is_template,
        created_by=actor or owner,
    )
    creator = actor or owner
    if creator is not None:
        for _, codename in ACTIONS.values():
            assign_perm(f"agents.{codename}", creator, agent)
    record_audit(
        actor=actor,
        organization=organization,
        action="agent.create" if actor else "agent.create.system",
        subject=agent,
        details={"name": name, "is_template": is_template, "from_template": spec is None},
    )
    return agent


@transaction.atomic
def agent_update_draft(
    *,
    actor,
    agent: Agent,
    name: str | None = None,
    description: str | None = None,
    spec: Any = None,
) -> Agent:
    """Change the draft (and name/description). Only structure is checked here; the publish
    rules run at publish, so a half-finished draft can be saved."""
    agent = Agent.objects.select_for_update().get(pk=agent.pk)
    _require_agent(actor, agent, "edit")
    if agent.status == AgentStatus.ARCHIVED:
        raise ValidationError({"status": ["an archived agent cannot be edited"]})
    fields = []
    if name is not None:
        if not name.strip():
            raise ValidationError({"name": ["an agent needs a name"]})
        agent.name = name.strip()
        fields.append("name")
    if description is not None:
        agent.description = description
        fields.append("description")
    if spec is not None:
        agent.draft_spec = _structural(spec).model_dump(mode="json")
        fields.append("draft_spec")
    if fields:
        agent.save(update_fields=[*fields, "updated_at"])
    return agent


@transaction.atomic
def specialist_promote(
    *, actor, organization, name: str, description: str, instructions: str, model: str = ""
) -> Agent:
    """A specialist kept as a draft agent (seed 000: promotion stops at the draft). ``model`` is a
    model profile's label or id in this organization; unknown, the draft uses the default."""
    if not instructions.strip():
        raise ValidationError({"instructions": ["a specialist needs its instructions"]})
    profiles = ModelProfile.objects.filter(organization=organization)
    profile = profiles.filter(label=model).first() if model else None
    if profile is None and str(model).isdigit():
        profile = profiles.filter(pk=int(model)).first()
    spec = {
        "instructions": instructions[:20000],
        "model_profile_id": profile.pk if profile else None,
    }
    agent = agent_create(
        actor=actor,
        organization=organization,
        name=(name or "Specialist")[:120],
        description=(description or "")[:500],
        spec=spec,
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="agent.promote_specialist",
        subject=agent,
        details={"name": agent.name, "model_profile_id": spec["model_profile_id"]},
    )
    return agent


@transaction.atomic
def agent_pin_move(*, actor, agent: Agent, delegate_agent_id: int) -> Agent:
    """Move the draft's pin of one delegate to the version it publishes now (the Builder's offer
    when a pin is behind). Only the draft changes: publishing is still what callers will run."""
    agent = Agent.objects.select_for_update().get(pk=agent.pk)
    _require_agent(actor, agent, "edit")
    if agent.status == AgentStatus.ARCHIVED:
        raise ValidationError({"status": ["an archived agent cannot be edited"]})
    spec = AgentSpec.model_validate(agent.draft_spec)
    pin = next((p for p in spec.subagents if p.agent_id == delegate_agent_id), None)
    target = (
        Agent.objects.filter(pk=delegate_agent_id, organization=agent.organization)
        .select_related("current_version")
        .first()
    )
    if pin is None or target is None or target.current_version is None:
        raise ValidationError(
            {"delegate": ["this agent does not pin a published delegate by that id"]}
        )
    before = pin.version
    pin.version = target.current_version.number
    agent.draft_spec = spec.model_dump(mode="json")
    agent.save(update_fields=["draft_spec", "updated_at"])
    record_audit(
        actor=actor,
        organization=agent.organization,
        action="agent.pin_move",
        subject=agent,
        details={"delegate_agent_id": delegate_agent_id, "from": before, "to": pin.version},
    )
    return agent


@transaction.atomic
def agent_publish(*, actor, agent: Agent, note: str = "") -> AgentVersion:
    """Freeze the draft as the next version, or raise :class:`PublishRefused` naming each error."""
    agent = Agent.objects.select_for_update().get(pk=agent.pk)
    _require_agent(actor, agent, "publish")
    if agent.status == AgentStatus.ARCHIVED:
        raise ValidationError({"status": ["an archived agent cannot be published"]})
    errors = validate_spec(
        agent.draft_spec, organization=agent.organization, actor=actor, agent=agent
    )
    if errors:
        raise PublishRefused(errors)
    spec = pin_delegates(
        normalized_spec(AgentSpec.model_validate(agent.draft_spec)), agent.organization
    )
    last = (
        AgentVersion.objects.filter(agent=agent)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    version = AgentVersion.objects.create(
        agent=agent, number=(last or 0) + 1, spec=spec, published_by=actor, note=note or ""
    )
    agent.current_version = version
    # The draft takes the stored spelling too, so the Builder shows what was frozen.
    agent.draft_spec = spec
    agent.save(update_fields=["current_version", "draft_spec", "updated_at"])
    details: dict[str, Any] = {
        "version": version.number,
        "capabilities": [b["id"] for b in spec["capabilities"] if b.get("enabled", True)],
        "budget_monthly_usd": spec["budget"]["monthly_usd"],
    }
    sandbox = next(
        (b for b in spec["capabilities"] if b["id"] == "sandbox" and b.get("enabled", True)), None
    )
    if sandbox and sandbox["config"].get("session_scope") == "agent":
        # Seed 000: the agent scope crosses a boundary between people, so setting it is audited —
        # a person who sees a file they did not create should be able to find out why.
        details["sandbox_session_scope"] = "agent"
    record_audit(
        actor=actor,
        organization=agent.organization,
        action="agent.publish" if actor else "agent.publish.system",
        subject=agent,
        details=details,
    )
    return version


@transaction.atomic
def agent_archive(*, actor, agent: Agent) -> Agent:
    """Archive: a state, not a delete — runs, ledger entries and audit rows keep pointing here."""
    updated = Agent.objects.filter(pk=agent.pk, status=AgentStatus.ACTIVE)
    agent = Agent.objects.select_for_update().get(pk=agent.pk)
    _require_agent(actor, agent, "edit")
    if not updated.update(status=AgentStatus.ARCHIVED):
        raise ValidationError({"status": ["the agent is already archived"]})
    agent.refresh_from_db()
    record_audit(
        actor=actor,
        organization=agent.organization,
        action="agent.archive",
        subject=agent,
        details={},
    )
    return agent


def _grant_target(agent: Agent, user, actions: list[str]) -> None:
    unknown = [a for a in actions if a not in ACTIONS]
    if unknown:
        raise ValidationError(
            {"actions": [f"unknown action(s) {', '.join(unknown)}; use {', '.join(ACTIONS)}"]}
        )
    if agent.organization.role_of(user) is None:
        raise ValidationError(
            {"user": [f"{user.email} is not a member of {agent.organization.name}"]}
        )


@transaction.atomic
def agent_grant(*, actor, agent: Agent, user, actions: list[str]) -> None:
    """Give ``user`` object grants on one agent. The actor may only grant what they hold."""
    _require_agent(actor, agent, "edit")
    _grant_target(agent, user, actions)
    for action in actions:
        _require_agent(actor, agent, action)
        assign_perm(f"agents.{ACTIONS[action][1]}", user, agent)
    record_audit(
        actor=actor,
        organization=agent.organization,
        action="agent.grant",
        subject=agent,
        details={"user_id": user.pk, "email": user.email, "actions": sorted(actions)},
    )


@transaction.atomic
def agent_revoke(*, actor, agent: Agent, user, actions: list[str]) -> None:
    _require_agent(actor, agent, "edit")
    _grant_target(agent, user, actions)
    for action in actions:
        remove_perm(f"agents.{ACTIONS[action][1]}", user, agent)
    record_audit(
        actor=actor,
        organization=agent.organization,
        action="agent.revoke",
        subject=agent,
        details={"user_id": user.pk, "email": user.email, "actions": sorted(actions)},
    )


# --- model profiles ----------------------------------------------------------------------


def _profile_secret(organization, secret_id):
    from apps.vault.selectors import secrets_for

    if secret_id is None:
        return None
    secret = secrets_for(organization).filter(pk=secret_id).first()
    if secret is None:
        raise ValidationError(
            {"secret_id": [f"there is no secret {secret_id} in this organization's vault"]}
        )
    return secret


def _check_base_url(base_url) -> None:
    """A profile's server passes the outbound check when it is saved (a 422 naming base_url), and
    again on every request a run makes to it (apps/runs/modelbuilder.py): the vault key goes
    with each request, so it must never be sent to the cloud's metadata service or an internal
    address the operator did not list in OUTBOUND_ALLOW."""
    if base_url:
        sentence = outbound_field_error(str(base_url))
        if sentence is not None:
            raise ValidationError({"base_url": [sentence]})


@transaction.atomic
def model_profile_create(
    *,
    actor,
    organization,
    label: str,
    provider: str,
    model_name: str,
    base_url: str = "",
    secret_id: int | None = None,
    context_window: int | None = None,
    request_timeout_seconds: int | None = None,
    is_default: bool = False,
) -> ModelProfile:
    _require_org(actor, organization, perms.SETTINGS_MANAGE)
    if provider == "openai_compatible" and not base_url:
        raise ValidationError({"base_url": ["an OpenAI-compatible server needs its base_url"]})
    _check_base_url(base_url)
    if is_default:
        ModelProfile.objects.filter(organization=organization, is_default=True).update(
            is_default=False
        )
    profile = ModelProfile.objects.create(
        organization=organization,
        label=label,
        provider=provider,
        model_name=model_name,
        base_url=base_url or "",
        secret=_profile_secret(organization, secret_id),
        context_window=context_window,
        # Unset: the model's default bound (two minutes).
        **(
            {"request_timeout_seconds": request_timeout_seconds}
            if request_timeout_seconds is not None
            else {}
        ),
        is_default=is_default,
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="model_profile.create",
        subject=profile,
        details={
            "label": label,
            "provider": provider,
            "model_name": model_name,
            "is_default": is_default,
        },
    )
    return profile


@transaction.atomic
def model_profile_update(*, actor, profile: ModelProfile, **changes) -> ModelProfile:
    _require_org(actor, profile.organization, perms.SETTINGS_MANAGE)
    profile = ModelProfile.objects.select_for_update().get(pk=profile.pk)
    saved_base_url = profile.base_url
    fields = []
    if changes.get("request_timeout_seconds") is not None:
        profile.request_timeout_seconds = changes["request_timeout_seconds"]
        fields.append("request_timeout_seconds")
    for key in ("label", "provider", "model_name", "base_url", "context_window"):
        if key in changes:
            setattr(
                profile,
                key,
                changes[key] if changes[key] is not None or key == "context_window" else "",
            )
            fields.append(key)
    if "secret_id" in changes:
        profile.secret = _profile_secret(profile.organization, changes["secret_id"])
        fields.append("secret")
    if changes.get("is_default") and not profile.is_default:
        ModelProfile.objects.filter(organization=profile.organization, is_default=True).update(
            is_default=False
        )
        profile.is_default = True
        fields.append("is_default")
    if profile.provider == "openai_compatible" and not profile.base_url:
        raise ValidationError({"base_url": ["an OpenAI-compatible server needs its base_url"]})
    if profile.base_url != saved_base_url:
        # Only a changed server is checked here (renaming a profile whose server is down is
        # fine); every run checks it again when it dials.
        _check_base_url(profile.base_url)
    if fields:
        profile.save(update_fields=fields)
        record_audit(
            actor=actor,
            organization=profile.organization,
            action="model_profile.update",
            subject=profile,
            details={"fields": fields},
        )
    return profile


@transaction.atomic
def ensure_template_agent(*, organization, owner):
    """Give ``organization`` its AgenticOS template agent, published as version 1. Idempotent.

    Registered with ``apps.orgs.services.on_organization_setup``: runs when an organization is
    created and again at every bootstrap, so an organization that already has its template (or
    archived it) is left alone.
    """
    existing = (
        Agent.objects.select_for_update()
        .filter(organization=organization, is_template=True)
        .first()
    )
    if existing is not None:
        return existing
    agent = agent_create(
        actor=None,
        organization=organization,
        name=TEMPLATE_AGENT_NAME,
        description=TEMPLATE_AGENT_DESCRIPTION,
        spec=new_agent_spec(),
        is_template=True,
        owner=owner,
    )
    agent_publish(actor=None, agent=agent, note="Installed with the organization")
    agent.refresh_from_db()
    return agent
