"""One answer to "which organization does this console request act in, and may it?"
(apps/orgs/access.py), the same on every page that used to carry its own helper."""

import pytest

from ..factories import UserFactory

# Pages whose views now ask organization_from_request, with the permission each names.
PAGES_BY_PERMISSION = {
    "/spend/": "runs:view",
    "/settings/keys/": "settings:manage",
    "/audit/": "audit:read",
}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/spend/", "/settings/keys/", "/audit/", "/chat/", "/settings/memory/"]
)
def test_someone_in_no_organization_gets_a_404_saying_so(client, path):
    client.force_login(UserFactory(email="nobody@nowhere.test"))
    assert client.get(path).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("path,permission", PAGES_BY_PERMISSION.items())
def test_a_member_without_the_pages_permission_is_refused_naming_it(
    client, org, member, path, permission
):
    client.force_login(member)
    response = client.get(f"{path}?org={org.pk}")
    assert response.status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES_BY_PERMISSION)
def test_the_owner_reads_the_page(client, org, owner, path):
    client.force_login(owner)
    response = client.get(f"{path}?org={org.pk}")
    assert response.status_code == 200
    assert response.context["request"].organization == org


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES_BY_PERMISSION)
def test_a_link_into_another_organization_shows_the_readers_own(
    client, org, other_org, outsider, path
):
    client.force_login(outsider)
    response = client.get(f"{path}?org={org.pk}")
    assert response.status_code == 200
    assert response.context["request"].organization == other_org
