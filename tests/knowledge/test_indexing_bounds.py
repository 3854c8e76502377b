"""What one upload may cost a worker: a Word or OpenDocument body is streamed, never held as a
tree; a paragraph with nothing to read is no chunk; reading stops at the extraction cap; and an
organization indexes at most KNOWLEDGE_MAX_INDEXING_PER_ORG documents at once, the rest waiting
queued."""

import datetime as dt
import io
import tracemalloc
import zipfile

import pytest
from django.test import override_settings
from django.utils import timezone

from apps.knowledge.embedders import local_embedder
from apps.knowledge.models import Chunk, Document
from apps.knowledge.services import collection_create, document_index, document_upload
from tests.capabilities.web.documents import W

pytestmark = pytest.mark.django_db

ODT_MIMETYPE = "application/vnd.oasis.opendocument.text"
TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
# Empty paragraphs in the pathological body: 150,000 of them make 0.9 MB of XML in a 2 KB zip.
# Held as a tree (the parser before this one) they cost 14 MB here (95 MB per million; the
# prober's 60 MB body took a worker from 889 to 1,705 MB); streamed, well under one.
EMPTY_PARAGRAPHS = 150_000
PEAK_BOUND_BYTES = 4 * 1024 * 1024


@pytest.fixture
def handbook(org, owner):
    return collection_create(actor=owner, organization=org, name="Handbook")


@pytest.fixture
def eager_jobs(django_capture_on_commit_callbacks):
    """Jobs enqueued on commit run here, by Celery in eager mode: the worker's own task body."""
    from agenticos.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield lambda: django_capture_on_commit_callbacks(execute=True)
    app.conf.task_always_eager = eager


def _docx_body(xml_paragraphs: bytes, *, tail: bytes = b"</w:body></w:document>") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w") as member:
            member.write(f'<w:document xmlns:w="{W}"><w:body>'.encode())
            member.write(xml_paragraphs)
            member.write(tail)
    return out.getvalue()


