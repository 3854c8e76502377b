"""Every main page of the console, in a real headless Chromium, at desktop and phone widths:
axe-core (vendored in static/vendor/axe-core) finds no violation, and at 390 px nothing scrolls
sideways — the page is as wide as the phone, tables scroll inside their own box."""

from urllib.parse import urljoin

import pytest

from apps.knowledge.services import collection_create, document_upload
from apps.notifications.models import Notification
from apps.ratings.models import MessageRating
from apps.runs.models import Message
from tests.approvals.factories import ADD_ONE, gated_agent, run_now
from tests.factories import DEFAULT_PASSWORD
from tests.runs.factories import published_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE_URL = "/static/vendor/axe-core/axe.min.js"
# WCAG 2.1 A and AA plus axe's best practices (landmarks, one h1, headings in order, ...).
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}


def sign_in(page, base, user):
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", user.email)
    page.fill("input[name=password]", DEFAULT_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#org-switcher", state="attached")


def _violations(page) -> list[str]:
    # Loaded from this server, not inlined: the console's CSP runs its own static scripts only.
    page.add_script_tag(url=urljoin(page.url, AXE_URL))
    found = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})"
        ".then(r => r.violations.map(v => v.id + ': ' + v.help + ' — '"
        " + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')))",
        AXE_TAGS,
    )
    return found


def _sideways_overflow(page) -> int:
    return page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )


@pytest.fixture
def console_pages(org, owner, member):
    """Each main page with something on it: a published agent and the template, a conversation
    with a completed and a parked turn, runs in Activity, an audit trail, a notification."""
    helper = published_agent(org, name="Helper", created_by=owner)
    gated = gated_agent(org, name="Gated")
    first = run_now(owner, org, helper, "Hello there", surface="chat")
    run_now(owner, org, helper, "And again", surface="chat", conversation=first.conversation)
    parked = run_now(owner, org, gated, ADD_ONE, surface="chat")
    Notification.objects.create(
        organization=org, user=owner, kind="approvals", title="A call waits", body="Decide it"
    )
    # A thumb down on an answer, so the dashboard's quality card has its bars and its table.
    answer = Message.objects.get(run=first, role="assistant")
    MessageRating.objects.create(
        organization=org, message=answer, run=first, user=owner, thumb="down", comment="Too long"
    )
    handbook = collection_create(actor=owner, organization=org, name="Handbook")
    document_upload(actor=owner, collection=handbook, file_name="policy.md", data=b"# Refunds")
    return {
        "Dashboard": "/",
        "Agents": "/agents/",
        "Builder": f"/agents/{helper.pk}/",
        "Chat": "/chat/",
        "Chat conversation": f"/chat/{first.conversation_id}/",
        "Chat parked": f"/chat/{parked.conversation_id}/",
        "Activity": "/activity/",
        "Activity run detail": f"/activity/?run={first.pk}",
        "Activity approvals": "/activity/?tab=approvals",
        "Activity over a period": "/activity/?surface=chat&period=30d",
        "Spend": "/spend/",
        "Audit": "/audit/",
        "Settings organization": "/settings/organization/",
        "Settings members": "/settings/members/",
        "Settings provider keys": "/settings/keys/",
        "Settings API keys": "/settings/api-keys/",
        "Settings model profiles": "/settings/model-profiles/",
        "Settings notifications": "/settings/notifications/",
        "Notifications": "/notifications/",
        "Knowledge": "/knowledge/",
        "Knowledge collection": f"/knowledge/{handbook.pk}/",
    }


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_main_page_passes_axe_and_fits_a_phone(
    console_pages, page, live_server, owner, viewport
):
    page.set_viewport_size(viewport)
    sign_in(page, live_server.url, owner)
    problems = {}
    for name, path in console_pages.items():
        response = page.goto(live_server.url + path)
        assert response.status == 200, f"{name} ({path}) answered {response.status}"
        found = _violations(page)
        if viewport == PHONE and (overflow := _sideways_overflow(page)) > 0:
            found.append(f"scrolls sideways by {overflow}px at 390px")
        if found:
            problems[name] = found
    assert not problems, "\n".join(f"{name}: {found}" for name, found in problems.items())


def test_the_login_page_passes_axe(page, live_server):
    page.set_viewport_size(PHONE)
    page.goto(live_server.url + "/login/")
    assert _violations(page) == []
    assert _sideways_overflow(page) <= 0


def test_at_390_px_the_navigation_folds_behind_a_menu_button(page, live_server, owner):
    from playwright.sync_api import expect

    page.set_viewport_size(PHONE)
    sign_in(page, live_server.url, owner)
    page.goto(live_server.url + "/activity/")
    # The skip link is the first stop and leads to the content.
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    toggle = page.locator("#nav-toggle")
    nav = page.locator("nav.mainnav")
    expect(toggle).to_be_visible()
    expect(nav).to_be_hidden()
    toggle.click()
    expect(nav).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(nav.locator('a[aria-current="page"]')).to_have_text("Activity")
