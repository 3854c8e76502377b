"""Resolving an agent's delegates before the run (the one place delegation reads the database
before the first request): pins, versions, model profiles, keys, down the tree."""

from __future__ import annotations

import logging

from apps.agents.models import Agent, AgentStatus, AgentVersion
from apps.agents.selectors import model_profiles_for
from apps.capabilities.run_context import RunResources
from apps.capabilities.tools import planning
from apps.capabilities.tools._toolsets import parsed_config
from apps.knowledge.selectors import skills_for_run
from apps.memory.selectors import context_files_for_run
from apps.vault.models import Secret
from apps.vault.services import secret_reveal

from ..modelbuilder import ModelHandle, ModelUnavailable, build_model, model_profile_for
from .types import CAPABILITY_ID, Delegate, DelegateNotRunnable, DelegationRuntime, DelegationScope

logger = logging.getLogger(__name__)


def _mode_for(pin_mode: str | None, binding_mode: str) -> str:
    return pin_mode or binding_mode


def _resources_for(spec, bindings, organization_id: int) -> RunResources:
    bound = {binding.id for binding in bindings}
    resources = RunResources()
    if "planning" in bound:
        # A delegate's plan is its own and lives for the delegation only (it has no conversation).
        resources.plan = planning.seed_plan(stored=None, parked=None)
    return resources


def _context_files(spec, bindings, organization) -> list:
    if not any(binding.id == "context" for binding in bindings):
        return []

    return list(context_files_for_run(organization.pk, spec.context_ids))


def _skills(spec, bindings, organization) -> list:
    if not any(binding.id == "skills" for binding in bindings):
        return []

    return skills_for_run(organization.pk, spec.skill_ids)


def _secrets_for(bindings, organization, who: str) -> dict[str, str | None]:
    secrets: dict[str, str | None] = {}
    for binding in bindings:
        if binding.secret_id is None:
            continue
        secret = Secret.objects.filter(organization=organization, pk=binding.secret_id).first()
        if secret is None:
            raise DelegateNotRunnable(
                f"The key of the {binding.id} capability of the delegate {who} is no longer in the vault."
            )
        secrets[binding.id] = secret_reveal(secret)
    return secrets


def _shared_bindings(parent_bindings, config, own_ids: set[str]) -> list:
    # A delegate runs with its own spec plus exactly what share_with_delegates names, id by id;
    # subagents never (a stored spec from before that rule cannot widen a delegate either).
    shared = [cap for cap in config.share_with_delegates if cap != CAPABILITY_ID]
    return [b for b in parent_bindings if b.id in shared and b.id not in own_ids]


