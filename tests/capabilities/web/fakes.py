"""Fakes on 127.0.0.1: a web server that plays any number of sites, told apart by the Host header.

A route is ``(host, path) -> Page``; a page is a status, headers and a body (or a redirect). Every
request is recorded in ``requests`` (method, host, path, headers, body) so a test can check what a
search client sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Page:
    body: bytes | str = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def redirect(cls, location: str, status: int = 302) -> Page:
        return cls(status=status, headers={"Location": location}, content_type="text/plain")

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Page:
        return cls(json.dumps(payload), status=status, content_type="application/json")


@dataclass
class Seen:
    method: str
    host: str
    path: str
    headers: dict[str, str]
    body: bytes


class FakeWeb:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Page | Callable[[Seen], Page]] = {}
        self.requests: list[Seen] = []
        web = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
                target = self.path
                if target.startswith(("http://", "https://")):
                    # Asked as a forward proxy (absolute-form): serve it only for 127.0.0.1.
                    parts = urlsplit(target)
                    host = parts.hostname or ""
                    target = parts.path + (f"?{parts.query}" if parts.query else "")
                seen = Seen(self.command, host, target, dict(self.headers.items()), body)
                web.requests.append(seen)
                path = target.split("?", 1)[0]
                page = web.routes.get((host, path)) or web.routes.get(("*", path))
                if callable(page):
                    page = page(seen)
                if page is None:
                    page = Page("not here", status=404, content_type="text/plain")
                data = page.body.encode() if isinstance(page.body, str) else page.body
                self.send_response(page.status)
                self.send_header("Content-Type", page.content_type)
                self.send_header("Content-Length", str(len(data)))
                for key, value in page.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_CONNECT(self):
                # A tunnel would go wherever it names: refused, and recorded for the test to see.
                web.requests.append(
                    Seen("CONNECT", self.path.rsplit(":", 1)[0], self.path, {}, b"")
                )
                self.send_response(403)
                self.end_headers()

            do_GET = _answer
            do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeWeb:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def route(self, host: str, path: str, page: Page | Callable[[Seen], Page]) -> None:
        self.routes[(host, path)] = page

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"
