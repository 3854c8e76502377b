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
  refusal, not a full disk or memory. Word and OpenDocument text are streamed through expat
  (:func:`_stream_paragraphs`) and never held as a tree: their body is one part that can be tens
  of MB, and a 184 KB upload whose 60 MB body was empty paragraphs cost a worker 0.8 GB as a tree.
  A paragraph with nothing a reader would see is dropped there, and reading stops at ``max_chars``.

Only text up to ``max_chars`` is extracted (the caller cuts what it returns at the same number), so
a 2,000-page PDF is not parsed in full to keep its first page. Nothing here reaches the network or
the database. Whatever cannot be read is :class:`Unreadable`, whose message names what arrived.
"""

from __future__ import annotations

import io
import re
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass
from xml.etree import ElementTree
from xml.parsers import expat

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


def visible(text: str) -> bool:
    """Whether ``text`` holds a character a reader would see: spaces, line and paragraph
    separators, control characters and format characters (zero-width spaces, joiners, marks)
    alone make an empty paragraph, which must not become a chunk to embed."""
    return any(unicodedata.category(char) not in _INVISIBLE for char in text)


_INVISIBLE = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})


@dataclass(frozen=True)
class _Vocabulary:
    """Which elements of a word-processor body make its paragraphs: ``paragraphs`` are read as
    one line each; character data counts only inside ``text`` (every element when None);
    ``spaces`` are empty elements standing for a space (a tab, a line break; OpenDocument's
    ``text:s`` carries a count in ``text:c``); ``page_break`` starts a new page."""

    paragraphs: frozenset[str]
    text: frozenset[str] | None
    spaces: frozenset[str]
    page_break: str | None = None
    space_count: str | None = None


# expat names an element "namespace}local" with this separator: the tags below without their "{".
_DOCX_BODY = _Vocabulary(
    paragraphs=frozenset({f"{_W[1:]}p"}),
    text=frozenset({f"{_W[1:]}t"}),
    spaces=frozenset({f"{_W[1:]}tab", f"{_W[1:]}br", f"{_W[1:]}cr"}),
)
_ODT_BODY = _Vocabulary(
    paragraphs=frozenset({f"{_TEXT_NS[1:]}p", f"{_TEXT_NS[1:]}h"}),
    text=None,
    spaces=frozenset({f"{_TEXT_NS[1:]}s", f"{_TEXT_NS[1:]}tab", f"{_TEXT_NS[1:]}line-break"}),
    # LibreOffice writes where its layout broke the pages (text:soft-page-break): the pages a
    # reader sees.
    page_break=f"{_TEXT_NS[1:]}soft-page-break",
    space_count=f"{_TEXT_NS[1:]}c",
)
# How much of a streamed part is decompressed and parsed at a time.
_FEED_BYTES = 64 * 1024


def _refuse_declarations(*_args) -> None:
    # Office parts never declare a DTD or entities; one that does is refused before any entity
    # could expand (the billion-laughs shape), as defusedxml does.
    raise Unreadable("an office file whose XML declares a DTD or entities")


def _stream_paragraphs(
    archive: zipfile.ZipFile, name: str, vocabulary: _Vocabulary, *, max_chars: int
) -> list[list[str]]:
    """The visible paragraphs of the part ``name``, page by page, read piece by piece.

    Nothing is kept but the lines: expat calls back per element, an empty paragraph leaves
    nothing behind, and reading stops once ``max_chars`` characters of text were kept or the part
    unpacks past :data:`MEMBER_MAX_BYTES`. A paragraph nested in another (a text box, a note) is
    a line of its own; a paragraph is on the page where its text started."""
    info = archive.getinfo(name)
    if info.file_size > MEMBER_MAX_BYTES:
        raise Unreadable(f"an office file whose part {name} unpacks to {info.file_size:,} bytes")
    pages: list[list[str]] = [[]]
    # The paragraphs open around the parser's position, innermost last: [page index, pieces].
    open_paragraphs: list[list] = []
    inside_text = 0
    kept = 0
    # Characters gathered in paragraphs not ended yet: one paragraph of 60 MB is bounded too.
    pending = 0

    def start(tag: str, attributes: dict[str, str]) -> None:
        nonlocal inside_text, pending
        if tag in vocabulary.paragraphs:
            open_paragraphs.append([len(pages) - 1, []])
        elif tag == vocabulary.page_break:
            pages.append([])
            # A break before any text of the paragraphs around it: they start on the new page.
            for paragraph in open_paragraphs:
                if not visible("".join(paragraph[1])):
                    paragraph[0] = len(pages) - 1
        elif not open_paragraphs:
            return
        elif vocabulary.text is not None and tag in vocabulary.text:
            inside_text += 1
        elif tag in vocabulary.spaces:
            count = attributes.get(vocabulary.space_count or "", "1")
            spaces = " " * min(int(count) if count.isdecimal() else 1, 100)
            open_paragraphs[-1][1].append(spaces)
            pending += len(spaces)

    def keep(page: int, pieces: list[str]) -> None:
        nonlocal kept, pending
        raw = "".join(pieces)
        pending -= len(raw)
        line = raw.strip()
        if visible(line):
            pages[page].append(line)
            kept += len(line)

    def end(tag: str) -> None:
        nonlocal inside_text
        if tag in vocabulary.paragraphs and open_paragraphs:
            keep(*open_paragraphs.pop())
        elif vocabulary.text is not None and tag in vocabulary.text and inside_text:
            inside_text -= 1

    def characters(data: str) -> None:
        nonlocal pending
        if open_paragraphs and (vocabulary.text is None or inside_text):
            open_paragraphs[-1][1].append(data)
            pending += len(data)

    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = characters
    parser.StartDoctypeDeclHandler = _refuse_declarations
    parser.EntityDeclHandler = _refuse_declarations
    unpacked = 0
    try:
        with archive.open(info) as member:
            while kept + pending < max_chars:
                piece = member.read(_FEED_BYTES)
                unpacked += len(piece)
                if unpacked > MEMBER_MAX_BYTES:
                    raise Unreadable(
                        f"an office file whose part {name} unpacks past {MEMBER_MAX_BYTES:,} bytes"
                    )
                parser.Parse(piece, not piece)
                if not piece:
                    break
    except expat.ExpatError as exc:
        raise Unreadable(
            f"an office file whose part {name} is not well-formed XML ({exc})"
        ) from exc
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
        raise Unreadable(f"an office file whose part {name} cannot be unpacked ({exc})") from exc
    # Stopped at the cap inside a paragraph: what it gathered so far is text like any other.
    while open_paragraphs:
        keep(*open_paragraphs.pop())
    return pages


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
                (sections,) = _stream_paragraphs(
                    archive, "word/document.xml", _DOCX_BODY, max_chars=max_chars
                )
            elif media_type == ODT:
                pages = _stream_paragraphs(archive, "content.xml", _ODT_BODY, max_chars=max_chars)
                sections = [line for lines in pages for line in lines]
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
                number_text = value.text if value is not None else None
                if cell.get("t") == "s" and number_text is not None and number_text.isdigit():
                    index = int(number_text)
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


# --- page by page: what knowledge ingestion reads -----------------------------------------------

RTF = "application/rtf"
HTML = "text/html"
CSV = "text/csv"
MARKDOWN = "text/markdown"
PLAIN = "text/plain"

# What an uploaded file's extension says it is (uploads are named by people; the declared media
# type of a browser is often empty or generic, so the name decides and the bytes confirm).
UPLOAD_TYPES = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".odt": ODT,
    ".rtf": RTF,
    ".pptx": PPTX,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": PLAIN,
    ".text": PLAIN,
    ".html": HTML,
    ".htm": HTML,
    ".csv": CSV,
}
TEXT_KINDS = {
    RTF: "RTF document",
    HTML: "web page",
    CSV: "CSV file",
    MARKDOWN: "Markdown file",
    PLAIN: "text file",
}

# Which types have a page a reader can open (seed 000, "Búsqueda de conocimiento"): a PDF, a
# presentation (its slide) and a word-processor file that keeps page breaks (.odt, .rtf). A .docx
# stores no pages (Word lays them out when it opens the file), and Markdown, a spreadsheet, a web
# page or a text file has none: their results name the document only.
PAGED_TYPES = frozenset({PDF, PPTX, ODT, RTF})


@dataclass(frozen=True)
class ExtractedPages:
    """A document's text page by page: ``pages`` is a list of (page number or None, text)."""

    kind: str
    media_type: str
    pages: list[tuple[int | None, str]]

    @property
    def text_length(self) -> int:
        return sum(len(text) for _, text in self.pages)


