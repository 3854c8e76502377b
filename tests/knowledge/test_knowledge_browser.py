"""Knowledge in a real headless Chromium against the ASGI server and a real Celery worker: upload
a PDF, watch its status move to ready, then ask in the chat and see the answer cite the document
and the page."""

import json

import pytest
from playwright.sync_api import expect

from apps.knowledge.models import Collection, Document
from tests.capabilities.web.documents import pdf
from tests.runs.conftest import celery_worker  # noqa: F401  (fixture)
from tests.runs.factories import published_agent
from tests.runs.live import asgi_server  # noqa: F401  (fixture)
from tests.runs.test_live_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = [
    "Acme handbook. Chapter one is about our history.",
    "Refunds: a customer may ask for a refund within 30 days of delivery.",
]


def test_upload_shows_progress_to_ready_and_the_chat_cites_document_and_page(
    page,
    asgi_server,  # noqa: F811
    celery_worker,  # noqa: F811
    org,
    owner,
    tmp_path,
):
    base = f"http://{asgi_server}"
    sign_in(page, base, owner)
    page.click("nav.mainnav >> text=Knowledge")
    page.fill("#id_name", "Handbook")
    page.click("#collection-form button[type=submit]")
    expect(page.locator("h1")).to_have_text("Handbook")

    document = tmp_path / "refund-policy.pdf"
    document.write_bytes(pdf(PAGES))
    page.set_input_files("#id_file", str(document))
    page.click("#upload-submit")
    row = page.locator("#documents tr[data-document-id]")
    expect(row).to_have_count(1)
    # The status cell follows the index job (queued → indexing n/m chunks → ready) by itself.
    expect(row.locator(".document-status")).to_have_text("ready", timeout=60_000)
    stored = Document.objects.get()
    assert stored.status == "ready" and stored.pages == 2

    collection = Collection.objects.get()
    published_agent(
        org,
        name="Librarian",
        capabilities=[{"id": "knowledge", "config": {"default_top_k": 1}}],
        knowledge_collections=[collection.pk],
    )
    page.click("nav.mainnav >> text=Chat")
    page.select_option("#chat-agent", label="Librarian")
    page.fill(
        "#chat-message",
        f"/call search_documents {json.dumps({'query': 'how long do customers have for a refund'})}",
    )
    page.click("#chat-send")
    expect(page.locator("#chat-status")).to_have_text("Done.", timeout=60_000)
    turn = page.locator("#transcript .turn.assistant").last
    expect(turn).to_contain_text("refund-policy.pdf, page 2")
    expect(turn).to_contain_text("within 30 days of delivery")
