"""An OpenAI-compatible embedding endpoint through a model profile and the vault: indexing is
priced ingestion spend on the organization's month (never an agent's), a query's embedding is
priced spend on the run that asked, and the key travels from the vault as a Bearer token."""

import json
from decimal import Decimal

import pytest

from apps.agents.models import ModelProfile
from apps.knowledge.services import collection_create, document_index, document_upload
from apps.runs.models import Run
from apps.runs.runner import execute_run
from apps.spend.models import BudgetCounter, EntryKind, LedgerEntry
from apps.vault.services import secret_create
from tests.runs.factories import published_agent, queued_run

from .fake_embeddings import FakeEmbeddings

pytestmark = pytest.mark.django_db

MODEL = "text-embedding-3-small"  # genai-prices: $0.02 per million input tokens at OpenAI


@pytest.fixture
def endpoint():
    with FakeEmbeddings(dimensions=384) as server:
        yield server


@pytest.fixture
def profile(org, owner, endpoint):
    secret = secret_create(
        actor=owner, organization=org, name="Embeddings key", purpose="openai", value="sk-embed-1"
    )
    return ModelProfile.objects.create(
        organization=org,
        label="Embeddings",
        provider="openai",
        model_name=MODEL,
        base_url=endpoint.base_url,
        secret=secret,
    )


def test_indexing_through_the_endpoint_is_priced_ingestion_on_the_organizations_month(
    org, owner, member, profile, endpoint
):
    collection = collection_create(
        actor=owner, organization=org, name="Priced", embedding_profile=profile, dimensions=384
    )
    words = " ".join(f"word{i}" for i in range(3000))
    document = document_upload(
        actor=owner, collection=collection, file_name="big.txt", data=words.encode()
    )
    assert document_index(document.pk) == "ready"
    assert endpoint.authorizations and set(endpoint.authorizations) == {"Bearer sk-embed-1"}

    [ingestion] = LedgerEntry.objects.filter(organization=org, kind=EntryKind.INGESTION)
    assert ingestion.agent_id is None and ingestion.ledger_id is None
    assert ingestion.provider == "openai" and ingestion.model_name == MODEL
    assert ingestion.input_tokens == 3000 and ingestion.priced
    assert ingestion.cost_usd == Decimal("3000") * Decimal("0.02") / Decimal(1_000_000)
    org_counter = BudgetCounter.objects.get(organization=org, agent=None)
    assert org_counter.committed_usd == ingestion.cost_usd
    assert not BudgetCounter.objects.filter(organization=org, agent__isnull=False).exists()

    agent = published_agent(
        org, capabilities=[{"id": "knowledge"}], knowledge_collections=[collection.pk]
    )
    run = queued_run(
        member, org, agent, "/call search_documents " + json.dumps({"query": "word7 word8"})
    )
    execute_run(run.pk)
    run = Run.objects.get(pk=run.pk)
    assert run.status == "completed", run.error
    [embedding] = LedgerEntry.objects.filter(ledger__run=run, kind=EntryKind.EMBEDDING)
    assert embedding.provider == "openai" and embedding.input_tokens == 2 and embedding.priced
    assert embedding.cost_usd > 0 and embedding.agent_id == agent.pk


def test_an_endpoint_that_fails_leaves_the_document_failed_with_the_reason(
    org, owner, profile, endpoint
):
    collection = collection_create(
        actor=owner, organization=org, name="Down", embedding_profile=profile, dimensions=384
    )
    endpoint.fail = True
    document = document_upload(actor=owner, collection=collection, file_name="a.txt", data=b"hello")
    assert document_index(document.pk) == "failed"
    document.refresh_from_db()
    assert "HTTP 503" in document.failure_reason


def test_a_profile_needs_a_supported_vector_size(org, owner, profile):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as refused:
        collection_create(
            actor=owner, organization=org, name="Odd", embedding_profile=profile, dimensions=100
        )
    assert "dimensions" in refused.value.message_dict
