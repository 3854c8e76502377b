"""The Builder's form: drawn from each capability's config JSON schema, read back into a spec.

No Django form classes per capability: the registry's JSON schema is the form definition (seed
000: the Builder draws its picker and configuration forms from ``GET agents/capabilities``).
Field names are flat and predictable so the browser test and a person with devtools can read
them: ``cap.<id>.enabled``, ``cap.<id>.config.<field>``, ``cap.<id>.tool.<tool_id>.approval``.

A config value equal to the capability's default is not stored: the draft keeps only what the
author set, so a default changed in code reaches every agent that never chose otherwise.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from agenticos import params as parsing
from apps.capabilities.approval import resolve_tool_approval_decision
from apps.capabilities.registry import CATEGORIES, CATEGORY_LABELS, Capability, all_capabilities

from .spec import Alerts
from .validation import SPEC_FORBIDDEN_CAPABILITIES, PublishError

APPROVAL_CHOICES = [
    ("default", "Ask only for tools that act on the world"),
    ("required", "Always ask a person"),
    ("never", "Never ask"),
]
TOOL_APPROVAL_CHOICES = [("", "As the capability says"), *APPROVAL_CHOICES]


def builder_capabilities() -> list[Capability]:
    """The Toolbox: every capability a spec may bind (channel_tools is granted per chat binding)."""
    return [c for c in all_capabilities() if c.id not in SPEC_FORBIDDEN_CAPABILITIES]


# --- schema → field kinds ----------------------------------------------------------------


def _field_kind(prop: dict) -> tuple[str, dict, bool]:
    """(kind, base schema, nullable) for one property of a config schema."""
    base, nullable = prop, False
    if "anyOf" in prop:
        non_null = [p for p in prop["anyOf"] if p.get("type") != "null"]
        nullable = len(non_null) < len(prop["anyOf"])
        if len(non_null) != 1:
            return "json", prop, nullable
        base = {**non_null[0], **{k: v for k, v in prop.items() if k.startswith("x-")}}
    if "$ref" in base:
        return "json", base, nullable
    if "enum" in base:
        return "enum", base, nullable
    kind = base.get("type")
    if kind == "boolean":
        return "bool", base, nullable
    if kind in ("integer", "number"):
        return "number", base, nullable
    if kind == "string":
        return "text", base, nullable
    if kind == "array":
        items = base.get("items", {})
        if "enum" in items:
            return "multi", base, nullable
        if items.get("type") == "string":
            return "lines", base, nullable
    return "json", base, nullable


def _display(kind: str, value: Any) -> Any:
    if value is None:
        return ""
    if kind == "lines":
        return "\n".join(map(str, value)) if isinstance(value, list) else str(value)
    if kind == "json":
        return value if isinstance(value, str) else json.dumps(value, indent=2)
    return value


def _number(raw: str) -> Any:
    try:
        return int(raw)
    except ValueError:
        try:
            return float(raw)
        except ValueError:
            return raw  # kept as typed: publish validation names the field


def parse_config_post(cap: Capability, post, prefix: str) -> dict:
    """Read ``cap``'s config fields from a POST; only values that differ from the default."""
    schema = cap.config_schema()
    defaults = cap.default_config()
    config: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        key = f"{prefix}.config.{name}"
        kind, base, nullable = _field_kind(prop)
        raw = post.get(key, "")
        if kind == "bool":
            value: Any = post.get(key) == "on"
        elif kind == "multi":
            value = post.getlist(key)
        elif kind == "enum":
            if raw == "" and nullable:
                value = None
            else:
                match = [v for v in base["enum"] if str(v) == raw]
                value = match[0] if match else raw
        elif kind == "number":
            raw = raw.strip()
            value = (None if nullable else defaults.get(name)) if raw == "" else _number(raw)
        elif kind == "lines":
            lines = [line.strip() for line in raw.splitlines() if line.strip()]
            value = lines if lines else (None if nullable else [])
        elif kind == "json":
            if not raw.strip():
                value = None if nullable else defaults.get(name)
            else:
                try:
                    value = json.loads(raw)
                except json.JSONDecodeError:
                    value = raw
        else:  # text
            value = raw if raw != "" or not nullable else None
        if value != defaults.get(name):
            config[name] = value
    return config


