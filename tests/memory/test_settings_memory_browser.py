"""Settings → Memory in a real headless Chromium: a person sees what an agent wrote about them,
stops using a note (and its index line goes), uses it again, deletes one after confirming; axe
finds nothing at desktop and phone widths, and nothing scrolls sideways at 390 px."""

import pytest
from playwright.sync_api import expect

from apps.memory.models import MemoryNote
from tests.console.test_design_browser import (
    DESKTOP,
    PHONE,
    _sideways_overflow,
    _violations,
    sign_in,
)
from tests.runs.factories import published_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def notes(org, owner, member):
    agent = published_agent(
        org, name="Scribe", created_by=owner, capabilities=[{"id": "memory_files"}]
    )
    index = MemoryNote.objects.create(
        organization=org,
        agent=agent,
        owner_user=member,
        name="MEMORY.md",
        body="- preferences.md — language and tone\n- projects.md — current work\n",
    )
    prefs = MemoryNote.objects.create(
        organization=org, agent=agent, owner_user=member, name="preferences.md", body="Polish."
    )
    projects = MemoryNote.objects.create(
        organization=org, agent=agent, owner_user=member, name="projects.md", body="Atlas."
    )
    return {"index": index, "prefs": prefs, "projects": projects}


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_settings_memory_passes_axe_and_fits_a_phone(page, live_server, member, notes, viewport):
    page.set_viewport_size(viewport)
    sign_in(page, live_server.url, member)
    page.goto(live_server.url + "/settings/memory/")
    expect(page.get_by_role("heading", name="Memory", exact=True)).to_be_visible()
    assert _violations(page) == []
    if viewport == PHONE:
        assert _sideways_overflow(page) <= 0


def test_a_person_stops_restores_and_deletes_their_notes(page, live_server, member, notes):
    sign_in(page, live_server.url, member)
    page.goto(live_server.url + "/settings/memory/")
    table = page.locator("#memory-notes")
    row = table.locator("tr[data-note='preferences.md']")
    expect(row.get_by_role("cell", name="Scribe")).to_be_visible()
    row.locator("summary").click()
    expect(row.locator("pre.note-body")).to_have_text("Polish.")

    row.get_by_role("button", name="Stop using preferences.md").click()
    expect(page.get_by_text("preferences.md is no longer used by any agent.")).to_be_visible()
    row = page.locator("#memory-notes tr[data-note='preferences.md']")
    expect(row.get_by_text("Not used")).to_be_visible()
    index = page.locator("#memory-notes tr[data-note='MEMORY.md']")
    index.locator("summary").click()
    expect(index.locator("pre.note-body")).to_have_text("- projects.md — current work")

    row.get_by_role("button", name="Use again: preferences.md").click()
    expect(page.get_by_text("preferences.md is in use again.")).to_be_visible()
    expect(
        page.locator("#memory-notes tr[data-note='preferences.md']").get_by_text("In use")
    ).to_be_visible()

    # Deleting asks first; dismissing keeps the note, accepting deletes it.
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Delete projects.md").click()
    expect(page.locator("#memory-notes tr[data-note='projects.md']")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete projects.md").click()
    expect(page.get_by_text("projects.md was deleted.")).to_be_visible()
    expect(page.locator("#memory-notes tr[data-note='projects.md']")).to_have_count(0)
    assert not MemoryNote.objects.filter(pk=notes["projects"].pk).exists()
    notes["index"].refresh_from_db()
    assert notes["index"].body == ""