def upload_type(filename: str) -> str | None:
    """The media type an uploaded file's name says, or None when it is no type read here."""
    lowered = (filename or "").lower()
    for extension, media_type in UPLOAD_TYPES.items():
        if lowered.endswith(extension):
            return media_type
    return None


def _decode(data: bytes) -> str:
    for encoding in (
        ("utf-8-sig", "utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ("utf-8-sig",)
    ):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def extract_pages(data: bytes, media_type: str, *, max_chars: int) -> ExtractedPages:
    """The text of a document of ``media_type`` page by page (pages numbered from 1 for
    :data:`PAGED_TYPES`, one unnumbered section otherwise); :class:`Unreadable` when empty."""
    if media_type == PDF:
        pages = _pdf_pages(data, max_chars=max_chars)
        kind = "PDF"
    elif media_type == PPTX:
        kind = DOCUMENT_KINDS[PPTX]
        text = _office_text(data, media_type, max_chars=max_chars).text
        pages = [
            (int(m.group(1)), m.group(2).strip())
            for m in re.finditer(r"## Slide (\d+)\n\n(.*?)(?=\n\n## Slide \d+\n\n|\Z)", text, re.S)
        ]
    elif media_type == ODT:
        kind = DOCUMENT_KINDS[ODT]
        pages = _odt_pages(data, max_chars=max_chars)
    elif media_type == DOCX:
        kind = DOCUMENT_KINDS[DOCX]
        pages = [(None, _office_text(data, media_type, max_chars=max_chars).text)]
    elif media_type == RTF:
        kind = TEXT_KINDS[RTF]
        pages = _rtf_pages(data)
    elif media_type == HTML:
        kind = TEXT_KINDS[HTML]
        pages = [(None, _html_text(data))]
    elif media_type in (CSV, MARKDOWN, PLAIN):
        kind = TEXT_KINDS[media_type]
        pages = [(None, _decode(data))]
    else:
        raise Unreadable(
            f"{media_type or 'an unnamed type'} is not a document type this deployment reads"
        )
    pages = [(number, text.strip()) for number, text in pages if text and text.strip()]
    if not pages:
        raise Unreadable(f"a {kind} with no text in it")
    length = 0
    kept = []
    for number, text in pages:
        if length >= max_chars:
            break
        kept.append((number, text[: max_chars - length]))
        length += len(kept[-1][1])
    return ExtractedPages(kind=kind, media_type=media_type, pages=kept)


def _pdf_pages(data: bytes, *, max_chars: int) -> list[tuple[int | None, str]]:
    text = _pdf_text(data, max_chars=max_chars).text
    return [
        (int(m.group(1)), m.group(2))
        for m in re.finditer(r"## Page (\d+)\n\n(.*?)(?=\n\n## Page \d+\n\n|\Z)", text, re.S)
    ]


def _odt_pages(data: bytes, *, max_chars: int) -> list[tuple[int | None, str]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as exc:
        raise Unreadable(f"an OpenDocument text that is not a valid zip ({exc})") from exc
    with archive:
        try:
            pages = _stream_paragraphs(archive, "content.xml", _ODT_BODY, max_chars=max_chars)
        except KeyError as exc:
            raise Unreadable(f"an OpenDocument text missing its part {exc}") from exc
    return [(number, "\n".join(lines)) for number, lines in enumerate(pages, start=1)]


def _rtf_pages(data: bytes) -> list[tuple[int | None, str]]:
    from striprtf.striprtf import rtf_to_text

    source = _decode(data)
    if not source.lstrip().startswith("{\\rtf"):
        raise Unreadable("an RTF file that does not start with {\\rtf")
    # An explicit \page is a page break the author put there; the text between two is one page.
    parts = re.split(r"\\page(?![a-z])", source)
    pages: list[tuple[int | None, str]] = []
    for number, part in enumerate(parts, start=1):
        # Each part is balanced again so striprtf reads it as a document of its own.
        opened = part.count("{") - part.count("}")
        balanced = ("{" * max(0, -opened)) + part + ("}" * max(0, opened))
        if number > 1:
            balanced = "{\\rtf1 " + balanced
        try:
            pages.append((number, rtf_to_text(balanced, errors="ignore")))
        except (ValueError, IndexError) as exc:
            raise Unreadable(f"an RTF file that cannot be parsed ({exc})") from exc
    return pages


def _html_text(data: bytes) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_decode(data), "lxml")
    for node in soup(["script", "style", "noscript", "template"]):
        node.decompose()
    lines = [" ".join(line.split()) for line in soup.get_text("\n").splitlines()]
    return "\n".join(line for line in lines if line)
