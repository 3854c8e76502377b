"""/api/v1/knowledge/: collections and documents, with the no-permission / permission /
other-organization triplet, the upload's size limit and the document's status and progress."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from apps.audit.models import AuditEntry
from apps.knowledge.models import Chunk, Document
from apps.knowledge.services import collection_create, document_index, document_upload
from tests.capabilities.web.documents import pdf

pytestmark = pytest.mark.django_db

URL = "/api/v1/knowledge/collections/"


@pytest.fixture
def handbook(org, owner):
    return collection_create(actor=owner, organization=org, name="Handbook")


@pytest.fixture
def theirs(other_org, outsider):
    return collection_create(actor=outsider, organization=other_org, name="Theirs")


def _upload(client, collection, name="policy.pdf", data=None):
    data = data if data is not None else pdf(["Refunds within 30 days.", "Shipping in two days."])
    return client.post(
        f"{URL}{collection.pk}/documents/",
        {"file": SimpleUploadedFile(name, data)},
        format="multipart",
    )


def test_a_builder_creates_a_collection_and_uploads_a_document_that_is_queued(
    client_for, builder, org
):
    client = client_for(builder, org)
    created = client.post(URL, {"name": "Policies"}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["name"] == "Policies" and body["embedding_model"] == "all-MiniLM-L6-v2"
    collection_id = body["id"]
    from apps.knowledge.models import Collection

    uploaded = _upload(client, Collection.objects.get(pk=collection_id))
    assert uploaded.status_code == 201, uploaded.json()
    document = uploaded.json()
    assert document["status"] == "queued" and document["file_name"] == "policy.pdf"
    shown = client.get(f"{URL}{collection_id}/documents/{document['id']}/")
    assert shown.status_code == 200 and shown.json()["progress"] == "queued"
    actions = set(AuditEntry.objects.filter(organization=org).values_list("action", flat=True))
    assert {"knowledge.collection.create", "knowledge.document.upload"} <= actions


def test_a_document_shows_its_progress_and_becomes_ready(client_for, member, owner, org, handbook):
    document = document_upload(
        actor=owner, collection=handbook, file_name="a.txt", data=b"Hello there. " * 200
    )
    client = client_for(member, org)
    url = f"{URL}{handbook.pk}/documents/{document.pk}/"
    Document.objects.filter(pk=document.pk).update(status="indexing", chunks_total=4, chunks_done=1)
    assert client.get(url).json()["progress"] == "indexing 1/4 chunks"
    Document.objects.filter(pk=document.pk).update(status="queued")
    document_index(document.pk)
    shown = client.get(url).json()
    assert shown["status"] == "ready" and shown["chunks_done"] == shown["chunks_total"] > 0


def test_a_member_reads_but_cannot_change_knowledge(client_for, member, org, handbook):
    client = client_for(member, org)
    assert client.get(URL).status_code == 200
    assert client.get(f"{URL}{handbook.pk}/documents/").status_code == 200
    assert client.post(URL, {"name": "Mine"}, format="json").status_code == 403
    assert _upload(client, handbook).status_code == 403
    assert client.delete(f"{URL}{handbook.pk}/").status_code == 403
    assert not Document.objects.exists()


def test_another_organizations_collection_is_a_404_like_a_missing_one(
    client_for, builder, org, theirs
):
    client = client_for(builder, org)
    foreign = client.get(f"{URL}{theirs.pk}/")
    missing = client.get(f"{URL}999999/")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert _upload(client, theirs).status_code == 404
    assert client.get(f"{URL}{theirs.pk}/documents/").status_code == 404
    assert client.delete(f"{URL}{theirs.pk}/").status_code == 404
    assert [c["name"] for c in client.get(URL).json()] == []


def test_a_document_of_another_collection_is_a_404(
    client_for, owner, outsider, org, handbook, theirs
):
    foreign = document_upload(actor=outsider, collection=theirs, file_name="x.txt", data=b"secret")
    client = client_for(owner, org)
    assert client.get(f"{URL}{handbook.pk}/documents/{foreign.pk}/").status_code == 404
    assert client.delete(f"{URL}{handbook.pk}/documents/{foreign.pk}/").status_code == 404
    assert Document.objects.filter(pk=foreign.pk).exists()


@override_settings(KNOWLEDGE_MAX_UPLOAD_BYTES=2048)
def test_a_file_past_the_size_limit_is_refused_naming_the_limit(client_for, builder, org, handbook):
    response = _upload(client_for(builder, org), handbook, "big.txt", b"x" * 4096)
    assert response.status_code == 422
    [message] = response.json()["file"]
    assert "4,096 bytes" in message and "2,048 bytes" in message
    assert not Document.objects.exists()


@pytest.mark.parametrize(
    ("name", "data", "field"),
    [
        ("virus.exe", b"MZ...", "file"),
        ("empty.txt", b"", "file"),
        ("fake.pdf", b"not a pdf at all", "file"),
    ],
    ids=["unknown type", "empty", "not really a pdf"],
)
def test_an_unreadable_upload_is_a_422_naming_the_file(
    client_for, builder, org, handbook, name, data, field
):
    response = _upload(client_for(builder, org), handbook, name, data)
    assert response.status_code == 422
    assert field in response.json()


def test_a_duplicate_collection_name_is_a_422_naming_it(client_for, builder, org, handbook):
    response = client_for(builder, org).post(URL, {"name": "Handbook"}, format="json")
    assert response.status_code == 422 and "name" in response.json()


def test_reindex_starts_over_and_delete_removes_the_chunks(client_for, owner, org, handbook):
    document = document_upload(
        actor=owner, collection=handbook, file_name="a.md", data=b"# Title\n\nSome text here."
    )
    document_index(document.pk)
    client = client_for(owner, org)
    url = f"{URL}{handbook.pk}/documents/{document.pk}/"
    again = client.post(f"{url}reindex/")
    assert again.status_code == 200 and again.json()["status"] == "queued"
    # Asked twice while queued: refused with its status.
    twice = client.post(f"{url}reindex/")
    assert twice.status_code == 422 and "status" in twice.json()
    assert document_index(document.pk) == "ready"
    assert Chunk.objects.filter(document=document).count() == 1
    assert client.delete(url).status_code == 204
    assert not Chunk.objects.filter(document_id=document.pk).exists()


def test_an_unreadable_document_fails_with_the_reason(owner, org, handbook):
    document = document_upload(
        actor=owner, collection=handbook, file_name="broken.pdf", data=b"%PDF-1.4 garbage"
    )
    assert document_index(document.pk) == "failed"
    document.refresh_from_db()
    assert document.status == "failed" and "could not be read" in document.failure_reason


def test_an_anonymous_request_is_refused(api_client, handbook):
    assert api_client.get(URL).status_code in (401, 403)


def test_a_document_larger_than_a_json_body_may_be_uploaded(client_for, builder, org, handbook):
    """The API's 2.5 MB body limit is for JSON; a document's limit is KNOWLEDGE_MAX_UPLOAD_BYTES."""
    data = b"Plain words for a long document. " * 100_000  # 3.3 MB
    response = _upload(client_for(builder, org), handbook, "long.txt", data)
    assert response.status_code == 201, response.json()
    assert response.json()["size_bytes"] == len(data)


def test_a_restricted_collection_is_a_404_until_granted(client_for, owner, builder, org):
    private = collection_create(actor=owner, organization=org, name="Board", restricted=True)
    builders = client_for(builder, org)
    assert builders.get(f"{URL}{private.pk}/").status_code == 404
    granted = client_for(owner, org).post(
        f"{URL}{private.pk}/grants/", {"user_id": builder.pk}, format="json"
    )
    assert granted.status_code == 204
    assert builders.get(f"{URL}{private.pk}/").status_code == 200
    assert AuditEntry.objects.filter(action="knowledge.collection.grant").count() == 1


def test_a_grant_to_someone_outside_the_organization_is_a_422(client_for, owner, outsider, org):
    private = collection_create(actor=owner, organization=org, name="Board", restricted=True)
    response = client_for(owner, org).post(
        f"{URL}{private.pk}/grants/", {"user_id": outsider.pk}, format="json"
    )
    assert response.status_code == 422 and "user_id" in response.json()


@pytest.mark.parametrize("name", [42, 4.5, True, ["Policies"], {"text": "Policies"}])
def test_a_collection_name_that_is_not_text_is_a_422_naming_name(client_for, builder, org, name):
    response = client_for(builder, org).post(URL, {"name": name}, format="json")
    assert response.status_code == 422
    assert list(response.json()) == ["name"]
    assert not AuditEntry.objects.filter(action="knowledge.collection.create").exists()


def test_a_collection_description_that_is_not_text_is_a_422_naming_it(client_for, builder, org):
    response = client_for(builder, org).post(
        URL, {"name": "Policies", "description": 7}, format="json"
    )
    assert response.status_code == 422 and list(response.json()) == ["description"]


def test_unknown_keys_of_a_new_collection_are_a_422_naming_each(client_for, builder, org):
    client = client_for(builder, org)
    response = client.post(
        URL, {"name": "Policies", "restrcited": True, "owner": "someone"}, format="json"
    )
    assert response.status_code == 422
    assert sorted(response.json()) == ["owner", "restrcited"]
    # With a bad field as well, every problem is named in one answer.
    both = client.post(URL, {"name": 42, "colour": "red"}, format="json")
    assert both.status_code == 422 and sorted(both.json()) == ["colour", "name"]
    assert client.get(URL).json() == []
