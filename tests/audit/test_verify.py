"""audit-verify: every tamper is detected, the right entry is named, the exit is non-zero."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from agenticos.settings.env import database_url_of
from apps.audit import checkpoints
from apps.audit.chain import entry_hash
from apps.audit.models import AuditEntry
from apps.audit.services import record_audit
from apps.audit.verify import write_checkpoints

from .support import audit_verify, tamper, write_entries

pytestmark = pytest.mark.django_db


def shift_from_five(chain_name):
    """Make room at sequence 5 (through free positions: the unique check is row by row)."""
    tamper(
        "UPDATE audit_auditentry SET sequence = sequence + 1000 WHERE chain = %s AND sequence >= 5",
        [chain_name],
    )
    tamper(
        "UPDATE audit_auditentry SET sequence = sequence - 999 WHERE chain = %s AND sequence >= 1000",
        [chain_name],
    )


@pytest.fixture
def chain(org, owner):
    """Ten entries in Acme's chain; sequence n is chain[n - 1]."""
    return write_entries(org, owner, 10)


def test_an_untouched_chain_verifies_and_gets_a_signed_checkpoint(org, chain, checkpoint_dir):
    status, out, _ = audit_verify("--org", str(org.pk))

    assert status == 0
    assert f"org:{org.pk}: ok, 10 entries" in out
    saved = checkpoints.read(f"org:{org.pk}")
    assert (saved.length, saved.head_hash, saved.head_entry_id) == (
        10,
        chain[-1].entry_hash,
        chain[-1].pk,
    )
    assert json.loads((checkpoint_dir / f"org-{org.pk}.json").read_text())["signature"]


def test_without_arguments_every_chain_is_checked_including_the_deployment_one(org, chain):
    record_audit(
        actor=None,
        organization=None,
        action="operator.shell.bootstrap",
        subject=("shell", "bootstrap", ""),
    )
    status, out, _ = audit_verify()
    assert status == 0
    assert f"org:{org.pk}: ok" in out and "deployment: ok, 1 entries" in out


def test_an_edited_entry_is_named(org, chain):
    edited = chain[4]
    tamper("UPDATE audit_auditentry SET details = '{\"n\": 500}' WHERE id = %s", [edited.pk])

    status, _, err = audit_verify("--org", str(org.pk))

    assert status == 1
    assert f"entry #{edited.pk} (sequence 5) no longer matches its hash (edited)" in err


def test_an_edit_of_the_actor_is_detected_too(org, chain, outsider):
    tamper("UPDATE audit_auditentry SET actor_id = %s WHERE id = %s", [outsider.pk, chain[2].pk])
    status, _, err = audit_verify("--org", str(org.pk))
    assert status == 1 and f"entry #{chain[2].pk} (sequence 3)" in err


def test_reordered_entries_are_named_at_the_first_position_that_moved(org, chain):
    fourth, fifth = chain[3], chain[4]
    # Through a free position: the (chain, sequence) constraint is checked row by row.
    tamper("UPDATE audit_auditentry SET sequence = 1000 WHERE id = %s", [fourth.pk])
    tamper("UPDATE audit_auditentry SET sequence = 4 WHERE id = %s", [fifth.pk])
    tamper("UPDATE audit_auditentry SET sequence = 5 WHERE id = %s", [fourth.pk])

    status, _, err = audit_verify("--org", str(org.pk))

    assert status == 1
    assert f"entry #{fifth.pk} (sequence 4) does not link to the entry before it" in err


def test_an_inserted_entry_is_named(org, chain, owner):
    shift_from_five(chain[0].chain)
    tamper(
        """INSERT INTO audit_auditentry (chain, sequence, created_at, organization_id, actor_id, actor_label,
               action, subject_type, subject_id, subject_label, details, prev_hash, entry_hash)
           VALUES (%s, 5, now(), %s, %s, %s, 'org.budget_changed', 'orgs.Organization', %s, 'Acme', '{}', %s, %s)
           RETURNING id""",
        [chain[0].chain, org.pk, owner.pk, owner.email, str(org.pk), chain[3].entry_hash, "f" * 64],
    )
    inserted = AuditEntry.objects.get(chain=chain[0].chain, sequence=5)

    status, _, err = audit_verify("--org", str(org.pk))

    assert status == 1
    assert f"entry #{inserted.pk} (sequence 5) no longer matches its hash" in err


def test_a_well_forged_insert_is_named_by_the_entry_it_displaced(org, chain, owner):
    """A forger who computes a correct hash for the inserted row still breaks the next link."""
    shift_from_five(chain[0].chain)
    forged = {
        "chain": chain[0].chain,
        "sequence": 5,
        "created_at": chain[3].created_at,
        "organization_id": org.pk,
        "actor_id": owner.pk,
        "actor_label": owner.email,
        "impersonator_id": None,
        "action": "org.budget_changed",
        "subject_type": "orgs.Organization",
        "subject_id": str(org.pk),
        "subject_label": "Acme",
        "details": {},
        "ip_address": None,
        "prev_hash": chain[3].entry_hash,
    }
    tamper(
        """INSERT INTO audit_auditentry (chain, sequence, created_at, organization_id, actor_id, actor_label,
               action, subject_type, subject_id, subject_label, details, prev_hash, entry_hash)
           VALUES (%s, 5, %s, %s, %s, %s, 'org.budget_changed', 'orgs.Organization', %s, 'Acme', '{}', %s, %s)""",
        [
            chain[0].chain,
            forged["created_at"],
            org.pk,
            owner.pk,
            owner.email,
            str(org.pk),
            chain[3].entry_hash,
            entry_hash(forged),
        ],
    )

    status, _, err = audit_verify("--org", str(org.pk))

    assert status == 1
    assert f"entry #{chain[4].pk} (sequence 6)" in err


