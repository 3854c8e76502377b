"""Every write to collections and documents: each names its actor, needs ``context:edit`` (a
None actor is an operator's shell or a test's setup), and is audited in the same transaction.

Indexing (:func:`document_index`) is the worker's: claim ``queued → indexing`` (under the
organization's indexing quota, holding a lease the indexing sweep watches), extract the text
page by page (``apps.capabilities.documents``, the one parser), chunk it, embed the chunks in
batches while ``chunks_done`` counts up, write them with their full-text vectors, book the
embedding as ingestion spend on the organization's month (never an agent's), then ``ready`` — or
``failed`` with the reason. A re-index goes back to ``queued`` and starts over.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import threading

from celery import current_app
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from apps.audit.services import record_audit
from apps.capabilities.documents import Unreadable, extract_pages, sniff_document_type, upload_type
from apps.orgs.permissions import CONTEXT_EDIT, SKILLS_EDIT
from apps.spend.services import ingestion_charge_record

from .choices import REINDEXABLE_STATUSES, DocumentStatus, Embedder
from .chunking import chunk_pages
from .embedders import (
    LOCAL_DIMENSIONS,
    LOCAL_MODEL_NAME,
    EmbeddingFailed,
    OpenAICompatibleEmbedder,
    local_embedder,
)
from .models import (
    FILE_NAME_MAX,
    NAME_MAX,
    SKILL_BODY_MAX,
    SKILL_DESCRIPTION_MAX,
    SKILL_FILE_MAX,
    SKILL_FILES_MAX,
    SKILL_NAME_MAX,
    SUPPORTED_DIMENSIONS,
    Chunk,
    Collection,
    Document,
    Skill,
)
from .selectors import may_edit_skills, may_manage

logger = logging.getLogger(__name__)

# Chunks embedded per step: chunks_done moves by this much, so the console's progress moves too.
INDEX_BATCH = 32


def _require(actor, organization) -> None:
    if actor is not None and not may_manage(actor, organization):
        raise PermissionDenied(f"{CONTEXT_EDIT} is required")


def _name(value, field: str = "name") -> str:
    name = " ".join(str(value or "").split())
    if not name:
        raise ValidationError({field: ["A collection needs a name."]})
    if len(name) > NAME_MAX:
        raise ValidationError({field: [f"At most {NAME_MAX} characters."]})
    return name


@transaction.atomic
def collection_create(
    *,
    actor,
    organization,
    name: str,
    description: str = "",
    restricted: bool = False,
    embedding_profile=None,
    dimensions: int | None = None,
) -> Collection:
    """A new collection. With ``embedding_profile`` (an OpenAI-compatible model profile of the
    organization) its vectors come from that endpoint, of ``dimensions`` size; otherwise from the
    built-in model."""
    _require(actor, organization)
    name = _name(name)
    if Collection.objects.filter(organization=organization, name=name).exists():
        raise ValidationError(
            {"name": [f"The organization already has a collection named {name!r}."]}
        )
    description = " ".join(str(description or "").split())
    if len(description) > 300:
        raise ValidationError({"description": ["At most 300 characters."]})
    if embedding_profile is not None:
        if embedding_profile.organization_id != organization.pk:
            raise ValidationError({"embedding_profile_id": ["No such model profile."]})
        if embedding_profile.provider not in ("openai", "openai_compatible"):
            raise ValidationError(
                {
                    "embedding_profile_id": [
                        "Embeddings need an OpenAI or OpenAI-compatible profile."
                    ]
                }
            )
        if dimensions not in SUPPORTED_DIMENSIONS:
            raise ValidationError(
                {"dimensions": [f"One of {', '.join(map(str, SUPPORTED_DIMENSIONS))}."]}
            )
        embedder, model_name = Embedder.PROFILE, embedding_profile.model_name
    else:
        embedder, model_name, dimensions = Embedder.LOCAL, LOCAL_MODEL_NAME, LOCAL_DIMENSIONS
    collection = Collection.objects.create(
        organization=organization,
        name=name,
        description=description,
        restricted=bool(restricted),
        embedder=embedder,
        embedding_profile=embedding_profile,
        embedding_model=model_name,
        dimensions=dimensions,
        created_by=actor,
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="knowledge.collection.create",
        subject=collection,
        details={"name": name, "restricted": collection.restricted, "embedder": embedder},
    )
    return collection


@transaction.atomic
def collection_delete(*, actor, collection: Collection) -> None:
    """Delete a collection and its documents. An agent still connected to it is refused at its
    next run's assembly with the field to change (the publish rule runs again there), instead
    of searching less than its spec says."""
    _require(actor, collection.organization)
    record_audit(
        actor=actor,
        organization=collection.organization,
        action="knowledge.collection.delete",
        subject=collection,
        details={"name": collection.name, "documents": collection.documents.count()},
    )
    collection.delete()


@transaction.atomic
def collection_grant(*, actor, collection: Collection, user) -> None:
    """Let ``user`` (a member of the organization) read a restricted collection."""
    from apps.orgs.models import Membership

    _require(actor, collection.organization)
    if not Membership.objects.filter(organization=collection.organization, user=user).exists():
        raise ValidationError({"user_id": ["Not a member of this organization."]})
    from .models import CollectionGrant

    _, created = CollectionGrant.objects.get_or_create(
        collection=collection, user=user, defaults={"granted_by": actor}
    )
    if created:
        record_audit(
            actor=actor,
            organization=collection.organization,
            action="knowledge.collection.grant",
            subject=collection,
            details={"user_id": user.pk},
        )


# The index job's registered name: the service sends it by name, so it never imports the task
# that calls it back (apps/knowledge/tasks.py; registered in every process by apps.py).
INDEX_DOCUMENT_TASK = "knowledge.index_document"


def _enqueue(document_id: int) -> None:
    transaction.on_commit(lambda: current_app.tasks[INDEX_DOCUMENT_TASK].delay(document_id))


@transaction.atomic
def document_upload(
    *,
    actor,
    collection: Collection,
    file_name: str,
    data: bytes,
    org_unit: str = "",
    size_bytes: int | None = None,
) -> Document:
    """Store an uploaded file ``queued`` and enqueue its index job once committed. Refused
    (422, naming ``file``) past the size limit, or when the type is none read here.
    ``size_bytes`` is the upload's declared size, when the caller read no more than the limit
    of it (an edge never holds a huge upload in memory to refuse it)."""
    _require(actor, collection.organization)
    file_name = " ".join(str(file_name or "").replace("/", " ").replace("\\", " ").split())
    if not file_name:
        raise ValidationError({"file": ["The file needs a name."]})
    if len(file_name) > FILE_NAME_MAX:
        raise ValidationError({"file": [f"A file name of at most {FILE_NAME_MAX} characters."]})
    limit = settings.KNOWLEDGE_MAX_UPLOAD_BYTES
    size = max(len(data), size_bytes or 0)
    if size > limit:
        raise ValidationError(
            {
                "file": [
                    f"{file_name} is {size:,} bytes; the limit is {limit:,} bytes "
                    f"({limit / 1024 / 1024:.0f} MB). Split the document, or ask an operator to "
                    "raise KNOWLEDGE_MAX_UPLOAD_BYTES."
                ]
            }
        )
    if not data:
        raise ValidationError({"file": [f"{file_name} is empty."]})
    media_type = upload_type(file_name)
    if media_type is None:
        raise ValidationError(
            {
                "file": [
                    f"{file_name}: not a type read here. Upload PDF, DOCX, ODT, RTF, PPTX, "
                    "Markdown, plain text, HTML or CSV."
                ]
            }
        )
    sniffed = sniff_document_type(data, "")
    if media_type in ("application/pdf",) and sniffed != media_type:
        raise ValidationError({"file": [f"{file_name} is named as a PDF but is not one."]})
    org_unit = " ".join(str(org_unit or "").split())[:120]
    document = Document.objects.create(
        organization=collection.organization,
        collection=collection,
        file_name=file_name,
        media_type=media_type,
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        content=data,
        org_unit=org_unit,
        uploaded_by=actor,
    )
    record_audit(
        actor=actor,
        organization=collection.organization,
        action="knowledge.document.upload",
        subject=("knowledge.document", document.pk, file_name),
        details={
            "collection_id": collection.pk,
            "file_name": file_name,
            "size_bytes": len(data),
            "media_type": media_type,
        },
    )
    _enqueue(document.pk)
    return document


@transaction.atomic
def document_reindex(*, actor, document: Document) -> Document:
    """Index again from the stored bytes: ready, failed, or indexing by a worker whose lease
    lapsed (it died) → queued, with its attempts counted afresh. A document queued or indexing
    by a live worker is refused, naming its status."""
    _require(actor, document.organization)
    lapsed = Q(status=DocumentStatus.INDEXING) & _lease_lapsed(timezone.now())
    claimed = (
        Document.objects.filter(pk=document.pk)
        .filter(Q(status__in=REINDEXABLE_STATUSES) | lapsed)
        .update(
            status=DocumentStatus.QUEUED,
            chunks_done=0,
            failure_reason="",
            attempts=0,
            lease_expires_at=None,
        )
    )
    if not claimed:
        raise ValidationError(
            {"status": [f"The document is {document.status}; wait for it to end."]}
        )
    record_audit(
        actor=actor,
        organization=document.organization,
        action="knowledge.document.reindex",
        subject=("knowledge.document", document.pk, document.file_name),
        details={"collection_id": document.collection_id, "was": document.status},
    )
    _enqueue(document.pk)
    document.refresh_from_db(
        fields=["status", "chunks_done", "failure_reason", "attempts", "lease_expires_at"]
    )
    return document


@transaction.atomic
def document_delete(*, actor, document: Document) -> None:
    _require(actor, document.organization)
    record_audit(
        actor=actor,
        organization=document.organization,
        action="knowledge.document.delete",
        subject=("knowledge.document", document.pk, document.file_name),
        details={"collection_id": document.collection_id, "chunks": document.chunks_total},
    )
    Document.objects.filter(pk=document.pk).delete()


# --- the index job --------------------------------------------------------------------------

# A worker holds the document it indexes by a lease of this length, renewed every third of it by
# a thread beside the job (a long PDF's extraction or an endpoint's slow batch outlasts any one
# step); when the worker dies the lease lapses and the indexing sweep takes the document back.
INDEX_LEASE_SECONDS = 90
# A document whose worker was lost this many times is failed rather than requeued: a file that
# kills its worker (by exhausting its memory, say) would otherwise kill one worker after another.
INDEX_MAX_ATTEMPTS = 3
# pg_advisory_xact_lock(class, organization): one claim at a time per organization, so two
# workers cannot both see a free slot under the indexing quota and both take it.
_QUOTA_LOCK_CLASS = 24_025

INTERNAL_ERROR_SENTENCE = (
    "Indexing failed with an internal error; the details are in the worker log."
)


def _lost_sentence(attempts: int) -> str:
    return (
        f"Indexing stopped {attempts} times without finishing: the worker indexing it was lost "
        "each time (a file that exhausts a worker's memory does this). Re-index to try again; if "
        "it stops again, split the file or save it in another format."
    )


def _lease_lapsed(now) -> Q:
    # No lease at all on an indexing document means a worker from before leases claimed it.
    return Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True)


def _embedder_of(collection: Collection):
    if collection.embedder == Embedder.LOCAL:
        return local_embedder()
    from apps.vault.services import secret_reveal

    profile = collection.embedding_profile
    # collection_create gives every non-local collection its profile, and PROTECT keeps it.
    assert profile is not None, "a profile-embedded collection names its model profile"
    return OpenAICompatibleEmbedder(
        base_url=profile.base_url or "https://api.openai.com/v1",
        model_name=collection.embedding_model,
        api_key=secret_reveal(profile.secret) if profile.secret is not None else "",
        dimensions=collection.dimensions,
        provider=profile.provider,
    )


def _indexing_now(organization_id: int, now) -> int:
    """Documents of the organization a live worker is indexing (a lapsed lease holds no slot:
    its worker is gone, and the sweep requeues the document)."""
    return Document.objects.filter(
        organization_id=organization_id,
        status=DocumentStatus.INDEXING,
        lease_expires_at__gte=now,
    ).count()


def _claim(document_id: int, organization_id: int) -> int | None:
    """``queued → indexing`` if the organization is under its indexing quota; the claim's
    attempt number (its fencing token), or None when the document stays where it is."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", [_QUOTA_LOCK_CLASS, organization_id]
            )
        now = timezone.now()
        if _indexing_now(organization_id, now) >= settings.KNOWLEDGE_MAX_INDEXING_PER_ORG:
            # It waits queued: the document that ends next, or the sweep, starts it.
            return None
        claimed = Document.objects.filter(pk=document_id, status=DocumentStatus.QUEUED).update(
            status=DocumentStatus.INDEXING,
            chunks_done=0,
            chunks_total=0,
            failure_reason="",
            attempts=F("attempts") + 1,
            lease_expires_at=now + dt.timedelta(seconds=INDEX_LEASE_SECONDS),
        )
        if not claimed:
            return None
        return Document.objects.values_list("attempts", flat=True).get(pk=document_id)


