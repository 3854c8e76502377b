def test_openapi_schema_and_docs_page_are_served(client, db):
    schema = client.get("/api/v1/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/orgs/" in schema.content
    docs = client.get("/api/v1/docs/")
    assert docs.status_code == 200
    assert b"cdn" not in docs.content.lower()  # self-contained: the sidecar's static files


def test_api_path_without_slash_redirects(client, org, owner):
    client.force_login(owner)
    response = client.get("/api/v1/orgs")
    assert response.status_code == 301 and response.url.endswith("/api/v1/orgs/")


# --- an honest schema (issue 13, defect 5) ------------------------------------------------
import re  # noqa: E402

import pytest  # noqa: E402
import yaml  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.urls import get_resolver  # noqa: E402

METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from drf_spectacular.generators import SchemaGenerator

    with django_db_blocker.unblock():
        return SchemaGenerator().get_schema(request=None, public=True)


# Operations with no caller identity: a trigger's events are authorized by their signature
# alone (docs/triggers.md), so they declare no bearer scheme and answer 403/409/413 only.
SIGNED_ONLY = {"/api/v1/triggers/{id}/events/"}


def _operations(schema, *, with_caller_only: bool = True):
    for path, item in schema["paths"].items():
        if with_caller_only and path in SIGNED_ONLY:
            continue
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def test_a_signed_only_operation_declares_no_credential_and_its_403(schema):
    operation = schema["paths"]["/api/v1/triggers/{id}/events/"]["post"]
    assert not operation.get("security") or operation["security"] == [{}]
    assert {"202", "403"} <= set(operation["responses"])


def test_the_schema_generates_without_a_warning_and_validates(tmp_path):
    """A view drf-spectacular cannot read is a warning; --fail-on-warn makes it a failure."""
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "s.yaml"))
    assert yaml.safe_load((tmp_path / "s.yaml").read_text())["openapi"].startswith("3.")


