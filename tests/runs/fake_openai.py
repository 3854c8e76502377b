"""A small OpenAI-compatible server on 127.0.0.1 for provider tests: /v1/chat/completions, plain
and streamed (SSE), tool calls, usage; scripted failures by model name.

Models: ``*-429`` / ``*-500`` answer their first request with a tool call and fail the next with
that status; ``*-hang`` never answers (until the server stops). ``latency`` delays every answer. Any other model calls ``echo`` when the prompt starts with "use echo" (once), and
otherwise answers with text. Usage is reported as 10 input tokens per message and 5 output tokens.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _scripted_tools(prompt: str, messages: list[dict]) -> dict | None:
    """``/tools N NAME``: call the tool NAME (no arguments) until N results are in, then answer —
    N + 1 requests, for runs of several requests (the runtime benchmark)."""
    if not prompt.startswith("/tools "):
        return None
    _, count, name = prompt.split()[:3]
    done = sum(1 for m in messages if m.get("role") == "tool")
    if done >= int(count):
        return None
    return {
        "id": f"call_{done + 1}",
        "type": "function",
        "function": {"name": name, "arguments": "{}"},
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Many runs at once connect together (the worker runtime's tests and bench). A class
    # attribute: the socket listens in the constructor, so setting it afterwards changes nothing
    # (the default backlog of 5 refused a burst's connections, and the clients retried them).
    request_queue_size = 1024


class FakeOpenAI:
    def __init__(self, *, latency: float = 0.0) -> None:
        self.latency = latency
        self._stopping = threading.Event()
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(
                    self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}"
                )
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                try:
                    server.handle(self, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client hung up mid-answer: a cancelled run, a timeout

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- behaviour -----------------------------------------------------------------------------

    def handle(self, handler, body: dict) -> None:
        model = body.get("model", "")
        if model.endswith("-hang"):
            self._stopping.wait()
            return
        if self.latency:
            time.sleep(self.latency)
        messages = body.get("messages", [])
        has_tool_result = any(m.get("role") == "tool" for m in messages)
        for status in (429, 500):
            if model.endswith(f"-{status}") and has_tool_result:
                return self._error(handler, status)
        usage = {
            "prompt_tokens": 10 * len(messages),
            "completion_tokens": 5,
            "total_tokens": 10 * len(messages) + 5,
        }
        prompt = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        if isinstance(prompt, list):
            prompt = " ".join(p.get("text", "") for p in prompt)
        wants_tool = (
            prompt.startswith("use echo") or model.endswith(("-429", "-500"))
        ) and not has_tool_result
        scripted = _scripted_tools(prompt, messages)
        if scripted is not None:
            message = {"role": "assistant", "content": None, "tool_calls": [scripted]}
            finish = "tool_calls"
        elif wants_tool:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "echo", "arguments": '{"text": "hi"}'},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            tool_text = next(
                (m.get("content") for m in reversed(messages) if m.get("role") == "tool"), None
            )
            text = f"The echo said {tool_text}." if tool_text else f"Hello from {model}."
            message = {"role": "assistant", "content": text}
            finish = "stop"
        if body.get("stream"):
            return self._stream(handler, model, message, finish, usage)
        payload = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        self._json(handler, 200, payload)

    def _json(self, handler, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _error(self, handler, status: int) -> None:
        self._json(
            handler,
            status,
            {
                "error": {
                    "message": f"upstream says no ({status}) SECRET-PROVIDER-DETAIL",
                    "type": "server_error",
                }
            },
        )

    def _stream(self, handler, model, message, finish, usage) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()

        def chunk(delta=None, finish_reason=None, usage_block=None):
            body = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            if usage_block is not None:
                body["usage"] = usage_block
            data = f"data: {json.dumps(body)}\n\n".encode()
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            handler.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
            args = call["function"]["arguments"]
            for start in range(0, len(args), 5):
                chunk(
                    {
                        "tool_calls": [
                            {"index": 0, "function": {"arguments": args[start : start + 5]}}
                        ]
                    }
                )
        else:
            words = message["content"].split(" ")
            for n, word in enumerate(words):
                chunk({"content": word if n == 0 else " " + word})
        chunk({}, finish_reason=finish)
        chunk(None, usage_block=usage)
        data = b"data: [DONE]\n\n"
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()


if __name__ == "__main__":
    # A server in a process of its own (bench/bench_worker_runtime.py): prints its base URL.
    import sys

    with FakeOpenAI(latency=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as server:
        print(server.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