ALERT_KINDS = ("budget", "approvals", "usage")
# The roles the form offers; "chosen" members are set through the API or a YAML spec.
ALERT_FORM_ROLES = (
    ("admins", "Admins"),
    ("owner", "The agent's owner"),
    ("initiator", "Who started the run"),
)


def alerts_of(spec_alerts) -> dict:
    """A spec's alert settings in the current schema (a first-schema spec reads through)."""
    try:
        return Alerts.model_validate(spec_alerts or {}).model_dump(mode="json")
    except PydanticValidationError:
        return Alerts().model_dump(mode="json")


ALERT_LABELS = {
    "budget": "Agent's budget reached",
    "approvals": "A call waits for approval",
    "usage": "Usage reports",
}


def alert_rows(alerts: dict) -> list[dict]:
    """The Builder's alert table: each alert with, per offered role, whether it is in the audience."""
    return [
        {
            "kind": kind,
            "label": ALERT_LABELS[kind],
            "roles": [
                {"role": role, "label": label, "on": role in alerts[kind]["audience"]}
                for role, label in ALERT_FORM_ROLES
            ],
        }
        for kind in ALERT_KINDS
    ]


def warn_at_text(alerts: dict) -> str:
    """The budget warnings as the Limits form shows them: percentages, "80, 95"."""
    return ", ".join(
        f"{Decimal(str(f)) * 100:f}".rstrip("0").rstrip(".")
        for f in alerts["budget"].get("warn_at", [])
    )


def parse_warn_at(raw: str) -> list:
    """ "80, 95" → ["0.8", "0.95"]. A value that is not a number is kept as typed, so publish
    validation names the field instead of the form dropping it."""
    fractions: list = []
    for part in raw.replace(";", ",").split(","):
        part = part.strip().rstrip("%").strip()
        if not part:
            continue
        try:
            fractions.append(str(Decimal(part) / 100))
        except InvalidOperation:
            fractions.append(part)
    return fractions


def parse_alerts_post(post, current_alerts) -> dict:
    alerts = alerts_of(current_alerts)
    if "budget_warn_at" in post:
        alerts["budget"]["warn_at"] = parse_warn_at(post.get("budget_warn_at", ""))
    offered = {role for role, _ in ALERT_FORM_ROLES}
    for kind in ALERT_KINDS:
        kept = [role for role in alerts[kind]["audience"] if role not in offered]  # e.g. "chosen"
        alerts[kind]["audience"] = [*post.getlist(f"alerts.{kind}.audience"), *kept]
    alerts["usage"]["weekly"] = post.get("alerts.usage.weekly") == "on"
    alerts["usage"]["monthly"] = post.get("alerts.usage.monthly") == "on"
    return alerts