def test_bearer_keys_are_a_declared_scheme_on_every_operation(schema):
    assert schema["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    for path, method, operation in _operations(schema):
        schemes = {name for requirement in operation["security"] for name in requirement}
        assert "bearerAuth" in schemes, (method, path)


def test_every_api_route_has_a_schema(schema):
    """Each URL pattern under /api/v1/ (but the schema and the docs) is in the document."""
    documented = {path for path in schema["paths"]}
    routes = set()
    api = next(p for p in get_resolver().url_patterns if str(p.pattern) == "api/v1/")

    def walk(patterns, prefix):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if hasattr(pattern, "url_patterns"):
                walk(pattern.url_patterns, route)
            else:
                routes.add(route)

    walk(api.url_patterns, "/api/v1/")
    # Router patterns are regexes (^runs/(?P<pk>[0-9]+)/$); reduce both sides to their shape.
    import re

    def shape(route):
        route = re.sub(r"\(\?P<[^>]+>[^)]*\)|<[^>]+>|\{[^}]+\}", "{}", route)
        return route.replace("^", "").replace("$", "").replace("\\.", ".")

    undocumented = {
        shape(r) for r in routes if "schema/" not in r and "docs/" not in r and "format" not in r
    } - {shape(p) for p in documented}
    assert undocumented == set()


@pytest.mark.parametrize(
    "path, component, required, absent",
    [
        ("/api/v1/runs/", "RunCreateRequest", {"agent_id", "input"}, {"id", "status", "cost_usd"}),
        ("/api/v1/memberships/", "MembershipCreateRequest", {"email"}, {"id", "user_id", "name"}),
        ("/api/v1/secrets/", "SecretCreateRequest", {"name", "purpose", "value"}, {"id", "hint"}),
        ("/api/v1/api-keys/", "ApiKeyCreateRequest", {"name"}, {"id", "prefix", "key"}),
        ("/api/v1/agents/", "AgentCreateRequest", {"name"}, {"id", "permissions"}),
    ],
)
def test_writes_take_their_own_request_body_not_the_read_model(
    schema, path, component, required, absent
):
    body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": f"#/components/schemas/{component}"}
    fields = schema["components"]["schemas"][component]
    assert required <= set(fields["required"])
    assert not absent & set(fields["properties"])


def test_a_secrets_value_is_never_in_a_response_schema(schema):
    assert "value" not in schema["components"]["schemas"]["Secret"]["properties"]


def test_every_operation_documents_the_errors_it_can_answer(schema):
    for path, method, operation in _operations(schema):
        codes = set(operation["responses"])
        assert {"401", "403", "404", "422", "429"} <= codes, (method, path, codes)
        if method in ("post", "put", "patch"):
            assert {"400", "413"} <= codes, (method, path, codes)
        error = operation["responses"]["404"]["content"]["application/json"]["schema"]
        assert error == {"$ref": "#/components/schemas/Error"}


@pytest.mark.parametrize(
    "path",
    ["/api/v1/approvals/{id}/decide/", "/api/v1/runs/{id}/resume/", "/api/v1/runs/{id}/answers/"],
)
def test_a_second_decision_is_a_documented_409(schema, path):
    assert "409" in schema["paths"][path]["post"]["responses"]


def test_the_organization_header_is_described_once(schema):
    assert "X-Organization-Id" in schema["info"]["description"]


def test_the_run_history_filters_are_declared(schema):
    names = {p["name"] for p in schema["paths"]["/api/v1/runs/"]["get"]["parameters"]}
    assert {"status", "user_id", "started_from", "started_to", "took_over_ms", "order_by"} <= names


# --- a schema a generated client can trust (issue 33) ---------------------------------------


def test_every_request_body_refuses_keys_it_does_not_declare(schema):
    """Each request serializer inherits StrictJSONMixin (a 422 naming an unknown key): the
    schema says so on every body it declares, JSON or multipart."""
    for path, method, operation in _operations(schema):
        for media, content in operation.get("requestBody", {}).get("content", {}).items():
            ref = content["schema"].get("$ref", "")
            if not ref:
                continue
            component = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
            assert component.get("additionalProperties") is False, (method, path, media, ref)


EXPORTS = {
    "/api/v1/runs/export/": ("started_from", "started_to", ["csv", "jsonl"]),
    "/api/v1/approvals/export/": ("created_from", "created_to", ["csv", "jsonl"]),
    "/api/v1/audit/export/": ("created_from", "created_to", ["csv", "jsonl"]),
    "/api/v1/spend/export/": ("from", "to", ["csv"]),
}
MEDIA = {"csv": "text/csv", "jsonl": "application/x-ndjson"}


@pytest.mark.parametrize("path", sorted(EXPORTS))
def test_an_export_declares_both_window_ends_required(schema, path):
    start, end, _ = EXPORTS[path]
    parameters = {p["name"]: p for p in schema["paths"][path]["get"]["parameters"]}
    for name in (start, end):
        assert parameters[name].get("required") is True, (path, name)
        # Required means present and not empty: the empty value a list filter allows is gone.
        assert not re.match(parameters[name]["schema"]["pattern"], ""), (path, name)
    assert "period" not in parameters


@pytest.mark.parametrize("path", sorted(EXPORTS))
def test_an_export_declares_each_format_as_text_of_its_media_type(schema, path):
    _, _, formats = EXPORTS[path]
    content = schema["paths"][path]["get"]["responses"]["200"]["content"]
    assert set(content) == {MEDIA[fmt] for fmt in formats}
    for media in content.values():
        assert media["schema"] == {"type": "string"}, path
    parameters = {p["name"]: p for p in schema["paths"][path]["get"]["parameters"]}
    if len(formats) > 1:
        assert parameters["fmt"]["schema"]["enum"] == formats


def test_the_events_endpoint_declares_its_media_types_not_any(schema):
    operation = schema["paths"]["/api/v1/triggers/{id}/events/"]["post"]
    assert set(operation["requestBody"]["content"]) == {
        "application/json",
        "application/octet-stream",
    }
    headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
    assert {"X-AgenticOS-Signature", "X-AgenticOS-Timestamp", "X-Hub-Signature-256"} <= headers


def _component(schema, ref: dict) -> dict:
    return schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]


def test_an_agents_spec_is_typed_and_its_bindings_are_a_union_on_id(schema):
    from apps.agents.api.spec_schema import bindable_capabilities, camel

    components = schema["components"]["schemas"]
    for request in ("AgentCreateRequest", "PatchedAgentUpdateRequest"):
        assert components[request]["properties"]["spec"]["allOf"] == [
            {"$ref": "#/components/schemas/AgentSpec"}
        ]
    assert components["AgentDetail"]["properties"]["spec"]["allOf"][0]["$ref"].endswith(
        "/AgentSpec"
    )
    items = components["AgentSpec"]["properties"]["capabilities"]["items"]
    mapping = items["discriminator"]["mapping"]
    assert items["discriminator"]["propertyName"] == "id"
    capabilities = bindable_capabilities()
    assert set(mapping) == {cap.id for cap in capabilities}
    assert "channel_tools" not in mapping  # granted per chat binding, never by a spec
    for cap in capabilities:
        binding = _component(schema, {"$ref": mapping[cap.id]})
        assert _component(schema, binding["properties"]["id"])["enum"] == [cap.id]
        config = _component(schema, binding["properties"]["config"])
        assert config is components[f"{camel(cap.id)}Config"]
        # The registry's own config model: the same keys, unknown ones refused.
        assert set(config.get("properties", {})) == set(cap.config_schema().get("properties", {}))
        assert config["additionalProperties"] is False
