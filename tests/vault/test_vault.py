"""The vault: encrypted at rest, write-only through the API and console, never logged, audited
without the value, and refused while an app admin impersonates."""

import logging

import pytest

from apps.agents.models import ModelProfile
from apps.audit.models import AuditEntry
from apps.vault.models import Secret
from apps.vault.services import secret_create, secret_reveal

pytestmark = pytest.mark.django_db

VALUE = "sk-test-0123456789abcdefXYZW"


def test_the_value_is_encrypted_at_rest_and_reveals_for_the_runner(org, owner):
    secret = secret_create(
        actor=owner, organization=org, name="OpenAI", purpose="openai", value=VALUE
    )
    stored = bytes(Secret.objects.get(pk=secret.pk).ciphertext)
    assert VALUE.encode() not in stored
    assert secret_reveal(secret) == VALUE
    assert secret.hint == "XYZW"
    assert VALUE not in repr(secret) and VALUE not in str(secret)


def test_api_is_write_only_and_audited_without_the_value(org, owner, client_for, caplog):
    client = client_for(owner, org)
    with caplog.at_level(logging.DEBUG):
        created = client.post(
            "/api/v1/secrets/",
            {"name": "OpenAI", "purpose": "openai", "value": VALUE},
            format="json",
        )
    assert created.status_code == 201
    assert "value" not in created.json() and VALUE not in created.content.decode()
    listing = client.get("/api/v1/secrets/")
    assert VALUE not in listing.content.decode()
    assert listing.json()["results"][0]["hint"] == "XYZW"
    entry = AuditEntry.objects.get(action="secret.create")
    assert VALUE not in str(entry.details)
    assert VALUE not in caplog.text

    rotated = client.post(
        f"/api/v1/secrets/{created.json()['id']}/rotate/",
        {"value": "sk-new-value-000000009999"},
        format="json",
    )
    assert rotated.status_code == 200 and rotated.json()["hint"] == "9999"
    assert AuditEntry.objects.filter(action="secret.rotate").count() == 1


def test_tenancy_triplet(org, other_org, owner, member, outsider, client_for):
    theirs = secret_create(
        actor=outsider, organization=other_org, name="Theirs", purpose="openai", value=VALUE
    )
    assert client_for(member, org).get("/api/v1/secrets/").status_code == 403
    assert (
        client_for(member, org)
        .post("/api/v1/secrets/", {"name": "x", "purpose": "openai", "value": "y"}, format="json")
        .status_code
        == 403
    )
    owner_client = client_for(owner, org)
    assert owner_client.get("/api/v1/secrets/").status_code == 200
    foreign = owner_client.post(
        f"/api/v1/secrets/{theirs.pk}/rotate/", {"value": "hijack"}, format="json"
    )
    missing = owner_client.post(
        "/api/v1/secrets/999999/rotate/", {"value": "hijack"}, format="json"
    )
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert owner_client.delete(f"/api/v1/secrets/{theirs.pk}/").status_code == 404
    assert secret_reveal(Secret.objects.get(pk=theirs.pk)) == VALUE


def test_bad_input_is_a_422_naming_the_field(org, owner, client_for):
    response = client_for(owner, org).post(
        "/api/v1/secrets/", {"name": "x", "purpose": "nonsense", "value": "v"}, format="json"
    )
    assert response.status_code == 422 and "purpose" in response.json()


def test_a_key_a_model_profile_uses_cannot_be_deleted(org, owner, client_for):
    secret = secret_create(
        actor=owner, organization=org, name="OpenAI", purpose="openai", value=VALUE
    )
    ModelProfile.objects.create(
        organization=org, label="GPT", provider="openai", model_name="gpt-4o", secret=secret
    )
    response = client_for(owner, org).delete(f"/api/v1/secrets/{secret.pk}/")
    assert response.status_code == 422
    assert Secret.objects.filter(pk=secret.pk).exists()
    assert not AuditEntry.objects.filter(action="secret.delete").exists()  # rolled back with it


def test_typing_a_key_while_impersonating_is_refused(client, app_admin, owner, org):
    client.force_login(app_admin)
    client.post("/audit/impersonate/", {"email": owner.email, "reason": "support ticket"})
    api = client.post(
        "/api/v1/secrets/",
        {"name": "OpenAI", "purpose": "openai", "value": VALUE},
        content_type="application/json",
    )
    assert api.status_code == 403
    console = client.post(
        "/settings/keys/", {"name": "OpenAI", "purpose": "openai", "value": VALUE}
    )
    assert console.status_code == 403
    assert not Secret.objects.exists()


def test_console_page_stores_and_never_shows_the_value(client, org, owner, member):
    client.force_login(owner)
    client.post("/settings/keys/", {"name": "Anthropic", "purpose": "anthropic", "value": VALUE})
    page = client.get("/settings/keys/").content.decode()
    assert "Anthropic" in page and "XYZW" in page and VALUE not in page
    client.force_login(member)
    assert client.get("/settings/keys/").status_code == 403
