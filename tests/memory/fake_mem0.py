"""A small fake of mem0's platform API on 127.0.0.1: add, search (by shared words), delete a
user's memories, list users; the key checked on every request; a switch that makes it fail.

Tests reach it by replacing ``mem0.ENDPOINTS["cloud"]`` — a module constant no spec can name.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class FakeMem0:
    def __init__(self, *, api_key: str = "m0-key") -> None:
        self.api_key = api_key
        self.memories: dict[str, list[str]] = {}
        self.requests: list[tuple[str, str, dict, dict]] = []
        # "all": every request answers 500; "entities": only the users listing does.
        self.failing: str | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _body(self) -> dict:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)) or 0)
                return json.loads(raw or b"{}")

            def _answer(self, status: int, payload) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                parts = urlsplit(self.path)
                body = self._body() if method == "POST" else {}
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                server.requests.append((method, parts.path, body, dict(self.headers)))
                if self.headers.get("authorization") != f"Token {server.api_key}":
                    return self._answer(401, {"detail": "bad key"})
                if server.failing == "all" or (
                    server.failing == "entities" and parts.path == "/v1/entities/"
                ):
                    return self._answer(500, {"detail": "down"})
                return self._answer(*server.route(method, parts.path, body, query))

            def do_POST(self):
                self._handle("POST")

            def do_GET(self):
                self._handle("GET")

            def do_DELETE(self):
                self._handle("DELETE")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def route(self, method, path, body, query):
        if method == "POST" and path == "/v1/memories/":
            text = " ".join(m["content"] for m in body["messages"])
            self.memories.setdefault(body["user_id"], []).append(text)
            return 200, [{"id": "m1", "event": "ADD", "memory": text}]
        if method == "POST" and path == "/v1/memories/search/":
            words = set(body["query"].lower().split())
            found = [
                {"id": str(i), "memory": memory, "score": 1.0}
                for i, memory in enumerate(self.memories.get(body["user_id"], []))
                if words & set(memory.lower().replace(".", " ").split())
            ]
            return 200, found[: body.get("limit", 5)]
        if method == "DELETE" and path == "/v1/memories/":
            self.memories.pop(query["user_id"], None)
            return 200, {"message": "Memories deleted successfully!"}
        if method == "GET" and path == "/v1/entities/":
            return 200, [
                {"id": n, "name": name, "type": "user"} for n, name in enumerate(self.memories)
            ]
        return 404, {"detail": "no such route"}

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeMem0:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
