"""Publish validation: every rule the seeds state about a spec, each error naming binding and field.

``validate_spec`` runs when a draft is published, when ``agenticos spec validate`` reads a file,
and again — through ``assert_runnable`` — when a run assembles a frozen version. The second run
is the point: a version published before a rule existed, or whose world changed since (a secret
deleted, a sandbox connection removed, a scope revoked deployment-wide), is refused with the
message that says what to change, instead of failing in the middle of a conversation.

Rules split in two kinds:

- *Static* rules read only the spec and the registry (config against its schema, tool ids, names
  a model could call, approval on provider-executed tools, ``channel_tools``). They apply to every
  binding, enabled or not: a disabled binding keeps its configuration for the day it is switched
  back on, and that configuration is frozen with the version.
- *Environmental* rules read the organization (keys in the vault, granted scopes, sandbox
  connections, delegates, model profile). They apply to enabled bindings only.

Each error is a :class:`PublishError` whose ``binding`` is the capability id (``None`` for a
spec-level field) and whose ``field`` is a dotted path inside the binding (``config.method``,
``tool_approval.web_search``, ``secret_id``) or the spec (``delegates[0].agent_id``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from pydantic import ValidationError as PydanticValidationError

from apps.capabilities.approval import gated_provider_executed_tools
from apps.capabilities.registry import (
    MODEL_CALLABLE_TOOL_NAME_RE,
    REGISTRY,
    Capability,
    get_capability,
)
from apps.capabilities.tool_view import seen_name

from .spec import AgentSpec, CapabilityBinding

if TYPE_CHECKING:
    from apps.capabilities.catalog.analysis import SandboxConfig

# Seed 000 ("Consulta del canal de chat"): granted per chat binding, never by a spec.
SPEC_FORBIDDEN_CAPABILITIES = {
    "channel_tools": (
        "channel_tools cannot be bound in an agent's spec: it is granted per chat binding, under "
        "Where this agent is available, because each connected workspace answers "
        "'may it read this channel?' differently. Remove it from capabilities."
    ),
}

# Seed 000 (Coding agent): which vault purposes each harness accepts. "other" is a custom key and
# fits both; with a base_url (a gateway speaking the Anthropic API) Claude Code accepts any key.
HARNESS_SECRET_PURPOSES = {
    "claude_code": ("anthropic", "other"),
    "codex": ("openai", "other"),
}
# A chat platform's token is never a capability's key.
NEVER_A_CAPABILITY_KEY = ("channel",)


@dataclass(frozen=True)
class PublishError:
    """One refused thing: which binding, which field, and what to change."""

    binding: str | None
    field: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.binding}: {self.field}" if self.binding else self.field
        return f"{where} — {self.message}"


class SpecNotRunnable(Exception):
    """A frozen version fails today's publish rules; the message says what to change."""

    def __init__(self, version, errors: list[PublishError]):
        self.version = version
        self.errors = errors
        lines = "\n".join(f"- {e}" for e in errors)
        super().__init__(
            f"{version.agent.name} v{version.number} cannot run until it is republished with "
            f"these changes:\n{lines}"
        )


# --- helpers -------------------------------------------------------------------------------


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _pydantic_errors(
    exc: PydanticValidationError, *, binding: str | None, prefix: str
) -> list[PublishError]:
    errors = []
    for err in exc.errors():
        loc = _loc(tuple(err.get("loc", ())))
        msg = err.get("msg", "invalid")
        msg = msg.removeprefix("Value error, ")
        field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or "spec")
        errors.append(PublishError(binding, field, msg))
    return errors


def parse_spec(data: Any) -> tuple[AgentSpec | None, list[PublishError]]:
    """The structural half: ``data`` as an :class:`AgentSpec`, or errors naming binding and field."""
    if isinstance(data, AgentSpec):
        return data, []
    try:
        return AgentSpec.model_validate(data or {}), []
    except PydanticValidationError as exc:
        errors = []
        raw_caps = data.get("capabilities") if isinstance(data, dict) else None
        for err in exc.errors():
            loc = tuple(err.get("loc", ()))
            msg = err.get("msg", "invalid").removeprefix("Value error, ")
            binding = None
            field = _loc(loc) or "spec"
            if len(loc) >= 2 and loc[0] == "capabilities" and isinstance(loc[1], int):
                entry = (
                    raw_caps[loc[1]]
                    if isinstance(raw_caps, list) and loc[1] < len(raw_caps)
                    else None
                )
                binding = (
                    entry.get("id")
                    if isinstance(entry, dict) and isinstance(entry.get("id"), str)
                    else f"capabilities[{loc[1]}]"
                )
                field = _loc(loc[2:]) or "id"
            errors.append(PublishError(binding, field, msg))
        return None, errors