def _held(document_id: int, attempt: int) -> QuerySet:
    """The document, only while this claim still holds it (indexing, and not claimed again)."""
    return Document.objects.filter(pk=document_id, status=DocumentStatus.INDEXING, attempts=attempt)


def _renew(document_id: int, attempt: int) -> bool:
    return bool(
        _held(document_id, attempt).update(
            lease_expires_at=timezone.now() + dt.timedelta(seconds=INDEX_LEASE_SECONDS)
        )
    )


class _LeaseKeeper:
    """Renews the claim's lease from a thread of its own while the job runs: the lease then
    lapses exactly when the worker process stops, however long one step of the job takes."""

    def __init__(self, document_id: int, attempt: int) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._keep,
            args=(document_id, attempt),
            name=f"knowledge-lease-{document_id}",
            daemon=True,
        )

    def __enter__(self) -> _LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()

    def _keep(self, document_id: int, attempt: int) -> None:
        try:
            while not self._stop.wait(INDEX_LEASE_SECONDS / 3):
                try:
                    connection.close_if_unusable_or_obsolete()
                    if not _renew(document_id, attempt):
                        return  # claimed again or deleted: the job notices at its next write
                except DatabaseError:
                    # The database is away; the next renewal tries again, and if the lease
                    # lapses meanwhile the sweep requeues the document.
                    logger.warning("could not renew the lease of document %s", document_id)
        finally:
            connection.close()  # this thread's own connection


