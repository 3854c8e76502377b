"""The role → permission table (docs/permissions.md) is the whole policy; this pins it."""

import pytest

from apps.orgs.permissions import ALL_PERMISSIONS, has_org_permission, role_has_permission

# fmt: off
EXPECTED = {
    #                   owner  admin  operator builder member viewer
    "agents:view":      (1,    1,     1,       1,      1,     1),
    "agents:edit":      (1,    1,     0,       1,      0,     0),
    "agents:run":       (1,    1,     1,       1,      1,     0),
    "agents:publish":   (1,    1,     0,       1,      0,     0),
    "runs:view":        (1,    1,     1,       1,      0,     0),
    "approvals:decide": (1,    1,     1,       0,      0,     0),
    "budgets:manage":   (1,    1,     0,       0,      0,     0),
    "audit:read":       (1,    1,     0,       0,      0,     0),
    "members:manage":   (1,    1,     0,       0,      0,     0),
    "skills:edit":      (1,    1,     0,       1,      0,     0),
    "context:edit":     (1,    1,     0,       1,      0,     0),
    "settings:manage":  (1,    1,     0,       0,      0,     0),
}
# fmt: on
ROLES = ("owner", "admin", "operator", "builder", "member", "viewer")


def test_table_covers_every_permission():
    assert set(EXPECTED) == set(ALL_PERMISSIONS)


@pytest.mark.parametrize("permission", sorted(EXPECTED))
@pytest.mark.parametrize("index,role", list(enumerate(ROLES)))
def test_role_holds_exactly_its_permissions(permission, index, role):
    assert role_has_permission(role, permission) is bool(EXPECTED[permission][index])


def test_seed_rows_approvals_decide_and_runs_view():
    assert {r for r in ROLES if role_has_permission(r, "approvals:decide")} == {
        "owner",
        "admin",
        "operator",
    }
    assert {r for r in ROLES if role_has_permission(r, "runs:view")} == {
        "owner",
        "admin",
        "builder",
        "operator",
    }


def test_unknown_permission_is_a_programming_error():
    with pytest.raises(ValueError):
        role_has_permission("owner", "agents:delete")


def test_membership_decides_and_other_org_grants_nothing(org, other_org, owner, member, outsider):
    assert has_org_permission(owner, org, "budgets:manage")
    assert not has_org_permission(member, org, "budgets:manage")
    assert not has_org_permission(outsider, org, "agents:view")
    assert not has_org_permission(owner, other_org, "agents:view")


def test_app_admin_holds_every_permission_everywhere(org, app_admin):
    assert all(has_org_permission(app_admin, org, p) for p in ALL_PERMISSIONS)


def test_inactive_account_holds_nothing(org, owner):
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    assert not has_org_permission(owner, org, "agents:view")
