"""Settings → Model profiles (issue 15): managed in the console, not only in the admin, through
the same services as the API; errors on their field; settings:manage only."""

import pytest

from apps.agents.models import ModelProfile
from apps.audit.models import AuditEntry

pytestmark = pytest.mark.django_db


def test_an_owner_adds_a_model_profile_and_makes_it_the_default(client, org, owner):
    client.force_login(owner)
    page = client.post(
        "/settings/model-profiles/",
        {"label": "Local", "provider": "openai_compatible", "model_name": "llama"},
    ).content.decode()
    field = page.split('id="id_base_url"', 1)[0][-300:] + page.split('id="id_base_url"', 1)[1][:300]
    assert "needs its base_url" in page and 'aria-invalid="true"' in field
    assert not ModelProfile.objects.filter(organization=org, label="Local").exists()

    response = client.post(
        "/settings/model-profiles/",
        {
            "label": "Local",
            "provider": "openai_compatible",
            "model_name": "llama",
            "base_url": "http://127.0.0.1:9000/v1",
            "context_window": "8192",
        },
        follow=True,
    )
    page = response.content.decode()
    assert "Model profile Local added." in page and "8192 tokens" in page
    profile = ModelProfile.objects.get(organization=org, label="Local")
    assert AuditEntry.objects.filter(
        action="model_profile.create", subject_id=str(profile.pk)
    ).exists()

    client.post(f"/settings/model-profiles/{profile.pk}/default/")
    profile.refresh_from_db()
    assert profile.is_default


def test_model_profiles_need_settings_manage(client, builder):
    client.force_login(builder)
    assert client.get("/settings/model-profiles/").status_code == 403
    assert "Model profiles</a>" not in client.get("/settings/organization/").content.decode()


def test_an_owner_changes_a_model_profiles_context_window(client, org, owner):
    from apps.agents.services import model_profile_create

    profile = model_profile_create(
        actor=owner, organization=org, label="GPT", provider="openai", model_name="gpt-4.1-mini"
    )
    client.force_login(owner)
    page = client.get(f"/settings/model-profiles/{profile.pk}/").content.decode()
    assert 'value="gpt-4.1-mini"' in page
    response = client.post(
        f"/settings/model-profiles/{profile.pk}/",
        {
            "label": "GPT mini",
            "provider": "openai",
            "model_name": "gpt-4.1-mini",
            "context_window": "128000",
        },
        follow=True,
    )
    assert "Model profile GPT mini saved." in response.content.decode()
    profile.refresh_from_db()
    assert profile.label == "GPT mini" and profile.context_window == 128000
    assert AuditEntry.objects.filter(
        action="model_profile.update", subject_id=str(profile.pk)
    ).exists()
