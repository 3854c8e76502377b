"""Content negotiation for file downloads (the CSV/JSONL exports)."""

from rest_framework.negotiation import BaseContentNegotiation


class FileDownloadNegotiation(BaseContentNegotiation):
    """An export answers a file whatever the Accept header says (a browser asks for text/html);
    its errors are still JSON from the first renderer."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
