"""Upload → index → a run that searches and cites the right document and page, through the real
runner on the offline model, the real embedder and PostgreSQL (pgvector + full text)."""

import json
from decimal import Decimal

import pytest

from apps.agents.validation import validate_spec
from apps.knowledge.choices import DocumentStatus
from apps.knowledge.models import Chunk, Document
from apps.knowledge.services import (
    collection_create,
    collection_grant,
    document_index,
    document_upload,
)
from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.spend.models import EntryKind, LedgerEntry
from tests.capabilities.web.documents import docx, pdf
from tests.runs.factories import published_agent, queued_run

pytestmark = pytest.mark.django_db

POLICY_PAGES = [
    "Welcome to the Acme customer handbook. This handbook explains how we work with customers.",
    "Refunds: a customer may ask for a refund within 30 days of delivery. "
    "After 30 days we offer store credit instead of a refund.",
    "Shipping: orders leave the warehouse within two working days by courier.",
]


def _indexed(actor, collection, name, data, **kwargs) -> Document:
    document = document_upload(
        actor=actor, collection=collection, file_name=name, data=data, **kwargs
    )
    assert document.status == DocumentStatus.QUEUED
    # The worker's job, run here: the test's transaction never commits, so on_commit never fires.
    assert document_index(document.pk) == DocumentStatus.READY
    document.refresh_from_db()
    return document


def _tool_results(run: Run) -> list[str]:
    return [
        part["content"]
        for message in run.transcript
        for part in message.get("parts", [])
        if part.get("part_kind") == "tool-return"
    ]


def _search(actor, org, agent, args: dict) -> Run:
    run = queued_run(actor, org, agent, f"/call search_documents {json.dumps(args)}")
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


@pytest.fixture
def handbook(org, owner):
    collection = collection_create(actor=owner, organization=org, name="Handbook")
    policy = _indexed(owner, collection, "refund-policy.pdf", pdf(POLICY_PAGES))
    notes = _indexed(
        owner,
        collection,
        "office-notes.docx",
        docx(["The office plants are watered on Mondays.", "Parking is behind the building."]),
    )
    return collection, policy, notes


def _agent(org, collections, **config):
    return published_agent(
        org,
        capabilities=[{"id": "knowledge", "config": config}],
        knowledge_collections=[c.pk for c in collections],
    )


def test_a_run_cites_the_document_and_page_that_answer(org, owner, member, handbook):
    collection, policy, _ = handbook
    assert policy.pages == 3 and policy.chunks_total == policy.chunks_done >= 3
    assert Chunk.objects.filter(document=policy, page=2).exists()
    run = _search(
        member,
        org,
        _agent(org, [collection]),
        {"query": "how long can a customer ask for a refund"},
    )
    assert run.status == "completed", run.error
    [result] = _tool_results(run)
    first = result.split("\n\n[2]")[0]
    assert "[1] refund-policy.pdf, page 2" in first
    assert "within 30 days of delivery" in first


def test_a_docx_result_names_the_document_without_a_page(org, owner, member, handbook):
    collection, _, notes = handbook
    run = _search(member, org, _agent(org, [collection]), {"query": "when are the plants watered"})
    [result] = _tool_results(run)
    assert "[1] office-notes.docx\n" in result
    assert "office-notes.docx, page" not in result


def test_default_top_k_applies_only_when_the_model_names_no_number(org, owner, member, handbook):
    collection, _, _ = handbook
    agent = _agent(org, [collection], default_top_k=1)
    [one] = _tool_results(_search(member, org, agent, {"query": "refund"}))
    assert "[1]" in one and "[2]" not in one
    [three] = _tool_results(_search(member, org, agent, {"query": "refund", "top_k": 3}))
    assert "[3]" in three


def test_the_query_embedding_is_booked_to_the_run_at_zero_and_priced(org, owner, member, handbook):
    collection, _, _ = handbook
    run = _search(member, org, _agent(org, [collection]), {"query": "shipping times"})
    [embedding] = LedgerEntry.objects.filter(ledger__run=run, kind=EntryKind.EMBEDDING)
    assert embedding.provider == "local" and embedding.model_name == "all-MiniLM-L6-v2"
    assert embedding.input_tokens > 0
    assert embedding.cost_usd == Decimal("0") and embedding.priced
    assert run.cost_is_partial is False


def test_indexing_is_ingestion_spend_of_the_organization_never_an_agent(org, owner, handbook):
    entries = LedgerEntry.objects.filter(organization=org, kind=EntryKind.INGESTION)
    assert entries.count() == 2  # one per indexed document
    assert all(e.agent_id is None and e.ledger_id is None for e in entries)
    assert all(e.provider == "local" and e.priced and e.input_tokens > 0 for e in entries)