def _capability(binding_id: str) -> Capability | None:
    try:
        return get_capability(binding_id)
    except KeyError:
        return None


def _bound_ids(spec: AgentSpec, *, enabled_only: bool) -> set[str]:
    bindings = spec.enabled_bindings() if enabled_only else spec.capabilities
    return {b.id for b in bindings}


# --- static rules --------------------------------------------------------------------------


def _check_binding_static(
    binding: CapabilityBinding, cap: Capability, errors: list[PublishError]
) -> Any:
    """Config, tool ids, visible names, approval on provider-executed tools. Returns parsed config."""
    b = binding.id
    parsed = None
    try:
        parsed = cap.parse_config(binding.config)
    except PydanticValidationError as exc:
        errors.extend(_pydantic_errors(exc, binding=b, prefix="config"))

    for kind in ("tool_approval", "tool_overrides"):
        for tool_id in getattr(binding, kind):
            if tool_id in cap.tool_ids:
                continue
            try:
                owner = REGISTRY.tool_owner(tool_id).id
                hint = f"it is a tool of {owner}, not of {cap.id}"
            except KeyError:
                hint = "no capability exposes a tool with that id"
            declared = ", ".join(cap.tool_ids) or "none"
            errors.append(
                PublishError(
                    b,
                    f"{kind}.{tool_id}",
                    f"{tool_id!r} is not a tool id of {cap.id} ({hint}; its tools: {declared}). "
                    "Tools are referenced by their stable id, never by a renamed name.",
                )
            )

    for tool_id, override in binding.tool_overrides.items():
        if override.name is not None and not MODEL_CALLABLE_TOOL_NAME_RE.match(override.name):
            errors.append(
                PublishError(
                    b,
                    f"tool_overrides.{tool_id}.name",
                    f"{override.name!r} is a name no model could call: use 1–64 letters, digits, "
                    "_ or -, without spaces.",
                )
            )
        if override.description is not None and not override.description.strip():
            errors.append(
                PublishError(
                    b,
                    f"tool_overrides.{tool_id}.description",
                    "an empty description tells the model nothing; write one or remove the override",
                )
            )

    if parsed is not None and not any(
        e.binding == b and e.field.startswith("tool_approval.") for e in errors
    ):
        for tool_id in gated_provider_executed_tools(
            cap, parsed, binding.approval, binding.tool_approval
        ):
            method = getattr(parsed, "method", None)
            field = f"tool_approval.{tool_id}" if tool_id in binding.tool_approval else "approval"
            errors.append(
                PublishError(
                    b,
                    field,
                    f"{tool_id} requires approval, but with method {method!r} the model's provider "
                    "runs it, where no approval gate can hold the call. Choose a method this "
                    "deployment runs (e.g. local / duckduckgo), or remove the approval requirement.",
                )
            )
    return parsed


def _check_visible_name_collisions(spec: AgentSpec, errors: list[PublishError]) -> None:
    seen: dict[str, tuple[str, str]] = {}
    for binding in spec.capabilities:
        cap = _capability(binding.id)
        if cap is None:
            continue
        for spec_tool in cap.tools:
            # The name the model would see, as the manifest and the run name it.
            name = seen_name(spec_tool, binding.tool_overrides)
            if name in seen and seen[name] != (binding.id, spec_tool.id):
                other_binding, other_tool = seen[name]
                errors.append(
                    PublishError(
                        binding.id,
                        f"tool_overrides.{spec_tool.id}.name",
                        f"the model would see two tools named {name!r} ({other_binding}.{other_tool} "
                        "and this one); pick another name",
                    )
                )
            else:
                seen[name] = (binding.id, spec_tool.id)


