"""Helpers for the agents tests: specs by hand, agents through the services, vault secrets."""

import pytest

from apps.agents.services import agent_create
from apps.vault.services import secret_create


def binding(cap_id, config=None, **extra):
    return {"id": cap_id, "config": config or {}, **extra}


def spec_with(*bindings, **extra):
    return {"instructions": "Help.", "capabilities": list(bindings), **extra}


@pytest.fixture
def make_agent(org, builder):
    def make(spec=None, *, name="Helper", actor=None, organization=None):
        return agent_create(
            actor=actor or builder,
            organization=organization or org,
            name=name,
            spec=spec if spec is not None else spec_with(),
        )

    return make


@pytest.fixture
def make_secret(org):
    def make(name="key", purpose="capability", organization=None):
        return secret_create(
            actor=None,
            organization=organization or org,
            name=name,
            purpose=purpose,
            value="sk-test-123456789012",
        )

    return make