def _end(document_id: int, attempt: int, status: str, **fields) -> bool:
    return bool(_held(document_id, attempt).update(status=status, lease_expires_at=None, **fields))


def _fail(document_id: int, attempt: int, reason: str) -> None:
    _end(document_id, attempt, DocumentStatus.FAILED, failure_reason=reason[:500])


def _start_waiting(organization_id: int, now=None) -> int:
    """Enqueue the organization's oldest queued documents, as many as its quota has room for;
    how many. A document already on its way is harmless: only one claim succeeds."""
    now = now or timezone.now()
    room = settings.KNOWLEDGE_MAX_INDEXING_PER_ORG - _indexing_now(organization_id, now)
    if room <= 0:
        return 0
    waiting = list(
        Document.objects.filter(organization_id=organization_id, status=DocumentStatus.QUEUED)
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)[:room]
    )
    for document_id in waiting:
        _enqueue(document_id)
    return len(waiting)


def document_index(document_id: int) -> str | None:
    """Index one queued document; returns its final status, or None when this call did not
    index it (not queued, the organization at its indexing quota, or the claim lost to the
    sweep while the job ran). The next queued document of the organization starts after it."""
    organization_id = (
        Document.objects.filter(pk=document_id, status=DocumentStatus.QUEUED)
        .values_list("organization_id", flat=True)
        .first()
    )
    if organization_id is None:
        return None
    attempt = _claim(document_id, organization_id)
    if attempt is None:
        return None
    try:
        with _LeaseKeeper(document_id, attempt):
            outcome = _index_claimed(document_id, attempt)
    except Exception:
        # Recorded on the document (the console shows it failed) and raised for the worker's log.
        _fail(document_id, attempt, INTERNAL_ERROR_SENTENCE)
        _start_waiting(organization_id)
        raise
    _start_waiting(organization_id)
    return outcome