def _registry_visible_names(spec: AgentSpec) -> dict[str, str]:
    names: dict[str, str] = {}
    for binding in spec.capabilities:
        cap = _capability(binding.id)
        if cap is None:
            continue
        for spec_tool in cap.tools:
            names[seen_name(spec_tool, binding.tool_overrides)] = f"{binding.id}.{spec_tool.id}"
    return names


def _check_mcp_connections(spec: AgentSpec, organization, actor, errors) -> None:
    """The bound MCP connections (apps.mcp.validation): in this organization, usable by the
    publisher, listed, and no tool name the model sees twice."""
    from apps.mcp.validation import mcp_binding_errors

    for field, message in mcp_binding_errors(
        spec, organization=organization, actor=actor, taken=_registry_visible_names(spec)
    ):
        errors.append(PublishError(None, field, message))


# --- environmental rules -------------------------------------------------------------------


def _check_key(binding: CapabilityBinding, cap: Capability, parsed, organization, errors) -> None:
    from apps.vault.selectors import secrets_for

    b = binding.id
    needed = cap.needs_key(parsed)
    if binding.secret_id is None:
        if needed:
            why = f" ({cap.key_note})" if cap.key_note else ""
            errors.append(
                PublishError(
                    b,
                    "secret_id",
                    f"{cap.name} needs a key from the organization's secrets{why}: pick one in secret_id.",
                )
            )
        return
    secret = (
        secrets_for(organization).filter(pk=binding.secret_id).first() if organization else None
    )
    if secret is None:
        # Another organization's secret reads exactly like one that never existed.
        errors.append(
            PublishError(
                b,
                "secret_id",
                f"there is no secret {binding.secret_id} in this organization's vault",
            )
        )
        return
    if secret.purpose in NEVER_A_CAPABILITY_KEY:
        errors.append(
            PublishError(
                b,
                "secret_id",
                f"{secret.name} is a chat platform's token, not a key for {cap.name}",
            )
        )
        return
    if cap.id == "coding_agent" and parsed is not None and not getattr(parsed, "base_url", None):
        accepted = HARNESS_SECRET_PURPOSES.get(parsed.harness, ())
        if secret.purpose not in accepted:
            errors.append(
                PublishError(
                    b,
                    "secret_id",
                    f"{secret.name} is saved as a {secret.get_purpose_display()}; the "
                    f"{parsed.harness} harness accepts {' or '.join(accepted)} keys",
                )
            )


def _check_scopes(binding: CapabilityBinding, cap: Capability, errors) -> None:
    granted = set(getattr(settings, "DEFAULT_GRANTED_SCOPES", ()))
    for scope in cap.scopes:
        if scope not in granted:
            errors.append(
                PublishError(
                    binding.id,
                    "id",
                    f"{cap.name} needs the scope {scope}, which this deployment does not grant "
                    "(AGENTICOS_REVOKED_SCOPES). Disable the capability, or ask an operator to grant it.",
                )
            )


def _check_sandbox(binding: CapabilityBinding, parsed, organization, errors) -> None:
    from .selectors import sandbox_connections_for

    b = binding.id
    if parsed.backend != "service":
        for field in ("connection_id", "runtime"):
            if getattr(parsed, field) is not None:
                errors.append(
                    PublishError(
                        b,
                        f"config.{field}",
                        f"{field} applies only to the service backend; clear it or choose service",
                    )
                )
        return
    connections = sandbox_connections_for(organization) if organization else None
    if connections is None or not connections.exists():
        errors.append(
            PublishError(
                b,
                "config.backend",
                "the service backend needs a sandbox connection, and this organization has not "
                "registered any. An operator registers one; until then use the state backend.",
            )
        )
        return
    if parsed.connection_id is None:
        connection = connections.filter(is_default=True).first()
        if connection is None:
            errors.append(
                PublishError(
                    b,
                    "config.connection_id",
                    "no connection is named and the organization has no default sandbox connection; "
                    "name one or ask an operator to mark one as default",
                )
            )
            return
    else:
        connection = connections.filter(name=parsed.connection_id).first()
        if connection is None:
            errors.append(
                PublishError(
                    b,
                    "config.connection_id",
                    f"the sandbox connection {parsed.connection_id!r} no longer exists in this organization",
                )
            )
            return
    if connection.secret_id is None:
        errors.append(
            PublishError(
                b,
                "config.connection_id",
                f"the sandbox connection {connection.name!r} has no credential; an operator adds one",
            )
        )