def parse_builder_post(post, current_spec: dict) -> dict:
    """The draft spec a Builder POST describes, keeping what the form does not show."""
    spec = dict(current_spec)
    spec["instructions"] = post.get("instructions", spec.get("instructions", ""))
    budget = post.get("budget_monthly_usd", "").strip()
    if budget:
        try:
            spec["budget"] = {**spec.get("budget", {}), "monthly_usd": str(Decimal(budget))}
        except InvalidOperation:
            spec["budget"] = {**spec.get("budget", {}), "monthly_usd": budget}
    else:
        spec["budget"] = {**spec.get("budget", {}), "monthly_usd": None}
    steps = post.get("max_steps", "").strip()
    if steps:
        spec["limits"] = {**spec.get("limits", {}), "max_steps": _number(steps)}
    if post.get("alerts.shown"):
        spec["alerts"] = parse_alerts_post(post, spec.get("alerts"))
    elif "budget_warn_at" in post:
        alerts = alerts_of(spec.get("alerts"))
        alerts["budget"]["warn_at"] = parse_warn_at(post.get("budget_warn_at", ""))
        spec["alerts"] = alerts

    existing = {b["id"]: b for b in spec.get("capabilities", [])}
    bindings = []
    shown = set()
    for cap in builder_capabilities():
        prefix = f"cap.{cap.id}"
        shown.add(cap.id)
        enabled = post.get(f"{prefix}.enabled") == "on"
        if not enabled and cap.id not in existing:
            continue  # never bound: nothing to keep
        binding = dict(existing.get(cap.id, {"id": cap.id}))
        binding["enabled"] = enabled
        binding["config"] = parse_config_post(cap, post, prefix)
        binding["approval"] = post.get(f"{prefix}.approval") or "default"
        secret = post.get(f"{prefix}.secret_id", "")
        # The one parsing layer: "²" passes isdigit() and breaks int() (a 500 before).
        binding["secret_id"] = parsing.parse_id("secret_id", secret, {}) if secret else None
        tool_approval, tool_overrides = {}, {}
        for spec_tool in cap.tools:
            tprefix = f"{prefix}.tool.{spec_tool.id}"
            if post.get(f"{tprefix}.approval"):
                tool_approval[spec_tool.id] = post[f"{tprefix}.approval"]
            name = post.get(f"{tprefix}.name", "").strip()
            description = post.get(f"{tprefix}.description", "").strip()
            if name or description:
                tool_overrides[spec_tool.id] = {
                    "name": name or None,
                    "description": description or None,
                }
        binding["tool_approval"] = tool_approval
        binding["tool_overrides"] = tool_overrides
        bindings.append(binding)
    # Bindings the Builder does not show (e.g. an unknown id from an import) stay, so their
    # publish error is still seen rather than silently dropped.
    bindings.extend(b for b in spec.get("capabilities", []) if b["id"] not in shown)
    spec["capabilities"] = bindings
    return spec


# --- spec → template context ---------------------------------------------------------------


def _field_errors(errors: list[PublishError], prefix: str) -> list[str]:
    out = []
    for e in errors:
        if (
            e.field == prefix
            or e.field.startswith(prefix + ".")
            or e.field.startswith(prefix + "[")
        ):
            out.append(e.message)
    return out


def _config_fields(
    cap: Capability, config: dict, errors: list[PublishError], prefix: str
) -> list[dict]:
    schema = cap.config_schema()
    defaults = cap.default_config()
    fields = []
    for name, prop in schema.get("properties", {}).items():
        kind, base, nullable = _field_kind(prop)
        is_set = name in config
        value = config[name] if is_set else defaults.get(name)
        labels = base.get("x-enum-labels") or (base.get("items") or {}).get("x-enum-labels") or {}
        options = []
        if kind == "enum":
            options = [(str(v), labels.get(v, str(v))) for v in base["enum"]]
        elif kind == "multi":
            options = [(str(v), labels.get(v, str(v))) for v in base["items"]["enum"]]
        fields.append(
            {
                "name": name,
                "input_name": f"{prefix}.config.{name}",
                "label": prop.get("title", name.replace("_", " ").capitalize()),
                "help": prop.get("description", ""),
                "kind": kind,
                "nullable": nullable,
                "value": _display(kind, value),
                "values": [str(v) for v in value]
                if kind == "multi" and isinstance(value, list)
                else [],
                "options": options,
                "minimum": base.get("minimum"),
                "maximum": base.get("maximum"),
                "advanced": bool(prop.get("x-advanced")),
                "is_set": is_set,
                "errors": _field_errors(
                    [e for e in errors if e.field.startswith("config.")], f"config.{name}"
                ),
            }
        )
    return fields


def _sentence(cap: Capability, tool_id: str, approval: str, tool_approval: dict) -> str:
    try:
        return resolve_tool_approval_decision(cap, tool_id, approval, tool_approval).sentence
    except (KeyError, ValueError):
        return ""


