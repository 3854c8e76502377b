"""The Audit page (issue 15): details as JSON, the actor filtered by email, one timestamp format
with its timezone, pagination, and the chain's state from the last signed checkpoint."""

import pytest

from apps.audit.services import record_audit
from apps.audit.verify import write_checkpoints

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def checkpoint_dir(settings, tmp_path):
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "audit-checkpoints"
    settings.AUDIT_CHECKPOINT_KEY = "test-checkpoint-key-0123456789abcdef"


def _entries(org, owner, admin):
    record_audit(
        actor=owner, organization=org, action="budget.change", subject=org, details={"to": "250.00"}
    )
    record_audit(
        actor=admin,
        organization=org,
        action="org.update",
        subject=org,
        details={"name": {"to": "Acme"}},
    )


def test_details_read_as_json_and_times_carry_their_zone(client, org, owner, admin):
    _entries(org, owner, admin)
    client.force_login(owner)
    page = client.get("/audit/").content.decode()
    assert (
        '<pre class="details" tabindex="0" aria-label="Details">{\n  &quot;to&quot;: &quot;250.00&quot;\n}</pre>'
        in page
    )
    assert "{&#x27;to&#x27;" not in page  # not a Python repr
    assert " UTC</time>" in page


def test_the_actor_is_filtered_by_email(client, org, owner, admin):
    _entries(org, owner, admin)
    client.force_login(owner)
    page = client.get("/audit/", {"actor": "ADMIN@acme.test"}).content.decode()
    table = page.split('aria-label="Audit entries"', 1)[1]
    assert "org.update" in table and "budget.change" not in table
    # The export links carry the same selection, as the id the shared parser reads.
    assert f"actor_user_id={admin.pk}" in page
    nobody = client.get("/audit/", {"actor": "nobody@nowhere.test"}).content.decode()
    assert "No entries match." in nobody


def test_the_chain_state_comes_from_the_last_checkpoint(client, org, owner, admin):
    _entries(org, owner, admin)
    client.force_login(owner)
    assert "Not checkpointed yet" in client.get("/audit/").content.decode()
    write_checkpoints()
    page = client.get("/audit/").content.decode()
    state = page.split('id="chain-state"', 1)[1].split("</p>", 1)[0]
    assert "Chain verified" in state and "up to entry" in state and "UTC" in state
