"""A document's indexing worker holds it by a lease; a worker that died leaves a lease that
lapses, and the indexing sweep takes the document back (requeued, or failed after
INDEX_MAX_ATTEMPTS with a reason the console shows). A re-index of such a document is accepted.
"""

import datetime as dt
import threading

import pytest
from django.utils import timezone

from agenticos.schedule import SCHEDULE, single_flight
from apps.knowledge import services
from apps.knowledge.models import Chunk, Document
from apps.knowledge.services import (
    INDEX_MAX_ATTEMPTS,
    collection_create,
    document_index,
    document_upload,
    documents_sweep_lapsed_leases,
)
from apps.knowledge.tasks import sweep_indexing_leases

pytestmark = pytest.mark.django_db

URL = "/api/v1/knowledge/collections/"
TEXT = b"Refunds are paid within 30 days of the request. Shipping takes two days."


@pytest.fixture
def handbook(org, owner):
    return collection_create(actor=owner, organization=org, name="Handbook")


@pytest.fixture
def document(owner, handbook):
    return document_upload(actor=owner, collection=handbook, file_name="policy.txt", data=TEXT)


@pytest.fixture
def eager_jobs(django_capture_on_commit_callbacks):
    """Jobs enqueued on commit run here, by Celery in eager mode: the worker's own task body."""
    from agenticos.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield lambda: django_capture_on_commit_callbacks(execute=True)
    app.conf.task_always_eager = eager


def _claimed_by_a_worker(document, *, lease_in_seconds: int, attempts: int = 1) -> None:
    """The row as a worker's claim leaves it; a lease in the past is a worker that died."""
    Document.objects.filter(pk=document.pk).update(
        status="indexing",
        attempts=attempts,
        chunks_total=3,
        chunks_done=1,
        lease_expires_at=timezone.now() + dt.timedelta(seconds=lease_in_seconds),
    )


def test_a_document_whose_worker_died_is_requeued_by_the_sweep_and_indexed(document, eager_jobs):
    _claimed_by_a_worker(document, lease_in_seconds=-5)
    with eager_jobs():
        assert documents_sweep_lapsed_leases() == 1
        document.refresh_from_db()
        assert document.status == "queued" and document.lease_expires_at is None
    # The sweep started it again once it committed: the worker's task indexed it.
    document.refresh_from_db()
    assert document.status == "ready", document.failure_reason
    assert document.attempts == 2 and document.lease_expires_at is None
    assert Chunk.objects.filter(document=document).count() == document.chunks_total == 1


def test_a_live_lease_is_left_alone_and_its_reindex_refused(client_for, owner, org, document):
    _claimed_by_a_worker(document, lease_in_seconds=60)
    assert documents_sweep_lapsed_leases() == 0
    document.refresh_from_db()
    assert document.status == "indexing" and document.attempts == 1
    response = client_for(owner, org).post(
        f"{URL}{document.collection_id}/documents/{document.pk}/reindex/"
    )
    assert response.status_code == 422
    assert "indexing" in response.json()["status"][0]


def test_a_document_lost_by_its_worker_every_time_fails_with_the_reason_shown(
    client_for, client, member, org, document
):
    _claimed_by_a_worker(document, lease_in_seconds=-5, attempts=INDEX_MAX_ATTEMPTS)
    assert documents_sweep_lapsed_leases() == 1
    shown = (
        client_for(member, org)
        .get(f"{URL}{document.collection_id}/documents/{document.pk}/")
        .json()
    )
    assert shown["status"] == "failed"
    assert shown["progress"].startswith(f"failed: Indexing stopped {INDEX_MAX_ATTEMPTS} times")
    assert "Re-index to try again" in shown["failure_reason"]
    # The console's collection page shows the same sentence.
    client.force_login(member)
    page = client.get(f"/knowledge/{document.collection_id}/")
    assert f"Indexing stopped {INDEX_MAX_ATTEMPTS} times" in page.content.decode()


