"""The agent spec in the OpenAPI document, typed from the models that validate it.

A spec's capability bindings are the product's central structure, and a client generated from an
untyped ``spec`` object gets no help with them. So the document carries:

- ``AgentSpec`` and its parts from ``apps.agents.spec`` (pydantic), converted to OpenAPI 3.0;
- one ``<Capability>Config`` component per capability, from the registry's own config model
  (the same JSON schema ``GET /agents/capabilities/`` answers and the Builder draws forms from);
- one ``<Capability>Binding`` per capability: a binding whose ``id`` is that capability and whose
  ``config`` is that capability's config;
- ``capabilities`` as a ``oneOf`` of the bindings, discriminated on ``id``.

``AgentSpecField`` is the serializer field that says so (through the extension below) and that
refuses, on the API, what the schema refuses: a binding naming no capability, or a config its
capability's model does not accept (a 422 naming ``spec``, the binding and the field). The
console's Builder still saves a half-finished draft; the API, which a generated client trusts to
mean what its schema says, does not.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent
from jsonschema import Draft202012Validator
from pydantic import ValidationError as PydanticValidationError
from rest_framework import serializers

from agenticos.params import SafeJSONField
from apps.agents.spec import AgentSpec, CapabilityBinding
from apps.agents.validation import SPEC_FORBIDDEN_CAPABILITIES
from apps.capabilities.registry import REGISTRY, Capability

_REF_PREFIX = "#/components/schemas/"


def camel(capability_id: str) -> str:
    return "".join(part.capitalize() for part in capability_id.split("_"))


def bindable_capabilities() -> list[Capability]:
    """The capabilities a spec may bind (``channel_tools`` is granted per chat binding)."""
    return [cap for cap in REGISTRY.all() if cap.id not in SPEC_FORBIDDEN_CAPABILITIES]


def _to_openapi_30(node: Any, rename: dict[str, str]) -> Any:
    """A pydantic (JSON Schema 2020-12) schema as OpenAPI 3.0 says it: ``$defs`` references to
    components, ``X | None`` as ``nullable``, ``const`` as a one-value ``enum``, a numeric
    ``exclusiveMinimum`` as ``minimum`` plus the boolean."""
    if isinstance(node, list):
        return [_to_openapi_30(item, rename) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _to_openapi_30(value, rename) for key, value in node.items() if key != "$defs"}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        node["$ref"] = _REF_PREFIX + rename[ref.removeprefix("#/$defs/")]
        if len(node) > 1:
            # OpenAPI 3.0 ignores siblings of $ref: keep them beside an allOf instead.
            target = {"$ref": node.pop("$ref")}
            node["allOf"] = [target]
    if "const" in node:
        node["enum"] = [node.pop("const")]
    for bound in ("Minimum", "Maximum"):
        exclusive = node.get(f"exclusive{bound}")
        if isinstance(exclusive, int | float) and not isinstance(exclusive, bool):
            node[bound.lower()] = exclusive
            node[f"exclusive{bound}"] = True
    variants = node.get("anyOf")
    if isinstance(variants, list) and {"type": "null"} in variants:
        rest = [variant for variant in variants if variant != {"type": "null"}]
        del node["anyOf"]
        if len(rest) == 1 and "$ref" in rest[0]:
            node["allOf"] = rest
        elif len(rest) == 1:
            node = {**rest[0], **node}
        else:
            node["anyOf"] = rest
        node["nullable"] = True
    return node


def _named_enum(auto_schema, name: str, prop: dict) -> dict:
    enum = {key: prop[key] for key in ("type", "enum", "x-enum-labels") if key in prop}
    ref = _register(auto_schema, name, enum)
    rest = {key: value for key, value in prop.items() if key not in enum}
    return {"allOf": [ref], **rest} if rest else ref


def _name_enums(auto_schema, component: str, schema: dict) -> dict:
    """Each enumeration a property holds becomes its own component (``<Component><Property>``).

    drf-spectacular names the enums it finds after their property alone (``ModeEnum``), and
    thirty capability configs share property names with different choices; a component of its
    own gives each a name a generated client can show (``WebResearchConfigMethod``)."""
    for prop_name, prop in schema.get("properties", {}).items():
        name = component + camel(prop_name)
        if "enum" in prop:
            schema["properties"][prop_name] = _named_enum(auto_schema, name, prop)
        elif prop.get("type") == "array" and "enum" in prop.get("items", {}):
            prop["items"] = _named_enum(auto_schema, name, prop["items"])
    return schema


def _register(auto_schema, name: str, schema: dict) -> dict:
    schema = _name_enums(auto_schema, name, schema)
    # A client generator names a class after a schema's title when it has one: the component's
    # name is the one the document uses everywhere, so the model's class name is dropped.
    schema.pop("title", None)
    component = ResolvedComponent(
        name=name, type=ResolvedComponent.SCHEMA, object=name, schema=schema
    )
    auto_schema.registry.register_on_missing(component)
    return component.ref


def _register_pydantic(auto_schema, name: str, json_schema: dict, *, prefix: str) -> dict:
    """Register a pydantic JSON schema as component ``name``, its ``$defs`` as ``prefix<Def>``."""
    defs = json_schema.get("$defs", {})
    rename = {def_name: f"{prefix}{def_name}" for def_name in defs}
    for def_name, def_schema in defs.items():
        _register(auto_schema, rename[def_name], _to_openapi_30(def_schema, rename))
    return _register(auto_schema, name, _to_openapi_30(json_schema, rename))


def _binding_variant(auto_schema, cap: Capability, binding_schema: dict, rename) -> dict:
    config_ref = _register_pydantic(
        auto_schema, f"{camel(cap.id)}Config", cap.config_schema(), prefix=camel(cap.id)
    )
    schema = _to_openapi_30(copy.deepcopy(binding_schema), rename)
    schema["description"] = f"{cap.name} ({cap.id}) bound to the agent, with its config."
    schema["properties"]["id"] = {"type": "string", "enum": [cap.id]}
    # Omitted, or any key left out of it, takes the capability's default.
    schema["properties"]["config"] = config_ref
    schema["required"] = ["id"]
    return _register(auto_schema, f"{camel(cap.id)}Binding", schema)


def agent_spec_component(auto_schema) -> dict:
    """Register the typed spec (and its parts) and answer its ``$ref``."""
    spec_schema = AgentSpec.model_json_schema()
    defs = spec_schema.get("$defs", {})
    rename = {name: f"AgentSpec{name}" for name in defs}
    binding_schema = defs.pop("CapabilityBinding", CapabilityBinding.model_json_schema())
    # One approval-mode enum shared by every binding variant, rather than thirty copies.
    approval_mode = _named_enum(
        auto_schema, "AgentSpecApprovalMode", binding_schema["properties"]["approval"]
    )
    binding_schema["properties"]["approval"] = approval_mode
    binding_schema["properties"]["tool_approval"]["additionalProperties"] = approval_mode["allOf"][
        0
    ]
    for name, schema in defs.items():
        _register(auto_schema, rename[name], _to_openapi_30(schema, rename))
    variants = {
        cap.id: _binding_variant(auto_schema, cap, binding_schema, rename)
        for cap in bindable_capabilities()
    }
    spec = _to_openapi_30({k: v for k, v in spec_schema.items() if k != "$defs"}, rename)
    spec["properties"]["capabilities"] = {
        "type": "array",
        "description": "The capabilities switched on, each with its config; `id` names which.",
        "items": {
            "oneOf": list(variants.values()),
            "discriminator": {
                "propertyName": "id",
                "mapping": {cap_id: ref["$ref"] for cap_id, ref in variants.items()},
            },
        },
    }
    return _register(auto_schema, "AgentSpec", spec)


# How many sentences one refusal carries: enough to fix a spec, not a page of them.
MAX_PROBLEMS = 10


@cache
def _spec_validator() -> Draft202012Validator:
    return Draft202012Validator(AgentSpec.model_json_schema())


@cache
def _config_validator(capability_id: str) -> Draft202012Validator:
    return Draft202012Validator(REGISTRY.get(capability_id).config_schema())


def _schema_problems(validator: Draft202012Validator, value: Any, where: str) -> list[str]:
    # The JSON types as the schema states them. pydantic's lax mode would read `false` as 0 and
    # "5" as 5 where the schema says integer, accepting what a client was told is refused.
    problems = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        path = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
        )
        location = f"{where}{path}".lstrip(".")
        problems.append(f"{location}: {error.message}" if location else error.message)
    return problems


def spec_problems(spec: dict) -> list[str]:
    """What the typed schema refuses in a spec: a value outside its JSON type or range, a key
    no part of the spec takes, a binding whose id names no bindable capability, a config its
    capability's model does not take."""
    problems = _schema_problems(_spec_validator(), spec, "")
    bindings = spec.get("capabilities")
    if not isinstance(bindings, list):
        return problems[:MAX_PROBLEMS]
    known = {cap.id: cap for cap in bindable_capabilities()}
    for index, binding in enumerate(bindings):
        if not isinstance(binding, dict) or not isinstance(binding.get("id"), str):
            continue  # the spec's schema named it
        where = f"capabilities[{index}]"
        cap = known.get(binding["id"])
        if cap is None:
            reason = SPEC_FORBIDDEN_CAPABILITIES.get(binding["id"])
            problems.append(
                f"{where}.id: {reason}"
                if reason
                else f"{where}.id: {binding['id']!r} is not a capability (known: "
                + ", ".join(sorted(known))
                + ")."
            )
            continue
        config = binding.get("config") or {}
        config_problems = _schema_problems(_config_validator(cap.id), config, f"{where}.config")
        if not config_problems:
            # The model's own validators, beyond what its schema can say.
            try:
                cap.parse_config(config)
            except PydanticValidationError as error:
                for problem in error.errors():
                    loc = ".".join(str(part) for part in problem.get("loc", ()))
                    field = f"{where}.config" + (f".{loc}" if loc else "")
                    message = str(problem.get("msg", "invalid")).removeprefix("Value error, ")
                    config_problems.append(f"{field}: {message}")
        problems.extend(f"{problem} ({cap.id})" for problem in config_problems)
    return problems[:MAX_PROBLEMS]


class AgentSpecField(SafeJSONField):
    """An agent spec in a request or a response: typed in the schema (``AgentSpec``); on input
    its bindings are checked against the registry as the schema states them."""

    # SafeJSONField is annotated as a bare object for the schema; this field's schema comes from
    # AgentSpecFieldExtension instead, so the inherited annotation is cleared.
    _spectacular_annotation: dict = {}

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        problems = spec_problems(data)
        if problems:
            raise serializers.ValidationError(problems)
        return data


class AgentSpecFieldExtension(OpenApiSerializerFieldExtension):
    target_class = AgentSpecField

    def map_serializer_field(self, auto_schema, direction):
        ref = agent_spec_component(auto_schema)
        return {"allOf": [ref], "nullable": True} if self.target.allow_null else ref
