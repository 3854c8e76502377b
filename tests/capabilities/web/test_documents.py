"""Documents and images behind a URL: PDFs and office files come back as their text (the one parser
in ``apps.capabilities.documents``), an image as an image, a binary without text as a retry."""

from __future__ import annotations

import io
import zipfile

import pytest
from pydantic_ai.messages import BinaryContent

from apps.capabilities import documents

from .conftest import url
from .documents import docx, pdf, xlsx
from .fakes import Page
from .runs import agent_with, only_return, run_now, slash_call

pytestmark = pytest.mark.django_db

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7V\xbd\xfa\x00\x00\x00\x00IEND\xaeB`\x82"
)


def fetch(member, org, site, path, page, **config):
    site.route("docs.example", path, page)
    agent = agent_with(org, {"id": "web_fetch", "config": config})
    return only_return(
        run_now(member, org, agent, slash_call("web_fetch", url=url(site, "docs.example", path)))
    )


def test_a_pdf_comes_back_as_its_text_page_by_page(network, site, org, member):
    body = pdf(["Annual report 2026", "", "Revenue grew by 12 percent"])
    part = fetch(member, org, site, "/report.pdf", Page(body, content_type="application/pdf"))
    assert part.outcome == "success"
    text = part.model_response_str()
    assert text.startswith("# PDF at http://docs.example:")
    assert (
        "## Page 1\n\nAnnual report 2026" in text
        and "## Page 3\n\nRevenue grew by 12 percent" in text
    )
    assert "## Page 2" not in text


def test_a_pdf_served_as_octet_stream_is_recognised_by_its_bytes(network, site, org, member):
    part = fetch(
        member,
        org,
        site,
        "/download",
        Page(pdf(["Sniffed"]), content_type="application/octet-stream"),
    )
    assert part.outcome == "success" and "Sniffed" in part.model_response_str()


def test_a_pdf_is_cut_at_max_content_chars_and_says_where_extraction_stopped(
    network, site, org, member
):
    pages = [f"page {n} " + "x" * 600 for n in range(1, 11)]
    part = fetch(
        member,
        org,
        site,
        "/long.pdf",
        Page(pdf(pages), content_type="application/pdf"),
        max_content_chars=1000,
    )
    text = part.model_response_str()
    assert "[Text extracted up to page 2 of 10" in text
    assert "[Cut at 1,000 characters of" in text
    assert "page 3 " not in text


def test_a_pdf_past_2000_pages_ends_with_a_note_naming_the_page(network, site, org, member):
    body = pdf(["First page text"] + [""] * 2000)
    part = fetch(member, org, site, "/huge.pdf", Page(body, content_type="application/pdf"))
    text = part.model_response_str()
    assert "First page text" in text
    assert text.rstrip().endswith("[The PDF has 2,001 pages; reading stopped at page 2,000.]")


def test_a_long_pdf_whose_pages_read_had_no_text_returns_only_the_note(network, site, org, member):
    part = fetch(
        member, org, site, "/empty.pdf", Page(pdf([""] * 2001), content_type="application/pdf")
    )
    assert part.outcome == "success"
    text = part.model_response_str()
    assert "## Page" not in text
    assert text.rstrip().endswith("[The PDF has 2,001 pages; reading stopped at page 2,000.]")


def test_a_scanned_pdf_without_text_is_a_retry_naming_it(network, site, org, member):
    part = fetch(
        member, org, site, "/scan.pdf", Page(pdf(["", ""]), content_type="application/pdf")
    )
    assert part.outcome == "retried"
    assert "it is a PDF of 2 pages with no text layer" in part.content


def test_a_broken_pdf_is_a_retry(network, site, org, member):
    part = fetch(
        member, org, site, "/bad.pdf", Page(b"%PDF-1.4 garbage", content_type="application/pdf")
    )
    assert part.outcome == "retried" and "Could not read" in part.content


def test_a_word_document_and_a_workbook_come_back_as_text(network, site, org, member):
    word = fetch(
        member,
        org,
        site,
        "/terms.docx",
        Page(
            docx(["Terms of service", "You may cancel at any time."]), content_type=documents.DOCX
        ),
    )
    assert "Terms of service\n\nYou may cancel at any time." in word.model_response_str()
    sheet = fetch(
        member,
        org,
        site,
        "/prices.xlsx",
        Page(xlsx([["Item", "Price"], ["Tea", "3"]]), content_type="application/octet-stream"),
    )
    assert "## Sheet 1\n\nItem | Price\nTea | 3" in sheet.model_response_str()


def test_an_office_zip_bomb_is_refused_not_unpacked(network, site, org, member):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b" " * (documents.MEMBER_MAX_BYTES + 1))
    part = fetch(member, org, site, "/bomb.docx", Page(out.getvalue(), content_type=documents.DOCX))
    assert part.outcome == "retried"
    assert "unpacks to" in part.content


def test_an_image_comes_back_as_an_image(network, site, org, member):
    part = fetch(member, org, site, "/logo.png", Page(PNG, content_type="image/png"))
    assert part.outcome == "success"
    images = [item for item in part.content if isinstance(item, BinaryContent)]
    assert [image.media_type for image in images] == ["image/png"] and images[0].data == PNG


def test_an_image_too_large_to_send_is_a_retry(network, site, org, member, monkeypatch):
    from apps.capabilities.tools import web_fetch

    monkeypatch.setattr(web_fetch, "IMAGE_MAX_BYTES", 40)
    part = fetch(member, org, site, "/big.png", Page(PNG, content_type="image/png"))
    assert part.outcome == "retried"
    assert f"it is an image of {len(PNG)} bytes, larger than the 40 a model is sent" in part.content
