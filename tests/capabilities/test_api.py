"""GET /api/v1/agents/capabilities/: the registry as it runs, compared with the seed's table."""

import pytest

from tests.capabilities.test_catalog_table import ADVANCED, SEED_TABLE

URL = "/api/v1/agents/capabilities/"

# Defaults and ranges of the seed's configuration tables, for the capabilities the publish rules
# lean on (the rest are pinned field by field in test_catalog_configs.py).
SEED_CONFIG = {
    "web_research": {"method": ("duckduckgo", None, None), "max_results": (5, 1, 10)},
    "web_fetch": {"method": ("local", None, None), "max_content_chars": (50000, 1000, 200000)},
    "subagents": {
        "mode": ("sync", None, None),
        "max_depth": (1, 1, 3),
        "max_fanout": (3, 1, 10),
        "max_result_chars": (2000, 200, 20000),
    },
    "coding_agent": {"harness": ("claude_code", None, None), "timeout_minutes": (15, 1, 60)},
    "guardrails": {"phone_regions": ("US, GB, DE, PL", None, None)},
    "sandbox": {"backend": ("state", None, None), "session_scope": ("conversation", None, None)},
}


@pytest.fixture
def capabilities(client_for, member, org):
    response = client_for(member, org).get(URL)
    assert response.status_code == 200
    return {c["id"]: c for c in response.json()}


def test_the_endpoint_lists_exactly_the_seeds_31_ids_in_table_order(capabilities):
    assert list(capabilities) == list(SEED_TABLE)
    assert len(capabilities) == 31


def test_each_capability_carries_the_seeds_tools_scopes_key_and_voice(capabilities):
    for cap_id, (category, tools, scopes, key, voice) in SEED_TABLE.items():
        served = capabilities[cap_id]
        assert served["category"] == category, cap_id
        assert tuple(t["id"] for t in served["tools"]) == tools, cap_id
        assert tuple(served["scopes"]) == scopes, cap_id
        assert served["key_requirement"] == key.value, cap_id
        assert served["voice"] == voice.value, cap_id
        assert served["advanced"] == (cap_id in ADVANCED), cap_id


def test_config_defaults_and_ranges_match_the_seed(capabilities):
    for cap_id, fields in SEED_CONFIG.items():
        served = capabilities[cap_id]
        for field, (default, minimum, maximum) in fields.items():
            assert served["config_defaults"][field] == default, (cap_id, field)
            prop = served["config_schema"]["properties"][field]
            if minimum is not None:
                assert (prop["minimum"], prop["maximum"]) == (minimum, maximum), (cap_id, field)


def test_every_enumeration_carries_x_enum_labels(capabilities):
    method = capabilities["web_research"]["config_schema"]["properties"]["method"]
    assert set(method["x-enum-labels"]) == {"duckduckgo", "native", "tavily", "brave", "exa"}


def test_a_capability_not_built_yet_says_so(capabilities):
    unbuilt = [c for c in capabilities.values() if not c["available"]]
    for cap in unbuilt:
        assert cap["unavailable_reason"]
        assert "Not available yet" in cap["description"]


def test_the_endpoint_needs_a_signed_in_member(api_client, org):
    assert api_client.get(URL).status_code in (401, 403)


def test_any_member_of_any_organization_reads_the_same_registry(
    client_for, viewer, org, outsider, other_org
):
    mine = client_for(viewer, org).get(URL).json()
    theirs = client_for(outsider, other_org).get(URL).json()
    assert mine == theirs