def _index_claimed(document_id: int, attempt: int) -> str | None:
    document = Document.objects.select_related(
        "collection__embedding_profile__secret", "organization"
    ).get(pk=document_id)
    collection = document.collection
    try:
        extracted = extract_pages(
            bytes(document.content),
            document.media_type,
            max_chars=settings.KNOWLEDGE_MAX_DOCUMENT_CHARS,
        )
    except Unreadable as exc:
        _fail(document_id, attempt, f"The file could not be read: {exc}.")
        return DocumentStatus.FAILED
    # PostgreSQL text cannot hold NUL. Removed rather than replaced: a UTF-16 file without a
    # byte-order mark decodes as text with a NUL after every letter, and reads right without.
    pages = [(number, text.replace("\x00", "")) for number, text in extracted.pages]
    drafts = chunk_pages(pages)
    if not drafts:
        _fail(
            document_id,
            attempt,
            f"The file could not be read: a {extracted.kind} with no text in it.",
        )
        return DocumentStatus.FAILED
    numbered = [number for number, _ in pages if number is not None]
    with transaction.atomic():
        if not _held(document_id, attempt).update(
            chunks_total=len(drafts), pages=max(numbered) if numbered else None
        ):
            return None
        Chunk.objects.filter(document_id=document_id).delete()
    embedder = _embedder_of(collection)
    tokens = 0
    try:
        for start in range(0, len(drafts), INDEX_BATCH):
            batch = drafts[start : start + INDEX_BATCH]
            embedded = embedder.embed([draft.text for draft in batch])
            tokens += embedded.input_tokens
            with transaction.atomic():
                # First, so a claim lost to the sweep (this worker was thought dead) writes
                # nothing more: the row lock orders this against the sweep's requeue.
                if not _held(document_id, attempt).update(
                    chunks_done=start + len(batch),
                    lease_expires_at=timezone.now() + dt.timedelta(seconds=INDEX_LEASE_SECONDS),
                ):
                    _book_ingestion(document, embedder, tokens)
                    return None
                Chunk.objects.bulk_create(
                    [
                        Chunk(
                            organization_id=document.organization_id,
                            collection_id=collection.pk,
                            document_id=document_id,
                            ordinal=draft.ordinal,
                            page=draft.page,
                            text=draft.text,
                            embedding=vector,
                            dimensions=collection.dimensions,
                        )
                        for draft, vector in zip(batch, embedded.vectors, strict=True)
                    ]
                )
                with connection.cursor() as cursor:
                    cursor.execute(
                        "UPDATE knowledge_chunk SET search_vector = to_tsvector(%s::regconfig, text)"
                        " WHERE document_id = %s AND ordinal >= %s AND ordinal < %s",
                        [
                            settings.KNOWLEDGE_TEXT_SEARCH_CONFIG,
                            document_id,
                            start,
                            start + len(batch),
                        ],
                    )
    except EmbeddingFailed as exc:
        _book_ingestion(document, embedder, tokens)
        _fail(document_id, attempt, str(exc))
        return DocumentStatus.FAILED
    _book_ingestion(document, embedder, tokens)
    if not _end(document_id, attempt, DocumentStatus.READY, indexed_at=timezone.now()):
        return None
    return DocumentStatus.READY