def capability_context(
    cap: Capability, binding: dict | None, errors: list[PublishError], secrets
) -> dict:
    binding = binding or {}
    prefix = f"cap.{cap.id}"
    mine = [e for e in errors if e.binding == cap.id]
    config = binding.get("config") or {}
    fields = _config_fields(cap, config, mine, prefix)
    tool_approval = binding.get("tool_approval") or {}
    overrides = binding.get("tool_overrides") or {}
    tools = []
    for spec_tool in cap.tools:
        try:
            decision = resolve_tool_approval_decision(
                cap, spec_tool.id, binding.get("approval", "default"), tool_approval
            )
            sentence = decision.sentence
        except (KeyError, ValueError):
            sentence = ""
        override = overrides.get(spec_tool.id) or {}
        # The hint under each tool's select follows the select without a reload (issue 15): the
        # sentence for each choice, and for "as the capability says" under each binding choice.
        choices = [value for value, _ in APPROVAL_CHOICES]
        sentences = {
            "tool": {
                c: _sentence(cap, spec_tool.id, "default", {spec_tool.id: c}) for c in choices
            },
            "inherited": {c: _sentence(cap, spec_tool.id, c, {}) for c in choices},
        }
        tools.append(
            {
                "id": spec_tool.id,
                "title": spec_tool.title,
                "side_effecting": spec_tool.side_effecting,
                "approval": tool_approval.get(spec_tool.id, ""),
                "name": override.get("name") or "",
                "description": override.get("description") or "",
                "sentence": sentence,
                "sentences_json": json.dumps(sentences),
                "errors": _field_errors(mine, f"tool_approval.{spec_tool.id}")
                + _field_errors(mine, f"tool_overrides.{spec_tool.id}"),
            }
        )
    placed = {
        e
        for e in mine
        if e.field.startswith(("config.", "tool_approval.", "tool_overrides."))
        and (
            any(msg == e.message for f in fields for msg in f["errors"])
            or any(msg == e.message for t in tools for msg in t["errors"])
        )
    }
    general = [e for e in mine if e not in placed]
    basic = [f for f in fields if not f["advanced"]]
    advanced = [f for f in fields if f["advanced"]]
    enabled = bool(binding) and binding.get("enabled", True)
    return {
        "id": cap.id,
        "prefix": prefix,
        "name": cap.name,
        "summary": cap.description.split("\n\n")[0],
        # Described once: the summary is on the card, the rest inside Configure.
        "description": cap.description.split("\n\n", 1)[1] if "\n\n" in cap.description else "",
        "recommended": cap.recommended,
        "available": cap.available,
        "unavailable_reason": cap.unavailable_reason,
        "needs_key": cap.key_requirement.value != "none",
        "key_note": cap.key_note,
        "secret_id": binding.get("secret_id"),
        "secrets": secrets,
        "enabled": enabled,
        "approval": binding.get("approval", "default"),
        "fields": basic,
        "advanced_fields": advanced,
        # Advanced settings open by themselves where one has been set (seed 000), or is wrong.
        "advanced_open": any(f["is_set"] or f["errors"] for f in advanced),
        "tools": tools,
        "errors": [
            str(e.message) + (f" ({e.field})" if e.field not in ("id",) else "") for e in general
        ],
        "has_errors": bool(mine),
        # Folded by default (a Builder with every enabled capability open was 11,600 px tall);
        # the ones with an error open by themselves.
        "open": bool(mine),
    }


# The Builder's own fields, by the spec path a publish error names.
BASIC_FIELDS = {
    "instructions": ("instructions", "Instructions"),
    "budget.monthly_usd": ("budget_monthly_usd", "Monthly budget (USD)"),
    "budget": ("budget_monthly_usd", "Monthly budget (USD)"),
    "limits.max_steps": ("max_steps", "Step limit per run"),
    "limits": ("max_steps", "Step limit per run"),
    "alerts.budget.warn_at": ("budget_warn_at", "Warn at (% of the monthly budget)"),
}
BASIC_MESSAGES = {
    "budget_monthly_usd": "Enter an amount in dollars, such as 25 or 25.50, or leave it empty.",
    "max_steps": "Enter a whole number of steps, from 1 to 500.",
    "budget_warn_at": (
        "Enter up to five percentages of the monthly budget above 0 and below 100, such as "
        "80, 95 — or leave it empty for no warnings."
    ),
}


