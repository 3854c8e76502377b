from django.urls import path

from . import views

app_name = "console"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("switch-org/", views.switch_organization, name="switch-org"),
    path("settings/organization/", views.organization_settings, name="organization-settings"),
    path("settings/members/", views.members, name="members"),
    path(
        "settings/members/<int:membership_id>/role/", views.member_change_role, name="member-role"
    ),
    path("settings/members/<int:membership_id>/remove/", views.member_remove, name="member-remove"),
    path(
        "settings/members/invitations/<int:invitation_id>/revoke/",
        views.invitation_revoke,
        name="invitation-revoke",
    ),
    path("settings/api-keys/", views.api_keys, name="api-keys"),
    path("settings/model-profiles/", views.model_profiles, name="model-profiles"),
    path(
        "settings/model-profiles/<int:profile_id>/",
        views.model_profile_edit,
        name="model-profile-edit",
    ),
    path(
        "settings/model-profiles/<int:profile_id>/default/",
        views.model_profile_make_default,
        name="model-profile-default",
    ),
    path("settings/api-keys/<int:key_id>/revoke/", views.api_key_revoke, name="api-key-revoke"),
]