def test_bound_without_collections_the_capability_attaches_nothing(org, owner, member, handbook):
    from apps.runs.runner import prepare
    from tests.runs.test_available_is_what_a_run_gets import _tools_the_model_is_offered

    collection, _, _ = handbook
    bare = published_agent(org, capabilities=[{"id": "knowledge", "config": {}}])
    assert "knowledge" not in _tools_the_model_is_offered(prepare(queued_run(member, org, bare)))
    connected = _agent(org, [collection])
    offered = _tools_the_model_is_offered(prepare(queued_run(member, org, connected)))
    assert offered["knowledge"] == {"search_documents"}
    # A collection deleted since publishing refuses the run at assembly, naming the field.
    gone = collection_create(actor=owner, organization=org, name="Gone")
    stale = _agent(org, [gone])
    gone.delete()
    run = _search(member, org, stale, {"query": "refund"})
    assert run.status == "failed" and "knowledge_collections" in run.error


def test_parent_context_window_adds_the_neighbours_and_says_so(org, owner, member):
    collection = collection_create(actor=owner, organization=org, name="Long")
    paragraphs = [f"Paragraph {i} talks about topic {i} in some detail. " * 12 for i in range(6)]
    paragraphs[3] = "The secret escalation contact for outages is Dana Whitfield. " * 8
    _indexed(owner, collection, "runbook.md", "\n\n".join(paragraphs).encode())
    off = _tool_results(
        _search(
            member,
            org,
            _agent(org, [collection], default_top_k=1),
            {"query": "escalation contact for outages"},
        )
    )[0]
    window = _tool_results(
        _search(
            member,
            org,
            _agent(org, [collection], default_top_k=1, parent_context="window"),
            {"query": "escalation contact for outages"},
        )
    )[0]
    assert "with surrounding text" not in off
    assert "[1] runbook.md (with surrounding text)" in window
    assert "Paragraph 2" in window and "Paragraph 4" in window and "Paragraph 2" not in off
    assert len(window) <= len(off) + 8_000 + 200


def test_hyde_makes_one_more_model_request_booked_to_the_run(org, owner, member, handbook):
    collection, _, _ = handbook
    plain = _search(member, org, _agent(org, [collection]), {"query": "refund"})
    hyde = _search(
        member, org, _agent(org, [collection], query_analysis_mode="hyde"), {"query": "refund"}
    )

    def requests(run):
        return LedgerEntry.objects.filter(ledger__run=run, kind=EntryKind.MODEL_REQUEST).count()

    assert requests(hyde) == requests(plain) + 1
    assert "refund-policy.pdf, page 2" in _tool_results(hyde)[0]


def test_multi_query_searches_each_variant_and_books_each_embedding(org, owner, member, handbook):
    collection, _, _ = handbook
    run = _search(
        member,
        org,
        _agent(org, [collection], query_analysis_mode="multi_query"),
        {"query": "refund"},
    )
    embeddings = LedgerEntry.objects.filter(ledger__run=run, kind=EntryKind.EMBEDDING).count()
    assert embeddings >= 2  # the original and at least one rewording, each embedded on its own
    assert "refund-policy.pdf" in _tool_results(run)[0]


# --- tenancy ------------------------------------------------------------------------------


def test_another_organizations_collection_is_refused_at_publish(org, other_org, owner, outsider):
    theirs = collection_create(actor=outsider, organization=other_org, name="Secrets")
    spec = {"capabilities": [{"id": "knowledge"}], "knowledge_collections": [theirs.pk]}
    errors = validate_spec(spec, organization=org, actor=owner)
    assert [(e.binding, e.field) for e in errors] == [("knowledge", "knowledge_collections")]


def test_a_restricted_collection_needs_the_publishers_grant(org, owner, builder):
    """Owners and admins read every collection; a builder reads a restricted one once granted."""
    private = collection_create(actor=owner, organization=org, name="Board", restricted=True)
    spec = {"capabilities": [{"id": "knowledge"}], "knowledge_collections": [private.pk]}
    assert validate_spec(spec, organization=org, actor=builder)
    collection_grant(actor=owner, collection=private, user=builder)
    assert validate_spec(spec, organization=org, actor=builder) == []


def test_another_organizations_collection_in_a_frozen_spec_refuses_the_run(
    org, other_org, member, outsider
):
    theirs = collection_create(actor=outsider, organization=other_org, name="Secrets")
    document_index(
        document_upload(
            actor=outsider, collection=theirs, file_name="s.txt", data=b"The vault code is 4242."
        ).pk
    )
    agent = _agent(org, [theirs])  # written straight to the version, as if published long ago
    run = _search(member, org, agent, {"query": "vault code"})
    assert run.status == "failed"
    assert "knowledge_collections" in run.error
    assert not any("4242" in r for r in _tool_results(run))