def error_summary(
    errors: list[PublishError], groups: list[dict], advanced: list[dict]
) -> list[dict]:
    """Every error once, named as the page names things (the capability's label, the field's
    label) and linked to the input it is about."""
    caps = {c["id"]: c for group in groups for c in group["capabilities"]} | {
        c["id"]: c for c in advanced
    }
    out = []
    for error in errors:
        cap = caps.get(error.binding) if error.binding else None
        if cap is None:
            target, label = BASIC_FIELDS.get(error.field, (None, error.field))
            if error.binding:
                label = f"{error.binding} · {error.field}"
            message = BASIC_MESSAGES.get(target, error.message) if target else error.message
            out.append(
                {
                    "href": f"#{target}" if target else "#builder-form",
                    "label": label,
                    "message": message,
                }
            )
            continue
        href, label = f"#capability-{cap['id']}", cap["name"]
        for field in [*cap["fields"], *cap["advanced_fields"]]:
            if error.field == f"config.{field['name']}" or error.field.startswith(
                f"config.{field['name']}."
            ):
                href, label = f"#{field['input_name']}", f"{cap['name']} · {field['label']}"
        for tool in cap["tools"]:
            if error.field.startswith(
                (f"tool_approval.{tool['id']}", f"tool_overrides.{tool['id']}")
            ):
                href, label = (
                    f"#{cap['prefix']}.tool.{tool['id']}.approval",
                    f"{cap['name']} · {tool['id']}",
                )
        out.append({"href": href, "label": label, "message": error.message})
    return out


def basic_field_errors(errors: list[PublishError]) -> dict[str, list[str]]:
    """Errors of the Builder's own fields (name, budget, steps), by input id."""
    out: dict[str, list[str]] = {}
    for error in errors:
        if error.binding is None and error.field in BASIC_FIELDS:
            target = BASIC_FIELDS[error.field][0]
            out.setdefault(target, []).append(BASIC_MESSAGES.get(target, error.message))
    return out


def builder_context(spec: dict, errors: list[PublishError], secrets) -> dict:
    bindings = {b.get("id"): b for b in spec.get("capabilities", []) if isinstance(b, dict)}
    groups: dict[str, list[dict]] = {c: [] for c in CATEGORIES}
    advanced: list[dict] = []
    for cap in builder_capabilities():
        ctx = capability_context(cap, bindings.get(cap.id), errors, secrets)
        (advanced if cap.advanced else groups[cap.category]).append(ctx)
    known = {c.id for c in builder_capabilities()}
    drawn = [
        {"id": c, "label": CATEGORY_LABELS[c], "capabilities": caps}
        for c, caps in groups.items()
        if caps
    ]
    basic_errors = basic_field_errors(errors)
    return {
        "groups": drawn,
        "error_summary": error_summary(errors, drawn, advanced),
        "basic_errors": basic_errors,
        "budget_errors": basic_errors.get("budget_monthly_usd", []),
        "max_steps_errors": basic_errors.get("max_steps", []),
        "warn_at_errors": basic_errors.get("budget_warn_at", []),
        "instructions_errors": basic_errors.get("instructions", []),
        "advanced_group": advanced,
        # Folded until opened, searched, or one of them is enabled (seed 000).
        "advanced_open": any(c["enabled"] or c["has_errors"] for c in advanced),
        "spec_errors": [
            e
            for e in errors
            if (e.binding is None and e.field not in BASIC_FIELDS)
            or (e.binding and e.binding not in known)
        ],
        "approval_choices": APPROVAL_CHOICES,
        "tool_approval_choices": TOOL_APPROVAL_CHOICES,
    }
