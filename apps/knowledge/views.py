"""The console's Knowledge pages: collections, uploads and each document's index progress.

Thin: parse, call a service, render. The status endpoint answers the collection's documents as
JSON for ``static/knowledge/knowledge.js``, which keeps the progress cells moving while a document
is queued or indexing (no inline script: the CSP forbids it)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.orgs import permissions as perms
from apps.orgs.access import organization_from_request

from . import selectors, services
from .api.serializers import DocumentSerializer
from .forms import CollectionForm, UploadForm


def _collection(request, collection_id):
    collection = selectors.collection_for(
        request.user,
        organization_from_request(request, perms.AGENTS_VIEW, hidden=True),
        collection_id,
    )
    if collection is None:
        raise Http404
    return collection


def _errors_onto(form, error: ValidationError) -> None:
    for field, problems in error.message_dict.items():
        form.add_error(field if field in form.fields else None, problems)


@login_required
def collections(request):
    organization = organization_from_request(request, perms.AGENTS_VIEW, hidden=True)
    can_manage = selectors.may_manage(request.user, organization)
    form = CollectionForm(request.POST or None)
    if request.method == "POST":
        if not can_manage:
            raise PermissionDenied
        if form.is_valid():
            try:
                collection = services.collection_create(
                    actor=request.user, organization=organization, **form.cleaned_data
                )
            except ValidationError as error:
                _errors_onto(form, error)
            else:
                messages.success(request, f"Collection {collection.name} created.")
                return redirect("knowledge:collection", collection_id=collection.pk)
    return render(
        request,
        "knowledge/collections.html",
        {
            "collections": selectors.collections_readable_by(request.user, organization),
            "form": form,
            "can_manage": can_manage,
        },
    )


@login_required
def collection(request, collection_id: int):
    collection = _collection(request, collection_id)
    can_manage = selectors.may_manage(request.user, collection.organization)
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST":
        if not can_manage:
            raise PermissionDenied
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                document = services.document_upload(
                    actor=request.user,
                    collection=collection,
                    file_name=upload.name,
                    # Never more than one byte past the limit read: the service refuses by the size.
                    data=upload.read(settings.KNOWLEDGE_MAX_UPLOAD_BYTES + 1),
                    size_bytes=upload.size,
                    org_unit=form.cleaned_data["org_unit"],
                )
            except ValidationError as error:
                _errors_onto(form, error)
            else:
                messages.success(
                    request, f"{document.file_name} uploaded; indexing starts shortly."
                )
                return redirect("knowledge:collection", collection_id=collection.pk)
    return render(
        request,
        "knowledge/collection.html",
        {
            "collection": collection,
            "documents": selectors.documents_of(collection),
            "form": form,
            "can_manage": can_manage,
        },
    )


@login_required
def collection_status(request, collection_id: int):
    collection = _collection(request, collection_id)
    rows = DocumentSerializer(selectors.documents_of(collection), many=True).data
    return JsonResponse(
        {
            "documents": [
                {k: row[k] for k in ("id", "status", "progress", "chunks_done", "chunks_total")}
                for row in rows
            ]
        }
    )


@login_required
@require_POST
def document_reindex(request, collection_id: int, document_id: int):
    collection = _collection(request, collection_id)
    document = selectors.document_for(collection, document_id)
    if document is None:
        raise Http404
    try:
        services.document_reindex(actor=request.user, document=document)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"{document.file_name} queued for re-indexing.")
    return redirect("knowledge:collection", collection_id=collection.pk)


@login_required
@require_POST
def document_delete(request, collection_id: int, document_id: int):
    collection = _collection(request, collection_id)
    document = selectors.document_for(collection, document_id)
    if document is None:
        raise Http404
    services.document_delete(actor=request.user, document=document)
    messages.success(request, f"{document.file_name} deleted.")
    return redirect("knowledge:collection", collection_id=collection.pk)
