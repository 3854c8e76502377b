"""The `agenticos` command, called in-process so it reaches the test database."""

import pytest

from agenticos.cli import main
from apps.orgs.models import ApiKey, Membership, Organization
from apps.orgs.services import hash_api_key


def test_create_api_key_prints_only_the_key(org, member, capsys):
    assert main(["create-api-key", "--org", "acme", "--email", member.email]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    raw_key = out.strip()
    assert ApiKey.objects.get(key_hash=hash_api_key(raw_key)).user == member


def test_create_api_key_for_unknown_org_fails(db, capsys):
    assert main(["create-api-key", "--org", "nope", "--email", "x@y.test"]) != 0
    assert capsys.readouterr().out == ""


def test_create_org_prints_the_slug_and_makes_the_owner(db, capsys):
    assert (
        main(["create-org", "--name", "Umbrella Corp", "--owner-email", "alice@umbrella.test"]) == 0
    )
    slug = capsys.readouterr().out.strip()
    assert slug == "umbrella-corp"
    organization = Organization.objects.get(slug=slug)
    assert Membership.objects.get(organization=organization).role == "owner"


def test_bootstrap_twice(db, capsys, settings):
    settings.AGENTICOS_ORG_NAME = "Default"
    settings.AGENTICOS_ADMIN_EMAIL = "ops@example.test"
    settings.AGENTICOS_ADMIN_PASSWORD = None
    assert main(["bootstrap"]) == 0
    first = capsys.readouterr().out
    assert main(["bootstrap"]) == 0
    second = capsys.readouterr().out
    assert "generated password" in first and "generated password" not in second
    assert Organization.objects.filter(slug="default").count() == 1


@pytest.mark.parametrize("argv", [["--help"], []])
def test_help(argv, capsys):
    assert main(argv) == 0
    assert "agenticos up" in capsys.readouterr().out
