"""An OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1 for the endpoint embedder's tests:
each text becomes a bag of its hashed words (so texts sharing words are near), with usage of
one token per word. It records each request's Authorization header."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def bag_of_words(text: str, dimensions: int) -> list[float]:
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dimensions] += 1.0
    return vector if any(vector) else [1.0] + [0.0] * (dimensions - 1)


class FakeEmbeddings:
    def __init__(self, *, dimensions: int = 384, fail: bool = False) -> None:
        self.dimensions = dimensions
        self.fail = fail
        self.authorizations: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.authorizations.append(self.headers.get("Authorization", ""))
                if server.fail or not self.path.endswith("/embeddings"):
                    self.send_response(503)
                    self.end_headers()
                    return
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                answer = {
                    "object": "list",
                    "model": body["model"],
                    "data": [
                        {
                            "object": "embedding",
                            "index": i,
                            "embedding": bag_of_words(t, server.dimensions),
                        }
                        for i, t in enumerate(texts)
                    ],
                    "usage": {
                        "prompt_tokens": sum(len(t.split()) for t in texts),
                        "total_tokens": sum(len(t.split()) for t in texts),
                    },
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