def documents_sweep_lapsed_leases(*, now=None) -> int:
    """Take back every document whose indexing worker stopped renewing its lease: requeued while
    it has had fewer than INDEX_MAX_ATTEMPTS claims, failed with the reason after that. Then
    start the queued documents of every organization with room under its quota (a requeued one,
    or one whose job message a broker lost). Returns how many documents it took back."""
    now = now or timezone.now()
    lapsed = Document.objects.filter(_lease_lapsed(now), status=DocumentStatus.INDEXING)
    taken_back = 0
    for document_id, attempts in lapsed.values_list("pk", "attempts"):
        still_lapsed = Document.objects.filter(
            _lease_lapsed(now), pk=document_id, status=DocumentStatus.INDEXING, attempts=attempts
        )
        if attempts >= INDEX_MAX_ATTEMPTS:
            moved = still_lapsed.update(
                status=DocumentStatus.FAILED,
                lease_expires_at=None,
                failure_reason=_lost_sentence(attempts),
            )
        else:
            moved = still_lapsed.update(
                status=DocumentStatus.QUEUED, lease_expires_at=None, chunks_done=0
            )
        taken_back += moved
    if taken_back:
        logger.warning("indexing sweep took back %d document(s) whose worker stopped", taken_back)
    waiting = (
        Document.objects.filter(status=DocumentStatus.QUEUED)
        .values_list("organization_id", flat=True)
        .distinct()
    )
    for organization_id in sorted(set(waiting)):
        _start_waiting(organization_id, now)
    return taken_back


def _book_ingestion(document: Document, embedder, tokens: int) -> None:
    # Indexing belongs to no run: ingestion spend, counted toward the organization's month.
    if tokens:
        ingestion_charge_record(
            organization=document.organization,
            provider=embedder.provider,
            model_name=embedder.model_name,
            input_tokens=tokens,
        )