def test_an_entry_deleted_from_the_middle_is_reported_at_the_gap(org, chain):
    tamper("DELETE FROM audit_auditentry WHERE id = %s", [chain[4].pk])

    status, _, err = audit_verify("--org", str(org.pk))

    assert status == 1
    assert f"entry #{chain[5].pk} (sequence 6) follows a gap: sequence 5 missing" in err


def test_trimming_the_newest_entries_is_caught_by_the_checkpoint(org, chain):
    assert audit_verify("--org", str(org.pk))[0] == 0  # writes the checkpoint at sequence 10
    tamper("DELETE FROM audit_auditentry WHERE id IN (%s, %s)", [chain[8].pk, chain[9].pk])

    status, _, err = audit_verify("--org", str(org.pk))

    assert status == 1
    assert "the newest entries were removed: the chain ends at sequence 8" in err
    assert f"recorded 10 entries up to #{chain[9].pk}; sequence 9 onwards is missing" in err


def test_a_failed_chain_keeps_its_checkpoint_as_evidence(org, chain):
    audit_verify("--org", str(org.pk))
    tamper("DELETE FROM audit_auditentry WHERE id = %s", [chain[9].pk])
    audit_verify("--org", str(org.pk))
    write_checkpoints()  # the hourly task does not move it either

    assert checkpoints.read(f"org:{org.pk}").length == 10
    assert audit_verify("--org", str(org.pk))[0] == 1


def test_a_whole_chain_deleted_is_caught_with_or_without_naming_the_organization(org, chain):
    audit_verify()
    tamper("DELETE FROM audit_auditentry WHERE chain = %s", [f"org:{org.pk}"])

    for args in ((), ("--org", str(org.pk))):
        status, _, err = audit_verify(*args)
        assert status == 1
        assert f"org:{org.pk}: FAILED — the whole chain is gone" in err
        assert f"recorded 10 entries (head #{chain[9].pk})" in err


def test_a_chain_reforged_after_an_edit_no_longer_matches_its_checkpoint(org, chain):
    """An operator who edits entry 5 and recomputes every later hash leaves a consistent chain;
    the checkpoint's head hash is what still tells."""
    audit_verify("--org", str(org.pk))
    tamper("UPDATE audit_auditentry SET details = '{\"n\": 500}' WHERE id = %s", [chain[4].pk])
    previous = chain[3].entry_hash
    for entry in (
        AuditEntry.objects.filter(chain=chain[0].chain, sequence__gte=5)
        .order_by("sequence")
        .values()
    ):
        entry["prev_hash"] = previous
        previous = entry_hash(entry)
        tamper(
            "UPDATE audit_auditentry SET prev_hash = %s, entry_hash = %s WHERE id = %s",
            [entry["prev_hash"], previous, entry["id"]],
        )

    status, _, err = audit_verify("--org", str(org.pk))

    assert status == 1
    assert f"entry #{chain[9].pk} (sequence 10) differs from the checkpoint" in err


def test_an_edited_checkpoint_file_is_not_trusted(org, chain, checkpoint_dir):
    audit_verify("--org", str(org.pk))
    path = checkpoint_dir / f"org-{org.pk}.json"
    document = json.loads(path.read_text())
    document["length"] = 8
    path.write_text(json.dumps(document))

    status, _, err = audit_verify("--org", str(org.pk))

    assert status == 1
    assert "checkpoint not trusted" in err and "signature does not match" in err


def test_the_hourly_task_moves_a_sound_checkpoint_forward(org, owner, chain):
    audit_verify("--org", str(org.pk))
    newer = write_entries(org, owner, 3)

    reports = write_checkpoints()

    assert all(report.ok for report in reports)
    assert checkpoints.read(f"org:{org.pk}").head_entry_id == newer[-1].pk


def test_the_hourly_task_refuses_a_chain_trimmed_since_its_checkpoint(org, owner, chain):
    audit_verify("--org", str(org.pk))
    tamper("DELETE FROM audit_auditentry WHERE id = %s", [chain[9].pk])
    write_entries(org, owner, 2)  # appended after the trim: longer than the checkpoint again

    report = next(report for report in write_checkpoints() if report.chain == f"org:{org.pk}")

    assert not report.ok and "sequence 10" in report.problem
    assert checkpoints.read(f"org:{org.pk}").head_entry_id == chain[9].pk


@pytest.mark.django_db(transaction=True)
def test_the_agenticos_command_exits_non_zero_on_a_broken_chain(org, owner, checkpoint_dir):
    entries = write_entries(org, owner, 3)
    tamper("UPDATE audit_auditentry SET action = 'nothing' WHERE id = %s", [entries[1].pk])
    database = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": database_url_of(database),
        "AUDIT_CHECKPOINT_DIR": str(checkpoint_dir),
        "AUDIT_CHECKPOINT_KEY": "test-checkpoint-key-0123456789abcdef",
        "DJANGO_SETTINGS_MODULE": "agenticos.settings.base",
    }
    agenticos = Path(sys.executable).with_name("agenticos")

    result = subprocess.run(
        [str(agenticos), "audit-verify"], env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode == 1, result.stdout + result.stderr
    assert f"entry #{entries[1].pk} (sequence 2) no longer matches its hash" in result.stderr