def _check_coding_agent(binding: CapabilityBinding, spec: AgentSpec, errors) -> None:
    sandbox = spec.binding("sandbox")
    ok = False
    if sandbox is not None and sandbox.enabled:
        try:
            sandbox_cfg = cast(
                "SandboxConfig", get_capability("sandbox").parse_config(sandbox.config)
            )
            ok = sandbox_cfg.backend == "service" and sandbox_cfg.include_execute
        except PydanticValidationError:
            ok = True  # the sandbox binding's own error already says what to fix
    if not ok:
        errors.append(
            PublishError(
                binding.id,
                "id",
                "the coding agent runs in the agent's sandbox and needs a shell: enable Sandbox "
                "with the service backend and include_execute on.",
            )
        )


def _check_subagents(binding: CapabilityBinding, parsed, spec: AgentSpec, errors) -> None:
    bound = _bound_ids(spec, enabled_only=True)
    for i, cap_id in enumerate(parsed.share_with_delegates):
        if cap_id == "subagents":
            continue  # refused by the config model already
        if cap_id not in bound:
            errors.append(
                PublishError(
                    binding.id,
                    f"config.share_with_delegates[{i}]",
                    f"{cap_id!r} is not a capability this agent binds; a delegate can only inherit "
                    "what its parent has",
                )
            )


def _check_delegates(spec: AgentSpec, organization, actor, agent, errors) -> None:
    from .selectors import can

    if not spec.subagents:
        return
    delegation = spec.binding("subagents")
    if delegation is None or not delegation.enabled:
        errors.append(
            PublishError(
                None,
                "subagents",
                "delegates are named but delegation is disabled: enable Subagents, or remove the delegates",
            )
        )
    from .models import Agent, AgentStatus, AgentVersion

    seen: set[int] = set()
    for i, pin in enumerate(spec.subagents):
        field = f"subagents[{i}]"
        if pin.agent_id in seen:
            errors.append(
                PublishError(None, f"{field}.agent_id", f"agent {pin.agent_id} is named twice")
            )
            continue
        seen.add(pin.agent_id)
        if agent is not None and pin.agent_id == agent.pk:
            errors.append(
                PublishError(None, f"{field}.agent_id", "an agent cannot delegate to itself")
            )
            continue
        target = (
            Agent.objects.filter(pk=pin.agent_id, organization=organization).first()
            if organization
            else None
        )
        if target is None:
            errors.append(
                PublishError(
                    None,
                    f"{field}.agent_id",
                    f"there is no agent {pin.agent_id} in this organization",
                )
            )
            continue
        if target.status != AgentStatus.ACTIVE:
            errors.append(PublishError(None, f"{field}.agent_id", f"{target.name} is archived"))
            continue
        if pin.version is None:
            if target.current_version_id is None:
                errors.append(
                    PublishError(
                        None,
                        f"{field}.agent_id",
                        f"{target.name} has no published version to delegate to",
                    )
                )
        elif not AgentVersion.objects.filter(agent=target, number=pin.version).exists():
            errors.append(
                PublishError(
                    None, f"{field}.version", f"{target.name} has no version {pin.version}"
                )
            )
        # Seed 000 (Scopes): who may be delegated to is agents:run, checked on the publisher
        # against each delegate's row.
        if actor is not None and not can(actor, target, "run"):
            errors.append(
                PublishError(
                    None,
                    f"{field}.agent_id",
                    f"you may not run {target.name}, so this agent may not delegate to it",
                )
            )


def _check_model_profile(spec: AgentSpec, organization, errors, read_profile) -> None:
    from .selectors import model_profiles_for

    if spec.model_profile_id is None:
        return
    if (
        organization is not None
        and read_profile is not None
        and read_profile.pk == spec.model_profile_id
        and read_profile.organization_id == organization.pk
    ):
        return  # the caller read it already, in this organization (the runner: the one it runs on)
    if (
        organization is None
        or not model_profiles_for(organization).filter(pk=spec.model_profile_id).exists()
    ):
        errors.append(
            PublishError(
                None,
                "model_profile_id",
                f"there is no model profile {spec.model_profile_id} in this organization",
            )
        )


