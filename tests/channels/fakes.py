"""A fake of each chat platform's HTTP API on 127.0.0.1: a small threaded server that records
every call the bot makes and answers the way the platform does (Slack's ``{"ok": true}``,
Telegram's ``{"ok": true, "result": ...}``, Mattermost's REST objects)."""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl


@dataclass
class Call:
    method: str
    path: str
    # JSON as parsed; a form as a dict of str; a multipart form as a dict of its fields, each
    # file an Upload; any other body (an upload of raw bytes) as bytes.
    body: object
    authorization: str


@dataclass
class Upload:
    filename: str
    content_type: str
    data: bytes


def parse_body(content_type: str, raw: bytes) -> object:
    if not raw:
        return None
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/json":
        return json.loads(raw)
    if kind == "application/x-www-form-urlencoded":
        return dict(parse_qsl(raw.decode()))
    if kind == "multipart/form-data":
        message = BytesParser(policy=policy.default).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw
        )
        fields: dict[str, object] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            data = part.get_payload(decode=True)
            if part.get_filename():
                fields[name] = Upload(part.get_filename(), part.get_content_type(), data)
            else:
                fields[name] = data.decode()
        return fields
    return raw


class FakePlatform:
    """``calls`` in order; ``answers`` maps a method name (Slack, Telegram) or "METHOD /path"
    (Mattermost) to the JSON body to answer with, else the default below."""

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.calls: list[Call] = []
        self.answers: dict[str, object] = {}
        # The workspace's people by id, as the platform describes them (Slack's users.info
        # ``user``, Mattermost's user object): what the name lookups answer.
        self.people: dict[str, dict] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = parse_body(self.headers.get("Content-Type", ""), raw)
                call = Call(self.command, self.path, body, self.headers.get("Authorization", ""))
                with fake._lock:
                    fake.calls.append(call)
                status, answer = fake.answer(call)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _serve

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def method_of(self, call: Call) -> str:
        path = call.path.split("?")[0]
        if self.platform == "slack":
            return path.strip("/")
        if self.platform == "telegram":
            return path.rsplit("/", 1)[-1]
        return f"{call.method} {path.removeprefix('/api/v4')}"

    def answer(self, call: Call) -> tuple[int, object]:
        method = self.method_of(call)
        if method in self.answers:
            answer = self.answers[method]
            return answer if isinstance(answer, tuple) else (200, answer)
        n = next(self._ids)
        if self.platform == "slack":
            if method == "chat.postMessage":
                return 200, {"ok": True, "ts": f"1700000000.{n:06d}"}
            if method == "auth.test":
                return 200, {"ok": True, "team": "Acme", "user": "helperbot"}
            if method == "users.info":
                person = self.people.get((call.body or {}).get("user", ""))
                if person is None:
                    return 200, {"ok": False, "error": "user_not_found"}
                return 200, {"ok": True, "user": person}
            if method == "files.getUploadURLExternal":
                # Slack's upload URL is on another host; the fake's is its own /upload/ path.
                return 200, {
                    "ok": True,
                    "upload_url": f"{self.url}/upload/v1/F{n}",
                    "file_id": f"F{n}",
                }
            if method.startswith("upload/"):
                return 200, f"OK - {len(call.body or b'')}"
            return 200, {"ok": True}
        if self.platform == "telegram":
            if method == "sendMessage":
                return 200, {"ok": True, "result": {"message_id": 1000 + n}}
            if method == "sendPhoto":
                return 200, {"ok": True, "result": {"message_id": 1000 + n, "photo": [{}]}}
            if method == "getMe":
                return 200, {"ok": True, "result": {"username": "helper_bot"}}
            return 200, {"ok": True, "result": True}
        if method == "POST /posts":
            return 200, {"id": f"post{n}"}
        if method == "POST /users/ids":
            return 200, [self.people[i] for i in call.body or [] if i in self.people]
        if method == "POST /files":
            upload = (call.body or {}).get("files")
            name = upload.filename if isinstance(upload, Upload) else "?"
            return 201, {"file_infos": [{"id": f"file{n}", "name": name}], "client_ids": []}
        if method == "GET /users/me":
            return 200, {"id": "botuser", "username": "helper"}
        if method == "POST /channels/direct":
            return 200, {"id": "dmchannel"}
        return 200, {}

    # --- what the bot did, in the platform's own words ---------------------------------------

    def called(self, method: str) -> list[Call]:
        return [call for call in self.calls if self.method_of(call) == method]

    def texts(self) -> list[str]:
        """Every text the bot posted or edited into, in order."""
        texts = []
        for call in self.calls:
            body = call.body if isinstance(call.body, dict) else {}
            for key in ("text", "message"):
                if key in body:
                    texts.append(body[key])
        return texts
