"""Two writers never fork a chain: appends to one organization serialize on its lock."""

import threading

import pytest
from django.db import close_old_connections, connection, transaction

from apps.audit.models import AuditEntry
from apps.audit.services import record_audit
from apps.audit.verify import verify_chain

WRITERS = 50


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_writers_leave_one_unbroken_chain(org, owner):
    start = threading.Barrier(WRITERS)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            start.wait()
            with transaction.atomic():
                record_audit(
                    actor=owner,
                    organization=org,
                    action="test.concurrent",
                    subject=org,
                    details={"writer": n},
                )
        except BaseException as error:  # reported below, with the writer that hit it
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    close_old_connections()

    assert errors == []
    assert sorted(
        AuditEntry.objects.filter(chain=f"org:{org.pk}").values_list("sequence", flat=True)
    ) == list(range(1, WRITERS + 1))
    writers = set(AuditEntry.objects.values_list("details__writer", flat=True))
    assert writers == set(range(WRITERS))
    report = verify_chain(f"org:{org.pk}")
    assert report.ok, report.problem
    assert report.length == WRITERS
