"""Text out of documents: the one parser a fetched PDF or office file goes through.

``web_fetch`` hands a downloaded document here, and a chat attachment is meant to take the same
path, so the agent reads a file the same way whichever door it came through. Why text at all: the
library would hand the raw bytes to the model to read natively, and a model served behind an
OpenAI-compatible endpoint that cannot refuses the whole request ("Unsupported chat content part
type: 'file'") — after which the agent downloads the same document again.

- PDF: ``pypdf``, a maintained pure-Python parser. At most :data:`PDF_MAX_PAGES` pages are read;
  a longer document ends with a note naming the page where reading stopped, and when the pages
  read had no text only that note comes back.
- Word, PowerPoint and Excel (the Office Open XML formats) and OpenDocument text: their XML is
  read with the standard library — each is a zip of XML whose text sits in a few known elements,
  which needs no further dependency. Every member is read with a size cap, so a zip bomb is a
  refusal, not a full disk or memory.

Only text up to ``max_chars`` is extracted (the caller cuts what it returns at the same number), so
a 2,000-page PDF is not parsed in full to keep its first page. Nothing here reaches the network or
the database. Whatever cannot be read is :class:`Unreadable`, whose message names what arrived.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from xml.etree import ElementTree

PDF_MAX_PAGES = 2000
# A member of an office zip is read to at most this many bytes (the text of a 2,000-page report
# is a few MB; anything far past it is a bomb or not a document).
MEMBER_MAX_BYTES = 64 * 1024 * 1024
# How many members of an office zip are read at most (slides, sheets).
MAX_MEMBERS = 2000

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ODT = "application/vnd.oasis.opendocument.text"

DOCUMENT_KINDS = {
    PDF: "PDF",
    DOCX: "Word document",
    PPTX: "PowerPoint presentation",
    XLSX: "Excel workbook",
    ODT: "OpenDocument text",
}


class Unreadable(Exception):
    """The bytes hold no text this module can read; the message says what arrived."""


@dataclass(frozen=True)
class ExtractedText:
    """What a document held: its text, and a note when reading stopped early (or empty)."""

    kind: str
    text: str
    note: str = ""
    pages: int | None = None


def sniff_document_type(data: bytes, declared: str) -> str | None:
    """The document type of ``data`` — by its declared media type, or by its first bytes when the
    server said only ``application/octet-stream`` — or None when it is no document read here."""
    declared = (declared or "").split(";")[0].strip().lower()
    if declared in DOCUMENT_KINDS:
        return declared
    if data.startswith(b"%PDF-"):
        return PDF
    if data.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = set(archive.namelist())
                mimetype = (
                    archive.read("mimetype")[:100].decode("ascii", "replace")
                    if "mimetype" in names
                    else ""
                )
        except (zipfile.BadZipFile, OSError, KeyError):
            return None
        if "word/document.xml" in names:
            return DOCX
        if "ppt/presentation.xml" in names:
            return PPTX
        if "xl/workbook.xml" in names:
            return XLSX
        if mimetype.strip() == ODT:
            return ODT
    return None


def extract_text(data: bytes, media_type: str, *, max_chars: int) -> ExtractedText:
    """The text of a document of ``media_type`` (a :data:`DOCUMENT_KINDS` key), up to about
    ``max_chars`` characters; :class:`Unreadable` when it has none."""
    if media_type == PDF:
        return _pdf_text(data, max_chars=max_chars)
    if media_type in (DOCX, PPTX, XLSX, ODT):
        return _office_text(data, media_type, max_chars=max_chars)
    raise Unreadable(
        f"{media_type or 'an unnamed type'} is not a document type this deployment reads"
    )


# --- PDF ---------------------------------------------------------------------------------------


def _pdf_text(data: bytes, *, max_chars: int) -> ExtractedText:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # An owner password with an empty user password opens; a real one does not.
            try:
                reader.decrypt("")
            except Exception as exc:  # pypdf raises several types for a password it cannot use
                raise Unreadable(f"a password-protected PDF ({exc})") from exc
        total = len(reader.pages)
    except Unreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise Unreadable(f"a PDF that cannot be parsed ({exc})") from exc

    chunks: list[str] = []
    length = 0
    stopped_at: int | None = None
    last = min(total, PDF_MAX_PAGES)
    for number in range(1, last + 1):
        try:
            page_text = reader.pages[number - 1].extract_text() or ""
        except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError):
            page_text = ""  # one broken page does not hide the others
        page_text = page_text.strip()
        if page_text:
            chunks.append(f"## Page {number}\n\n{page_text}")
            length += len(page_text)
        if length >= max_chars and number < total:
            stopped_at = number
            break
    note = ""
    if stopped_at is not None:
        note = f"[Text extracted up to page {stopped_at:,} of {total:,}: the characters to return were reached.]"
    elif total > PDF_MAX_PAGES:
        note = f"[The PDF has {total:,} pages; reading stopped at page {PDF_MAX_PAGES:,}.]"
    text = "\n\n".join(chunks)
    if not text and not note:
        raise Unreadable(
            f"a PDF of {total:,} page{'s' if total != 1 else ''} with no text layer (a scanned document, perhaps)"
        )
    return ExtractedText(kind="PDF", text=text, note=note, pages=total)


# --- Office Open XML / OpenDocument -------------------------------------------------------------

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_TEXT_NS = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"


def _read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    info = archive.getinfo(name)
    if info.file_size > MEMBER_MAX_BYTES:
        raise Unreadable(f"an office file whose part {name} unpacks to {info.file_size:,} bytes")
    with archive.open(info) as member:
        data = member.read(MEMBER_MAX_BYTES + 1)
    if len(data) > MEMBER_MAX_BYTES:
        raise Unreadable(
            f"an office file whose part {name} unpacks past {MEMBER_MAX_BYTES:,} bytes"
        )
    return data


def _xml(archive: zipfile.ZipFile, name: str) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(_read_member(archive, name))
    except ElementTree.ParseError as exc:
        raise Unreadable(
            f"an office file whose part {name} is not well-formed XML ({exc})"
        ) from exc


def _paragraphs(root: ElementTree.Element, paragraph_tag: str, text_tag: str) -> list[str]:
    lines = []
    for paragraph in root.iter(paragraph_tag):
        line = "".join(node.text or "" for node in paragraph.iter(text_tag)).strip()
        if line:
            lines.append(line)
    return lines


def _numbered(names: list[str], pattern: str) -> list[str]:
    found = [(int(m.group(1)), n) for n in names if (m := re.fullmatch(pattern, n))]
    return [n for _, n in sorted(found)][:MAX_MEMBERS]


def _office_text(data: bytes, media_type: str, *, max_chars: int) -> ExtractedText:
    kind = DOCUMENT_KINDS[media_type]
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as exc:
        raise Unreadable(f"a {kind} that is not a valid zip ({exc})") from exc
    with archive:
        names = archive.namelist()
        sections: list[str] = []
        length = 0
        try:
            if media_type == DOCX:
                sections = _paragraphs(_xml(archive, "word/document.xml"), f"{_W}p", f"{_W}t")
            elif media_type == ODT:
                root = _xml(archive, "content.xml")
                sections = [
                    t for p in root.iter(f"{_TEXT_NS}p") if (t := "".join(p.itertext()).strip())
                ]
            elif media_type == PPTX:
                for number, name in enumerate(
                    _numbered(names, r"ppt/slides/slide(\d+)\.xml"), start=1
                ):
                    lines = _paragraphs(_xml(archive, name), f"{_A}p", f"{_A}t")
                    if lines:
                        sections.append(f"## Slide {number}\n\n" + "\n".join(lines))
                        length += sum(len(line) for line in lines)
                    if length >= max_chars:
                        break
            else:
                sections = _sheet_text(archive, names, max_chars=max_chars)
        except KeyError as exc:
            raise Unreadable(f"a {kind} missing its part {exc}") from exc
    text = "\n\n".join(sections).strip()
    if not text:
        raise Unreadable(f"a {kind} with no text in it")
    return ExtractedText(kind=kind, text=text)


def _sheet_text(archive: zipfile.ZipFile, names: list[str], *, max_chars: int) -> list[str]:
    shared: list[str] = []
    if "xl/sharedStrings.xml" in names:
        for item in _xml(archive, "xl/sharedStrings.xml").iter(f"{_S}si"):
            shared.append("".join(t.text or "" for t in item.iter(f"{_S}t")))
    sections = []
    length = 0
    for number, name in enumerate(_numbered(names, r"xl/worksheets/sheet(\d+)\.xml"), start=1):
        rows = []
        for row in _xml(archive, name).iter(f"{_S}row"):
            cells = []
            for cell in row.iter(f"{_S}c"):
                value = cell.find(f"{_S}v")
                inline = cell.find(f"{_S}is")
                if cell.get("t") == "s" and value is not None and (value.text or "").isdigit():
                    index = int(value.text)
                    cells.append(shared[index] if index < len(shared) else "")
                elif inline is not None:
                    cells.append("".join(t.text or "" for t in inline.iter(f"{_S}t")))
                elif value is not None:
                    cells.append(value.text or "")
            if any(c.strip() for c in cells):
                line = " | ".join(c.strip() for c in cells)
                rows.append(line)
                length += len(line)
            if length >= max_chars:
                break
        if rows:
            sections.append(f"## Sheet {number}\n\n" + "\n".join(rows))
        if length >= max_chars:
            break
    return sections