def _odt(body: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", ODT_MIMETYPE)
        archive.writestr(
            "content.xml",
            f'<office:document-content xmlns:office="{OFFICE_NS}" xmlns:text="{TEXT_NS}">'
            f"<office:body><office:text>{body}</office:text></office:body>"
            "</office:document-content>",
        )
    return out.getvalue()


def test_a_docx_of_empty_paragraphs_is_indexed_in_bounded_memory_into_few_chunks(owner, handbook):
    empty = b"<w:p/>" * EMPTY_PARAGRAPHS
    # Paragraphs a reader sees nothing in: spaces, a no-break space, zero-width characters.
    blank = "".join(
        f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"
        for text in ("   ", "\u00a0", "\u200b\u200b", "\u200d\ufeff")
    ).encode()
    data = _docx_body(
        b"<w:p><w:r><w:t>Refunds are paid within 30 days.</w:t></w:r></w:p>"
        + empty
        + blank * 1000
        + b"<w:p><w:r><w:t>Shipping takes two days.</w:t></w:r></w:p>"
    )
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.getinfo("word/document.xml").file_size > 900_000 > 100 * len(data)
    document = document_upload(actor=owner, collection=handbook, file_name="huge.docx", data=data)
    local_embedder().embed(["the model is loaded before measuring"])

    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        status = document_index(document.pk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert status == "ready"
    assert peak - before < PEAK_BOUND_BYTES, f"peak grew by {peak - before:,} bytes"
    document.refresh_from_db()
    chunks = list(Chunk.objects.filter(document=document).values_list("text", flat=True))
    assert document.chunks_total == len(chunks) == 1
    assert chunks == ["Refunds are paid within 30 days.\nShipping takes two days."]


@override_settings(KNOWLEDGE_MAX_DOCUMENT_CHARS=1000)
def test_reading_a_docx_stops_at_the_extraction_cap(owner, handbook):
    """Past the cap the body is not even read: a document broken after it still indexes."""
    sentence = "Each paragraph says a little more about refunds and shipping."
    paragraphs = f"<w:p><w:r><w:t>{sentence}</w:t></w:r></w:p>".encode() * 2000
    data = _docx_body(paragraphs, tail=b"<w:p><broken")
    document = document_upload(actor=owner, collection=handbook, file_name="long.docx", data=data)
    assert document_index(document.pk) == "ready"
    texts = Chunk.objects.filter(document=document).values_list("text", flat=True)
    assert 900 <= sum(len(text) for text in texts) <= 1000


@override_settings(KNOWLEDGE_MAX_DOCUMENT_CHARS=1000)
def test_reading_stops_at_the_cap_inside_one_long_paragraph(owner, handbook):
    words = "refunds and shipping " * 100_000  # 2.1 MB of text in a single paragraph
    data = _docx_body(f"<w:p><w:r><w:t>{words}</w:t></w:r>".encode(), tail=b"<broken")
    document = document_upload(actor=owner, collection=handbook, file_name="one.docx", data=data)
    assert document_index(document.pk) == "ready"
    texts = Chunk.objects.filter(document=document).values_list("text", flat=True)
    assert 0 < sum(len(text) for text in texts) <= 1000


def test_an_odt_keeps_its_pages_and_drops_its_empty_paragraphs(owner, handbook):
    body = (
        "<text:h>Refund policy</text:h><text:p>Refunds are paid<text:s text:c='2'/>within 30"
        " days.</text:p>"
        + "<text:p/><text:p>  </text:p>" * 5000
        + "<text:p><text:soft-page-break/>Shipping takes two days.</text:p>"
        + "<text:p>Returns go to the <text:span>main</text:span> warehouse.</text:p>"
    )
    document = document_upload(
        actor=owner, collection=handbook, file_name="policy.odt", data=_odt(body)
    )
    assert document_index(document.pk) == "ready", Document.objects.get(pk=document.pk)
    chunks = list(Chunk.objects.filter(document=document).values_list("page", "text"))
    assert chunks == [
        (1, "Refund policy\nRefunds are paid  within 30 days."),
        (2, "Shipping takes two days.\nReturns go to the main warehouse."),
    ]
    document.refresh_from_db()
    assert document.pages == 2


def test_a_docx_that_declares_entities_is_refused_with_the_reason(owner, handbook):
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(
            "word/document.xml",
            laughs
            + f'<w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t>&lol2;</w:t>'
            "</w:r></w:p></w:body></w:document>".encode(),
        )
    document = document_upload(
        actor=owner, collection=handbook, file_name="laughs.docx", data=out.getvalue()
    )
    assert document_index(document.pk) == "failed"
    document.refresh_from_db()
    assert "declares a DTD or entities" in document.failure_reason


def test_a_text_file_with_nul_bytes_is_indexed_without_them(owner, handbook):
    data = b"Refunds\x00 are paid within 30 days.\x00\x00\n\nShipping takes two days.\x00"
    document = document_upload(actor=owner, collection=handbook, file_name="nul.txt", data=data)
    assert document_index(document.pk) == "ready"
    [text] = Chunk.objects.filter(document=document).values_list("text", flat=True)
    assert text == "Refunds are paid within 30 days.\nShipping takes two days."


def test_a_utf16_text_file_without_a_byte_order_mark_reads_once_its_nuls_are_gone(owner, handbook):
    data = "Refunds are paid within 30 days.".encode("utf-16-le")
    document = document_upload(actor=owner, collection=handbook, file_name="wide.txt", data=data)
    assert document_index(document.pk) == "ready"
    [text] = Chunk.objects.filter(document=document).values_list("text", flat=True)
    assert text == "Refunds are paid within 30 days."


def test_a_text_file_of_only_nul_bytes_fails_with_the_reason(owner, handbook):
    document = document_upload(
        actor=owner, collection=handbook, file_name="zeros.txt", data=b"\x00" * 64
    )
    assert document_index(document.pk) == "failed"
    document.refresh_from_db()
    assert document.failure_reason == "The file could not be read: a text file with no text in it."


# --- the per-organization indexing quota ---------------------------------------------------


def _indexing_elsewhere(owner, collection, name: str) -> Document:
    """A document a live worker is indexing right now (its lease a minute ahead)."""
    document = document_upload(actor=owner, collection=collection, file_name=name, data=b"Busy.")
    Document.objects.filter(pk=document.pk).update(
        status="indexing", attempts=1, lease_expires_at=timezone.now() + dt.timedelta(minutes=1)
    )
    return document


@override_settings(KNOWLEDGE_MAX_INDEXING_PER_ORG=1)
def test_over_the_quota_a_document_waits_queued_until_a_slot_frees(
    owner, outsider, other_org, handbook, eager_jobs
):
    busy = _indexing_elsewhere(owner, handbook, "busy.txt")
    waiting = document_upload(
        actor=owner, collection=handbook, file_name="next.txt", data=b"Refunds within 30 days."
    )
    assert document_index(waiting.pk) is None
    waiting.refresh_from_db()
    assert waiting.status == "queued" and waiting.attempts == 0

    # The quota is the organization's: another one indexes meanwhile.
    theirs = collection_create(actor=outsider, organization=other_org, name="Theirs")
    foreign = document_upload(
        actor=outsider, collection=theirs, file_name="t.txt", data=b"Their own text."
    )
    assert document_index(foreign.pk) == "ready"

    # The busy document ends; the sweep finds the slot free and starts the one waiting.
    Document.objects.filter(pk=busy.pk).update(status="ready", lease_expires_at=None)
    from apps.knowledge.services import documents_sweep_lapsed_leases

    with eager_jobs():
        documents_sweep_lapsed_leases()
    waiting.refresh_from_db()
    assert waiting.status == "ready"


@override_settings(KNOWLEDGE_MAX_INDEXING_PER_ORG=1)
def test_a_document_that_ends_starts_the_next_one_waiting(owner, handbook, eager_jobs):
    first, second, third = (
        document_upload(
            actor=owner, collection=handbook, file_name=f"{n}.txt", data=f"Text {n}.".encode()
        )
        for n in ("one", "two", "three")
    )
    with eager_jobs():
        assert document_index(first.pk) == "ready"
    statuses = dict(Document.objects.values_list("file_name", "status"))
    assert statuses == {"one.txt": "ready", "two.txt": "ready", "three.txt": "ready"}
    assert {second.pk, third.pk} <= set(Chunk.objects.values_list("document_id", flat=True))


@override_settings(KNOWLEDGE_MAX_INDEXING_PER_ORG=2)
def test_a_lapsed_lease_holds_no_slot_of_the_quota(owner, handbook):
    _indexing_elsewhere(owner, handbook, "a.txt")
    dead = _indexing_elsewhere(owner, handbook, "b.txt")
    Document.objects.filter(pk=dead.pk).update(
        lease_expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    document = document_upload(
        actor=owner, collection=handbook, file_name="c.txt", data=b"Refunds within 30 days."
    )
    assert document_index(document.pk) == "ready"


@pytest.mark.django_db(transaction=True)
@override_settings(KNOWLEDGE_MAX_INDEXING_PER_ORG=1)
def test_two_claims_of_one_organization_take_turns_so_the_quota_holds(owner, handbook):
    """The last free slot cannot go to two workers at once: a claim waits for the one in
    progress (another worker's, played here by the test's own transaction) and then sees it."""
    import threading

    from django.db import connection, transaction

    from apps.knowledge.services import _QUOTA_LOCK_CLASS

    other = document_upload(actor=owner, collection=handbook, file_name="a.txt", data=b"A text.")
    mine = document_upload(actor=owner, collection=handbook, file_name="b.txt", data=b"B text.")
    outcome: list = []

    def worker() -> None:
        try:
            outcome.append(document_index(mine.pk))
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)",
                [_QUOTA_LOCK_CLASS, handbook.organization_id],
            )
            thread.start()
            waiting = threading.Event()
            deadline = timezone.now() + dt.timedelta(seconds=60)
            # Until the worker's claim is seen waiting for the organization's lock.
            while timezone.now() < deadline:
                cursor.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    " AND classid = %s AND objid = %s",
                    [_QUOTA_LOCK_CLASS, handbook.organization_id],
                )
                if cursor.fetchone()[0]:
                    break
                waiting.wait(0.05)
            else:
                pytest.fail("the claim did not wait for the organization's claim lock")
        # The other worker's claim, committed as this transaction ends and the lock is released.
        Document.objects.filter(pk=other.pk).update(
            status="indexing", attempts=1, lease_expires_at=timezone.now() + dt.timedelta(minutes=1)
        )
    thread.join(timeout=60)
    assert outcome == [None]
    assert Document.objects.get(pk=mine.pk).status == "queued"