# Checks contributed by apps above this one (the memory app checks context_ids): agents imports
# none of them (STYLE.md, "Which way the imports point"); each registers itself in ready().
# A check takes (spec, organization) and returns PublishErrors; one registered ``with_actor``
# also takes the publisher (the knowledge app: a collection the publisher may not read).
_SPEC_CHECKS: list = []
_ACTOR_CHECKS: set = set()


def register_spec_check(check, *, with_actor: bool = False) -> None:
    if check not in _SPEC_CHECKS:
        _SPEC_CHECKS.append(check)
    if with_actor:
        _ACTOR_CHECKS.add(check)


# --- entry points --------------------------------------------------------------------------


def validate_spec(
    spec, *, organization, actor, agent=None, model_profile=None
) -> list[PublishError]:
    """Every publish rule; an empty list means the spec may be published (or run).

    ``organization=None`` (``agenticos spec validate`` without ``--org``) checks everything that
    needs no organization: keys in the vault, sandbox connections, delegate rows and the model
    profile are then left to the publish itself. ``model_profile`` is the organization's profile
    the spec names when the caller has read it already: it is not looked for again.
    """
    parsed_spec, errors = parse_spec(spec)
    if parsed_spec is None:
        return errors
    spec = parsed_spec

    seen: set[str] = set()
    parsed_configs: dict[int, Any] = {}
    for index, binding in enumerate(spec.capabilities):
        if binding.id in SPEC_FORBIDDEN_CAPABILITIES:
            errors.append(PublishError(binding.id, "id", SPEC_FORBIDDEN_CAPABILITIES[binding.id]))
            continue
        cap = _capability(binding.id)
        if cap is None:
            errors.append(
                PublishError(
                    binding.id,
                    "id",
                    f"no capability {binding.id!r} is registered in this deployment",
                )
            )
            continue
        if binding.id in seen:
            errors.append(
                PublishError(binding.id, "id", f"{binding.id} is bound twice; keep one binding")
            )
            continue
        seen.add(binding.id)
        parsed_configs[index] = _check_binding_static(binding, cap, errors)
    _check_visible_name_collisions(spec, errors)

    for index, binding in enumerate(spec.capabilities):
        parsed = parsed_configs.get(index)
        if not binding.enabled or index not in parsed_configs:
            continue
        cap = get_capability(binding.id)
        _check_scopes(binding, cap, errors)
        if parsed is None:
            continue  # its config errors already say what to fix
        if organization is not None:
            _check_key(binding, cap, parsed, organization, errors)
            if cap.id == "sandbox":
                _check_sandbox(binding, parsed, organization, errors)
        if cap.id == "coding_agent":
            _check_coding_agent(binding, spec, errors)
        elif cap.id == "subagents":
            _check_subagents(binding, parsed, spec, errors)

    _check_mcp_connections(spec, organization, actor, errors)
    if organization is not None:
        _check_delegates(spec, organization, actor, agent, errors)
        _check_model_profile(spec, organization, errors, model_profile)
        for check in _SPEC_CHECKS:
            if check in _ACTOR_CHECKS:
                errors.extend(check(spec, organization, actor))
            else:
                errors.extend(check(spec, organization))
    elif spec.subagents and not (spec.binding("subagents") and spec.binding("subagents").enabled):
        errors.append(
            PublishError(
                None,
                "subagents",
                "delegates are named but delegation is disabled: enable Subagents, or remove the delegates",
            )
        )
    return errors


def normalized_spec(spec: AgentSpec) -> dict[str, Any]:
    """The spec as a version freezes it: each config in its stored spelling.

    Only what the author set is kept (defaults stay the registry's), but what is kept is the
    config model's normalized value — e.g. domain filters lower-case, without the trailing dot,
    IDNA-encoded, and an empty deny list read as unset. Call after ``validate_spec`` passed.
    """
    data = spec.model_dump(mode="json")
    for binding in data["capabilities"]:
        cap = _capability(binding["id"])
        if cap is None:
            continue
        parsed = cap.parse_config(binding["config"])
        binding["config"] = parsed.model_dump(mode="json", exclude_unset=True)
    return data


