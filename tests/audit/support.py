"""Helpers for the audit tests: writing entries, tampering with the table, running audit-verify."""

from __future__ import annotations

import io

from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from apps.audit.models import AuditEntry
from apps.audit.services import record_audit


def write_entries(
    organization, actor, count: int, *, action: str = "test.action"
) -> list[AuditEntry]:
    return [
        record_audit(
            actor=actor,
            organization=organization,
            action=action,
            subject=organization,
            details={"n": n},
        )
        for n in range(1, count + 1)
    ]


def tamper(sql: str, params=()) -> None:
    """Run SQL against the audit table as a database operator would: trigger disabled."""
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditentry DISABLE TRIGGER audit_entry_append_only")
        cursor.execute(sql, params)
        cursor.execute("ALTER TABLE audit_auditentry ENABLE TRIGGER audit_entry_append_only")


def audit_verify(*args: str) -> tuple[int, str, str]:
    """Run `audit-verify` in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("audit_verify", *args, stdout=out, stderr=err)
    except CommandError as error:
        return error.returncode, out.getvalue(), err.getvalue() + str(error)
    return 0, out.getvalue(), err.getvalue()
