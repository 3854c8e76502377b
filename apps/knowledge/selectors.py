"""Reads of collections and documents, scoped to the caller's organization and grants.

Another organization's collection — or a restricted one the caller may not read — is invisible,
the same as one that never existed (a 404, never a 403)."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db.models import Count, Q, QuerySet, Sum

from agenticos.params import as_id
from apps.orgs.permissions import (
    AGENTS_VIEW,
    CONTEXT_EDIT,
    SETTINGS_MANAGE,
    SKILLS_EDIT,
    has_org_permission,
)

from .models import Chunk, Collection, Document, Skill
from .search import CollectionRef, CollectionSearch

# Self-query offers the units of the bound collections to the model, up to this many; more than
# that offers none (seed 000: a list that long is noise, and its tokens are paid every search).
MAX_OFFERED_UNITS = 200


def may_manage(user, organization) -> bool:
    """Create collections, upload, re-index, delete, grant: ``context:edit`` (what the
    organization knows, like its context files)."""
    return has_org_permission(user, organization, CONTEXT_EDIT)


def collections_readable_by(user, organization) -> QuerySet[Collection]:
    """The collections ``user`` may read in ``organization``: every open one, and a restricted
    one they were granted or created — or every one, for those who manage the organization
    (``settings:manage``: owners, admins) and app admins. A builder manages open collections but
    needs a grant for a restricted one, which is what makes "the publisher may read it" a rule."""
    if user is None or not has_org_permission(user, organization, AGENTS_VIEW):
        return Collection.objects.none()
    collections = Collection.objects.filter(organization=organization)
    if not (
        getattr(user, "is_superuser", False)
        or has_org_permission(user, organization, SETTINGS_MANAGE)
    ):
        collections = collections.filter(
            Q(restricted=False) | Q(grants__user=user) | Q(created_by=user)
        ).distinct()
    return collections.annotate(document_count=Count("documents", distinct=True)).order_by(
        "name", "pk"
    )


def collection_for(user, organization, pk) -> Collection | None:
    pk = as_id(pk)
    if pk is None:
        return None
    return collections_readable_by(user, organization).filter(pk=pk).first()


def documents_of(collection: Collection) -> QuerySet[Document]:
    return (
        Document.objects.filter(collection=collection)
        .defer("content")
        .order_by("-created_at", "-pk")
    )


def document_for(collection: Collection, pk) -> Document | None:
    pk = as_id(pk)
    if pk is None:
        return None
    return documents_of(collection).filter(pk=pk).first()


def unreadable_collection_ids(organization, ids: Iterable[int], actor) -> list[int]:
    """The ids of ``ids`` that are no collection of ``organization`` the ``actor`` may read (an
    actor of None — an operator's shell — reads every collection of the organization)."""
    ids = [int(i) for i in ids]
    if not ids:
        return []
    if actor is None:
        scope = Collection.objects.filter(organization=organization)
    else:
        scope = collections_readable_by(actor, organization)
    found = set(scope.filter(pk__in=ids).values_list("pk", flat=True))
    return [i for i in ids if i not in found]


def collection_search_for_run(organization_id: int, ids: Iterable[int]) -> CollectionSearch | None:
    """What a run's ``search_documents`` may search: the spec's collections of this organization
    (another organization's id, or a collection deleted since publishing, is skipped — a run never
    reads across organizations), or None when none is left, and the capability attaches nothing."""
    from apps.vault.services import secret_reveal

    ids = [int(i) for i in ids]
    if not ids:
        return None
    rows = (
        Collection.objects.filter(organization_id=organization_id, pk__in=ids)
        .select_related("embedding_profile__secret")
        # The scope's size decides exact scan or HNSW: the ready documents' own counts.
        .annotate(chunk_count=Sum("documents__chunks_total", filter=Q(documents__status="ready")))
    )
    refs = []
    for collection in rows:
        profile = collection.embedding_profile
        refs.append(
            CollectionRef(
                id=collection.pk,
                name=collection.name,
                dimensions=collection.dimensions,
                embedder=collection.embedder,
                embedding_model=collection.embedding_model,
                chunk_count=collection.chunk_count or 0,
                base_url=(profile.base_url or "https://api.openai.com/v1")
                if profile is not None
                else "",
                provider=profile.provider if profile is not None else "local",
                api_key=secret_reveal(profile.secret)
                if profile is not None and profile.secret is not None
                else "",
            )
        )
    if not refs:
        return None
    units = list(
        Document.objects.filter(organization_id=organization_id, collection_id__in=ids)
        .exclude(org_unit="")
        .values_list("org_unit", flat=True)
        .distinct()
        .order_by("org_unit")[: MAX_OFFERED_UNITS + 1]
    )
    return CollectionSearch(
        organization_id=organization_id,
        collections=tuple(refs),
        text_config=settings.KNOWLEDGE_TEXT_SEARCH_CONFIG,
        org_units=tuple(units) if len(units) <= MAX_OFFERED_UNITS else (),
    )


def chunks_of(document: Document) -> QuerySet[Chunk]:
    return Chunk.objects.filter(document=document).order_by("ordinal")


# --- skills ----------------------------------------------------------------------------------


def may_edit_skills(user, organization) -> bool:
    return has_org_permission(user, organization, SKILLS_EDIT)


def skills_of(organization) -> QuerySet[Skill]:
    return Skill.objects.filter(organization=organization)


def skill_for(organization, pk) -> Skill | None:
    """One skill of ``organization``; another organization's id is None (a 404)."""
    pk = as_id(pk)
    if pk is None:
        return None
    return skills_of(organization).filter(pk=pk).first()


def missing_skill_ids(organization_id: int, ids: Iterable[int]) -> list[int]:
    """The ids that name no skill of this organization (another organization's, or deleted)."""
    ids = [int(i) for i in ids]
    if not ids:
        return []  # nothing to look for (and a query that cannot match is still built)
    found = set(
        Skill.objects.filter(organization_id=organization_id, pk__in=ids).values_list(
            "pk", flat=True
        )
    )
    return [i for i in ids if i not in found]


def skills_for_run(organization_id: int, ids: Iterable[int]):
    """The bound skills' snapshots, in the spec's order, read in the run's organization only."""
    from apps.capabilities.tools.skills import SkillSnapshot

    ids = [int(i) for i in ids]
    rows = {s.pk: s for s in Skill.objects.filter(organization_id=organization_id, pk__in=ids)}
    return [
        SkillSnapshot(
            name=rows[i].name,
            description=rows[i].description,
            body=rows[i].body,
            files=dict(rows[i].files or {}),
        )
        for i in dict.fromkeys(ids)
        if i in rows
    ]


def run_facts(organization_id: int, spec) -> dict:
    """What a run of ``spec`` would have to work on here, for the tool manifest
    (``apps.capabilities.tool_view.RunFacts``): the same reads the runner resolves a run with."""
    collections = Collection.objects.filter(
        organization_id=organization_id, pk__in=[int(i) for i in spec.knowledge_collections]
    ).count()
    skills = skills_for_run(organization_id, spec.skill_ids)
    return {
        "knowledge_collections": collections,
        "skills": len(skills),
        "skill_files": any(skill.files for skill in skills),
    }
