"""Audit benchmarks (`make bench`): audit-verify over a long chain, and a 10,000-row export.

AUDIT_BENCH_ENTRIES sets the chain length (default one million). The chain is written with
PostgreSQL COPY and real hashes, so verification does the full work: every entry re-encoded,
re-hashed and linked.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.http import QueryDict

from apps.audit import chain as hash_chain
from apps.audit.exports import EXPORT_ROW_LIMIT, audit_export
from apps.audit.verify import verify_chain
from apps.orgs.choices import Role
from apps.orgs.models import Membership, Organization, User

ENTRIES = int(os.environ.get("AUDIT_BENCH_ENTRIES", "1000000"))
COLUMNS = (*hash_chain.HASHED_FIELDS, "entry_hash")


def _copy_chain(organization: Organization, actor: User, count: int, start: datetime) -> None:
    chain = f"org:{organization.pk}"
    prev_hash = hash_chain.GENESIS_HASH
    sql = f"COPY audit_auditentry ({', '.join(COLUMNS)}) FROM STDIN"
    details_at = hash_chain.HASHED_FIELDS.index("details")
    with connection.cursor() as cursor, cursor.connection.cursor().copy(sql) as copy:
        for sequence in range(1, count + 1):
            fields = {
                "chain": chain,
                "sequence": sequence,
                "created_at": start + timedelta(milliseconds=sequence),
                "organization_id": organization.pk,
                "actor_id": actor.pk,
                "actor_label": actor.email,
                "impersonator_id": None,
                "action": "bench.entry",
                "subject_type": "orgs.Organization",
                "subject_id": str(organization.pk),
                "subject_label": organization.name,
                "details": {"n": sequence, "note": "benchmark"},
                "ip_address": None,
                "prev_hash": prev_hash,
            }
            prev_hash = hash_chain.entry_hash(fields)
            row = [fields[name] for name in hash_chain.HASHED_FIELDS] + [prev_hash]
            row[details_at] = json.dumps(fields["details"])
            copy.write_row(row)


@pytest.mark.bench
@pytest.mark.django_db
def test_bench_audit_verify_and_export(settings, tmp_path):
    settings.AUDIT_CHECKPOINT_DIR = tmp_path
    organization = Organization.objects.create(name="Bench", slug="bench")
    actor = User.objects.create_user(email="bench@agenticos.test", password=None)
    Membership.objects.create(organization=organization, user=actor, role=Role.OWNER)
    start = datetime(2025, 1, 1, tzinfo=UTC)

    began = time.perf_counter()
    _copy_chain(organization, actor, ENTRIES, start)
    written = time.perf_counter() - began

    began = time.perf_counter()
    report = verify_chain(f"org:{organization.pk}")
    verified = time.perf_counter() - began
    assert report.ok, report.problem
    assert report.length == ENTRIES

    # The first 10,000 entries sit in the first 10,000 milliseconds after `start`.
    window_end = start + timedelta(milliseconds=min(ENTRIES, EXPORT_ROW_LIMIT))
    params = QueryDict(mutable=True)
    params.update(
        {"created_from": start.isoformat(), "created_to": window_end.isoformat(), "fmt": "csv"}
    )
    began = time.perf_counter()
    result = audit_export(user=actor, organization=organization, params=params, surface="bench")
    exported = time.perf_counter() - began
    assert result.row_count == min(ENTRIES, EXPORT_ROW_LIMIT)

    print(
        f"\n[bench] audit: wrote {ENTRIES:,} chained entries in {written:.1f}s; "
        f"audit-verify {ENTRIES / verified:,.0f} entries/s ({verified:.1f}s for {ENTRIES:,}); "
        f"export of {result.row_count:,} rows as CSV {exported * 1000:.0f} ms ({len(result.body):,} bytes)"
    )