# --- skills ----------------------------------------------------------------------------------
# A skill's name is its id in the model's catalog (``load_capability(id=...)``): the Agent Skills
# spelling, lowercase letters, digits and single hyphens.
_SKILL_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")


def _require_skills(actor, organization) -> None:
    if actor is not None and not may_edit_skills(actor, organization):
        raise PermissionDenied(f"{SKILLS_EDIT} is required")


def _skill_name(organization, value, *, exclude_pk=None) -> str:
    name = str(value or "").strip()
    if not name:
        raise ValidationError({"name": ["A skill needs a name."]})
    if len(name) > SKILL_NAME_MAX or not _SKILL_NAME.match(name):
        raise ValidationError(
            {
                "name": [
                    f"Lowercase letters, digits and single hyphens, at most {SKILL_NAME_MAX} "
                    "characters (for example incident-response)."
                ]
            }
        )
    taken = Skill.objects.filter(organization=organization, name=name)
    if exclude_pk is not None:
        taken = taken.exclude(pk=exclude_pk)
    if taken.exists():
        raise ValidationError({"name": [f"The organization already has a skill named {name!r}."]})
    return name


def _skill_description(value) -> str:
    description = " ".join(str(value or "").split())
    if not description:
        raise ValidationError(
            {"description": ["Say when the skill is relevant: the model reads only this."]}
        )
    if len(description) > SKILL_DESCRIPTION_MAX:
        raise ValidationError({"description": [f"At most {SKILL_DESCRIPTION_MAX} characters."]})
    return description


def _skill_body(value) -> str:
    body = str(value or "")
    if len(body) > SKILL_BODY_MAX:
        raise ValidationError({"body": [f"At most {SKILL_BODY_MAX} characters."]})
    return body


def _skill_files(value) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError({"files": ["An object of file name to text."]})
    if len(value) > SKILL_FILES_MAX:
        raise ValidationError({"files": [f"At most {SKILL_FILES_MAX} files."]})
    files: dict[str, str] = {}
    for name, text in value.items():
        if not isinstance(name, str) or not _FILE_NAME.match(name) or len(name) > FILE_NAME_MAX:
            raise ValidationError(
                {"files": [f"{name!r}: a file name of letters, digits, dots, dashes and /."]}
            )
        if ".." in name.split("/"):
            raise ValidationError({"files": [f"{name!r}: no '..' in a file name."]})
        if not isinstance(text, str):
            raise ValidationError({"files": [f"{name!r}: the file's text must be a string."]})
        if len(text) > SKILL_FILE_MAX:
            raise ValidationError({"files": [f"{name!r}: at most {SKILL_FILE_MAX} characters."]})
        files[name] = text
    return files


@transaction.atomic
def skill_create(
    *, actor, organization, name: str, description: str, body: str = "", files=None
) -> Skill:
    _require_skills(actor, organization)
    skill = Skill.objects.create(
        organization=organization,
        name=_skill_name(organization, name),
        description=_skill_description(description),
        body=_skill_body(body),
        files=_skill_files(files),
        created_by=actor,
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="knowledge.skill.create",
        subject=skill,
        details={"name": skill.name, "files": sorted(skill.files)},
    )
    return skill


_UNSET = object()


@transaction.atomic
def skill_update(
    *, actor, skill: Skill, name=_UNSET, description=_UNSET, body=_UNSET, files=_UNSET
) -> Skill:
    organization = skill.organization
    _require_skills(actor, organization)
    changed: list[str] = []
    if name is not _UNSET:
        skill.name = _skill_name(organization, name, exclude_pk=skill.pk)
        changed.append("name")
    if description is not _UNSET:
        skill.description = _skill_description(description)
        changed.append("description")
    if body is not _UNSET:
        skill.body = _skill_body(body)
        changed.append("body")
    if files is not _UNSET:
        skill.files = _skill_files(files)
        changed.append("files")
    skill.save()
    record_audit(
        actor=actor,
        organization=organization,
        action="knowledge.skill.update",
        subject=skill,
        details={"name": skill.name, "changed": changed},
    )
    return skill


@transaction.atomic
def skill_delete(*, actor, skill: Skill) -> None:
    organization = skill.organization
    _require_skills(actor, organization)
    record_audit(
        actor=actor,
        organization=organization,
        action="knowledge.skill.delete",
        subject=skill,
        details={"name": skill.name},
    )
    skill.delete()