def pin_delegates(data: dict[str, Any], organization) -> dict[str, Any]:
    """Freeze each delegate named without a version at the version it publishes now: a pin does
    not move on its own, so what the reviewers of this version read is what its runs call."""
    from .models import Agent

    for pin in data.get("subagents") or []:
        if pin.get("version") is None:
            target = (
                Agent.objects.filter(pk=pin["agent_id"], organization=organization)
                .select_related("current_version")
                .first()
            )
            if target is not None and target.current_version is not None:
                pin["version"] = target.current_version.number
    return data


@dataclass(frozen=True)
class PublishedDecision:
    """What publishing decided about a frozen version and nothing after publish can change: its
    spec parsed, and each enabled binding's config parsed (the registry and the configs' rules are
    the deployment's, fixed for a process). A run reads it instead of deciding it again."""

    spec: AgentSpec
    configs: dict[int, Any]


# By (version id, agent id, number): a version is never edited after creation. Bounded: a
# process that has seen more versions than this starts over (each is decided again once).
_DECIDED: dict[tuple[int, int, int], PublishedDecision] = {}
_DECIDED_MAX = 4096


def _decided(version) -> PublishedDecision | None:
    return _DECIDED.get((version.pk, version.agent_id, version.number))


def _remember(version) -> None:
    spec, _ = parse_spec(version.spec)
    if spec is None:
        return
    configs = {}
    for index, binding in enumerate(spec.capabilities):
        cap = _capability(binding.id)
        if binding.enabled and cap is not None:
            configs[index] = cap.parse_config(binding.config)
    if len(_DECIDED) >= _DECIDED_MAX:
        _DECIDED.clear()
    _DECIDED[(version.pk, version.agent_id, version.number)] = PublishedDecision(spec, configs)


def still_runnable(
    decision: PublishedDecision, *, organization, actor, agent, model_profile=None
) -> list[PublishError]:
    """At run time, only what can change after publish: a scope the deployment revoked, a key
    deleted from the vault, a sandbox or MCP connection gone (or no longer the publisher's), a
    delegate archived or out of reach, the model profile deleted, and what the other apps check
    (collections, skills, context files, a mem0 address)."""
    errors: list[PublishError] = []
    spec = decision.spec
    for index, binding in enumerate(spec.capabilities):
        if not binding.enabled or index not in decision.configs:
            continue
        cap = get_capability(binding.id)
        _check_scopes(binding, cap, errors)
        parsed = decision.configs[index]
        _check_key(binding, cap, parsed, organization, errors)
        if cap.id == "sandbox":
            _check_sandbox(binding, parsed, organization, errors)
    _check_mcp_connections(spec, organization, actor, errors)
    _check_delegates(spec, organization, actor, agent, errors)
    _check_model_profile(spec, organization, errors, model_profile)
    for check in _SPEC_CHECKS:
        if check in _ACTOR_CHECKS:
            errors.extend(check(spec, organization, actor))
        else:
            errors.extend(check(spec, organization))
    return errors


def assert_runnable(version, *, model_profile=None) -> None:
    """Check a frozen version at run assembly; raise what to change. ``model_profile``: the
    profile its spec names, when the caller has read it (validate_spec).

    The first run of a version in a process runs every publish rule again (a version published
    before a rule existed is refused with the sentence that says what to change); once it passed,
    what cannot change after publish is remembered (``PublishedDecision``) and later runs check
    only what can (``still_runnable``)."""
    organization = version.agent.organization
    decision = _decided(version)
    if decision is None:
        errors = validate_spec(
            version.spec,
            organization=organization,
            actor=version.published_by,
            agent=version.agent,
            model_profile=model_profile,
        )
        if not errors:
            _remember(version)
    else:
        errors = still_runnable(
            decision,
            organization=organization,
            actor=version.published_by,
            agent=version.agent,
            model_profile=model_profile,
        )
    if errors:
        raise SpecNotRunnable(version, errors)