def test_reindex_after_the_sweep_failed_it_indexes_afresh(client_for, owner, org, document):
    _claimed_by_a_worker(document, lease_in_seconds=-5, attempts=INDEX_MAX_ATTEMPTS)
    documents_sweep_lapsed_leases()
    response = client_for(owner, org).post(
        f"{URL}{document.collection_id}/documents/{document.pk}/reindex/"
    )
    assert response.status_code == 200 and response.json()["status"] == "queued"
    assert document_index(document.pk) == "ready"
    document.refresh_from_db()
    assert document.attempts == 1 and document.failure_reason == ""


def test_reindex_of_a_document_whose_lease_lapsed_is_accepted_before_any_sweep(
    client_for, owner, org, document
):
    _claimed_by_a_worker(document, lease_in_seconds=-5)
    response = client_for(owner, org).post(
        f"{URL}{document.collection_id}/documents/{document.pk}/reindex/"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "queued"
    assert document_index(document.pk) == "ready"


def test_a_document_left_indexing_without_any_lease_counts_as_lapsed(document):
    """Claimed by a worker from before leases existed: nothing would ever renew it."""
    Document.objects.filter(pk=document.pk).update(status="indexing", lease_expires_at=None)
    assert documents_sweep_lapsed_leases() == 1
    document.refresh_from_db()
    assert document.status == "queued"


def test_a_worker_whose_claim_was_taken_back_writes_nothing_more(document):
    """The first worker was thought dead, its document requeued and claimed again: when it
    wakes up, its writes are fenced off by the attempt number."""
    _claimed_by_a_worker(document, lease_in_seconds=60, attempts=2)
    Document.objects.filter(pk=document.pk).update(chunks_total=0, chunks_done=0)
    assert services._index_claimed(document.pk, attempt=1) is None
    document.refresh_from_db()
    assert document.status == "indexing" and document.attempts == 2
    assert document.chunks_total == 0 and not Chunk.objects.filter(document=document).exists()


def test_the_sweep_task_takes_its_lock_and_a_second_beat_does_nothing(document):
    _claimed_by_a_worker(document, lease_in_seconds=-5)
    with single_flight("knowledge.sweep_indexing_leases", 30) as held:
        assert held
        assert sweep_indexing_leases() == 0
    document.refresh_from_db()
    assert document.status == "indexing"
    assert sweep_indexing_leases() == 1


def test_the_sweep_is_declared_in_the_schedule_with_expires_shorter_than_its_period():
    from celery import current_app

    [job] = [j for j in SCHEDULE if j.task == "apps.knowledge.tasks.sweep_indexing_leases"]
    assert job.expires_seconds < job.every_seconds <= 60
    assert job.task in current_app.tasks


@pytest.mark.django_db(transaction=True)
def test_the_lease_is_renewed_while_the_job_runs_and_no_longer_once_it_ends(
    owner, handbook, monkeypatch
):
    """The keeper thread renews on its own connection, whatever the job is doing meanwhile."""
    monkeypatch.setattr(services, "INDEX_LEASE_SECONDS", 0.3)  # renewed every 0.1 s
    document = document_upload(actor=owner, collection=handbook, file_name="a.txt", data=TEXT)
    _claimed_by_a_worker(document, lease_in_seconds=-5, attempts=1)
    first = Document.objects.get(pk=document.pk).lease_expires_at
    pause = threading.Event()
    with services._LeaseKeeper(document.pk, attempt=1) as keeper:
        deadline = timezone.now() + dt.timedelta(seconds=60)
        while timezone.now() < deadline:
            if Document.objects.get(pk=document.pk).lease_expires_at > timezone.now():
                break
            pause.wait(0.05)
        else:
            pytest.fail("the lease was never renewed")
    assert not keeper._thread.is_alive()
    assert Document.objects.get(pk=document.pk).lease_expires_at > first
