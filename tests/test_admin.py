"""Every model of ours is in the admin, searchable and filterable, and its pages open."""

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

OUR_MODELS = [m for m in apps.get_models() if m.__module__.startswith("apps.")]


@pytest.mark.parametrize("model", OUR_MODELS, ids=lambda m: m._meta.label)
def test_model_is_registered_with_search_and_filters(model):
    model_admin = admin.site._registry.get(model)
    assert model_admin is not None, f"{model._meta.label} is not in the admin"
    assert model_admin.search_fields, f"{model._meta.label} admin has no search_fields"
    assert model_admin.list_filter, f"{model._meta.label} admin has no list_filter"


@pytest.mark.parametrize("model", OUR_MODELS, ids=lambda m: m._meta.label)
def test_changelist_opens_for_an_app_admin(model, client, app_admin):
    client.force_login(app_admin)
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    response = client.get(url, {"q": "x"})
    assert response.status_code == 200