def resolve_scope(
    *,
    organization,
    spec,
    bindings,
    handle: ModelHandle,
    agent_id: int,
    levels_left: int | None = None,
) -> DelegationScope | None:
    """The delegates of one agent of the tree, resolved now; None when it delegates to nobody.

    ``levels_left`` is what the tree above leaves this agent (None for the run's own agent); the
    agent gets the smaller of that and its own ``max_depth`` — a cap a caller could widen would
    not be a cap, and pinning a delegate exists so its author's decisions hold when another agent
    calls it. At the limit the delegate is built without delegation at all."""

    binding = next((b for b in bindings if b.id == CAPABILITY_ID), None)
    if binding is None:
        return None
    config = parsed_config(CAPABILITY_ID, binding)
    levels = config.max_depth if levels_left is None else min(levels_left, config.max_depth)
    if levels < 1:
        return None
    delegates: dict[str, Delegate] = {}
    for pin in spec.subagents:
        target = Agent.objects.filter(pk=pin.agent_id, organization=organization).first()
        if target is None:
            raise DelegateNotRunnable(f"The delegate agent {pin.agent_id} no longer exists.")
        if target.status == AgentStatus.ARCHIVED:
            raise DelegateNotRunnable(f"The delegate {target.name} is archived.")
        if pin.version is None:
            version = target.current_version
        else:
            version = AgentVersion.objects.filter(agent=target, number=pin.version).first()
        if version is None:
            raise DelegateNotRunnable(
                f"The delegate {target.name} has no version {pin.version or '(none published)'}."
            )
        own = version.frozen_spec
        own_bindings = own.enabled_bindings()
        own_ids = {b.id for b in own_bindings}
        all_bindings = own_bindings + _shared_bindings(bindings, config, own_ids)
        try:
            own_handle = build_model(model_profile_for(organization, own.model_profile_id))
        except ModelUnavailable as exc:
            raise DelegateNotRunnable(f"The delegate {target.name}: {exc.sentence}") from exc
        name = _delegate_name(target.name, delegates)
        delegates[name] = Delegate(
            name=name,
            description=(own.instructions or target.name).strip().splitlines()[0][:300],
            mode=_mode_for(pin.mode, config.mode),
            published=True,
            handle=own_handle,
            instructions=own.instructions,
            bindings=all_bindings,
            secrets=_secrets_for(all_bindings, organization, target.name),
            max_steps=own.limits.max_steps,
            gate_spec=own,
            agent_id=target.pk,
            agent_version_id=version.pk,
            context_files=_context_files(own, all_bindings, organization),
            skills=_skills(own, all_bindings, organization),
            scope=resolve_scope(
                organization=organization,
                spec=own,
                bindings=all_bindings,
                handle=own_handle,
                agent_id=target.pk,
                levels_left=levels - 1,
            ),
        )
    for specialist in config.inline:
        if specialist.model_profile_id:
            try:
                profile = model_profile_for(organization, int(specialist.model_profile_id))
                specialist_handle = build_model(profile)
            except (ModelUnavailable, ValueError) as exc:
                raise DelegateNotRunnable(
                    f"The specialist {specialist.name} has no usable model profile."
                ) from exc
        else:
            specialist_handle = handle
        shared = _shared_bindings(bindings, config, set())
        delegates[specialist.name] = Delegate(
            name=specialist.name,
            description=specialist.description,
            mode=_mode_for(specialist.mode, config.mode),
            published=False,
            handle=specialist_handle,
            instructions=specialist.instructions,
            bindings=shared,
            secrets=_secrets_for(shared, organization, specialist.name),
            max_steps=spec.limits.max_steps,
            gate_spec=spec,
            agent_id=agent_id,
            definition={
                "name": specialist.name,
                "description": specialist.description,
                "instructions": specialist.instructions,
                "model_profile_id": specialist.model_profile_id,
            },
        )
    if not delegates and not config.allow_dynamic:
        # Bound without a delegate, the capability contributes nothing (seed 000).
        return None
    return DelegationScope(
        config=config,
        delegates=delegates,
        levels=levels,
        dynamic_models=_dynamic_models(organization) if config.allow_dynamic else {},
        owner_agent_id=agent_id,
        owner_spec=spec,
        owner_max_steps=spec.limits.max_steps,
    )


def _dynamic_models(organization) -> dict[str, ModelHandle]:
    """The organization's model profiles a written specialist may name, by label: each built now
    (its key decrypted here, before the run), so a specialist is priced, capped and keyed like
    everything else; a profile that cannot be built (no key) is left out of the list."""

    models: dict[str, ModelHandle] = {}
    for profile in model_profiles_for(organization).order_by("label"):
        try:
            models[profile.label] = build_model(profile)
        except ModelUnavailable:
            continue
    if not models:
        # An organization with no profile runs on the offline default; so may its specialists.
        default = model_profile_for(organization, None)
        models[default.label] = build_model(default)
    return models


def _delegate_name(agent_name: str, taken: dict) -> str:
    base = "".join(c if c.isalnum() else "-" for c in agent_name.lower()).strip("-") or "delegate"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def attach_runtime(scope: DelegationScope | None, runtime: DelegationRuntime) -> None:
    if scope is None:
        return
    scope.runtime = runtime
    for delegate in scope.delegates.values():
        attach_runtime(delegate.scope, runtime)


# --- building one delegation's agent (pure: no database) -----------------------------------------
