"""A fake of each chat platform's HTTP API on 127.0.0.1: a small threaded server that records
every call the bot makes and answers the way the platform does (Slack's ``{"ok": true}``,
Telegram's ``{"ok": true, "result": ...}``, Mattermost's REST objects). The Mattermost fake also
serves the bot's websocket (``/api/v4/websocket``) on the same port, framed by the websockets
library's own server protocol: ``authentication_challenge`` with the bot token, then the
``posted`` events a test sends down it (:meth:`FakePlatform.posted`)."""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from dataclasses import dataclass
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

from websockets.frames import Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol

MATTERMOST_BOT_TOKEN = "mattermost-bot-token"


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
        # Mattermost: every websocket the bot opened, in order; the token it must prove itself
        # with (a wrong one is answered FAIL and the socket closed, as Mattermost does).
        self.sockets: list[FakeSocket] = []
        self.bot_token = MATTERMOST_BOT_TOKEN
        # Where the websocket's address redirects to, when a test wants it to.
        self.websocket_redirect = ""
        self._seq = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if (
                    fake.platform == "mattermost"
                    and self.path.split("?")[0] == "/api/v4/websocket"
                    and fake.websocket_redirect
                ):
                    with fake._lock:
                        fake.calls.append(Call("GET", self.path, None, ""))
                    self.send_response(302)
                    self.send_header("Location", fake.websocket_redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if (
                    fake.platform == "mattermost"
                    and self.path.split("?")[0].startswith("/api/v4/websocket")
                    and self.headers.get("Upgrade", "").lower() == "websocket"
                ):
                    self.close_connection = True
                    FakeSocket(fake, self).serve()
                    return
                self._serve()

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

            do_POST = do_PUT = _serve

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        for open_socket in list(self.sockets):
            open_socket.drop()
        self.server.shutdown()
        self.server.server_close()

    # --- Mattermost's websocket --------------------------------------------------------------

    def socket_number(self, n: int, timeout: float = 20.0) -> FakeSocket:
        """The ``n``-th websocket the bot opened (1-based), once it has authenticated."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.sockets) >= n and self.sockets[n - 1].authenticated.wait(0.05):
                return self.sockets[n - 1]
            time.sleep(0.02)
        raise AssertionError(f"the bot never opened websocket number {n} ({len(self.sockets)})")

    def posted(
        self,
        message: str,
        *,
        post_id: str,
        channel_id: str = "dm-u42",
        channel_type: str = "D",
        user_id: str = "u42",
        sender: str = "ada",
        root_id: str = "",
        team_id: str = "",
        mentions: list[str] | None = None,
        **post_fields,
    ) -> dict:
        """A ``posted`` event as Mattermost sends it: the post itself is a JSON string."""
        post = {
            "id": post_id,
            "create_at": int(time.time() * 1000),
            "user_id": user_id,
            "channel_id": channel_id,
            "root_id": root_id,
            "message": message,
            "type": "",
            "props": {},
            **post_fields,
        }
        data = {
            "channel_display_name": f"@{sender}" if channel_type == "D" else "Ops",
            "channel_name": f"botuser__{user_id}" if channel_type == "D" else "ops",
            "channel_type": channel_type,
            "post": json.dumps(post),
            "sender_name": f"@{sender}",
            "team_id": team_id,
        }
        if mentions is not None:
            data["mentions"] = json.dumps(mentions)
        return {
            "event": "posted",
            "data": data,
            "broadcast": {"channel_id": channel_id, "team_id": "", "user_id": ""},
            "seq": next(self._seq),
        }

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


class FakeSocket:
    """One websocket the bot opened on the Mattermost fake: what it was sent (``received``), the
    token it proved itself with, and ``closed`` once the bot (or :meth:`drop`) ended it."""

    def __init__(self, fake: FakePlatform, handler: BaseHTTPRequestHandler) -> None:
        self.fake = fake
        self.handler = handler
        self.connection: socket.socket = handler.connection
        self.protocol = ServerProtocol()
        self.received: list[dict] = []
        self.token: str | None = None
        self.authenticated = threading.Event()
        self.closed = threading.Event()
        # Whether the bot closed it with a close frame (a clean close) rather than vanishing.
        self.closed_cleanly = False
        self._lock = threading.Lock()

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.connection.sendall(data)
            else:
                self.connection.shutdown(socket.SHUT_WR)

    def send(self, event: dict) -> None:
        with self._lock:
            self.protocol.send_text(json.dumps(event).encode())
            self._flush()

    def drop(self) -> None:
        """The server going away without a word: the TCP connection is cut."""
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def serve(self) -> None:
        handler = self.handler
        # The handshake as the client sent it, handed to the websockets protocol to answer.
        raw = "\r\n".join([handler.requestline, *(f"{k}: {v}" for k, v in handler.headers.items())])
        with self._lock:
            self.protocol.receive_data(raw.encode() + b"\r\n\r\n")
            request = self.protocol.events_received()[0]
            self.protocol.send_response(self.protocol.accept(request))
            self._flush()
        with self.fake._lock:
            self.fake.sockets.append(self)
        try:
            while self.protocol.state is not State.CLOSED:
                data = handler.rfile.read1(65536)
                with self._lock:
                    if not data:
                        self.protocol.receive_eof()
                        self._flush()
                        break
                    self.protocol.receive_data(data)
                    frames = self.protocol.events_received()
                    self._flush()
                for frame in frames:
                    if frame.opcode is Opcode.CLOSE:
                        self.closed_cleanly = True
                    elif frame.opcode is Opcode.TEXT:
                        self._receive(json.loads(frame.data))
        except OSError:
            pass
        finally:
            self.closed.set()

    def _receive(self, message: dict) -> None:
        self.received.append(message)
        if message.get("action") != "authentication_challenge":
            return
        self.token = (message.get("data") or {}).get("token")
        if self.token != self.fake.bot_token:
            self.send(
                {
                    "status": "FAIL",
                    "seq_reply": message.get("seq"),
                    "error": {"id": "api.web_socket_router.not_authenticated.app_error"},
                }
            )
            with self._lock:
                self.protocol.send_close(1008, "not authenticated")
                self._flush()
            return
        self.send({"status": "OK", "seq_reply": message.get("seq")})
        self.send(
            {
                "event": "hello",
                "data": {"server_version": "9.11.0"},
                "broadcast": {"user_id": "botuser", "channel_id": "", "team_id": ""},
                "seq": 0,
            }
        )
        self.authenticated.set()
