"""A real OpenAI-compatible HTTP server on loopback, for tests and the speed benchmark.

Standard library only (``http.server`` in a thread). It answers ``POST /v1/chat/completions``
with a reply chosen by ``responder(body) -> str | None`` and injects faults: a fixed latency
per request, the next ``fail_next`` requests answered with HTTP 500, the next ``hang_next``
requests delayed by ``hang_s`` (to trigger client timeouts). It counts requests and the peak
number in flight, so tests can check that concurrency is real and bounded.

>>> with StubServer(responder=lambda body: "pong") as srv:
...     srv.url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], "str | None"]


def _default_responder(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"] if body.get("messages") else ""
    return f"echo: {last}"


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) drops SYNs when a burst of clients connects at once and
    # the kernel retries them a second later: that would show up as fake 1 s latencies.
    request_queue_size = 1024
    daemon_threads = True


class StubServer:
    """Context manager running the stub on ``127.0.0.1:<free port>``; ``url`` ends in ``/v1``."""

    def __init__(self, responder: Responder | None = None, *, latency_s: float = 0.0) -> None:
        self.responder = responder or _default_responder
        self.latency_s = latency_s
        self.fail_next = 0
        self.hang_next = 0
        self.hang_s = 5.0
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _take(self, attr: str) -> bool:
        with self._lock:
            n = getattr(self, attr)
            if n > 0:
                setattr(self, attr, n - 1)
                return True
            return False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with stub._lock:
                    stub.requests += 1
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                    stub.bodies.append(body)
                try:
                    if self.path.rstrip("/") != "/v1/chat/completions":
                        self._send(404, {"error": {"message": f"no route {self.path}"}})
                        return
                    if stub._take("hang_next"):
                        time.sleep(stub.hang_s)
                    if stub.latency_s:
                        time.sleep(stub.latency_s)
                    if stub._take("fail_next"):
                        self._send(500, {"error": {"message": "injected failure",
                                                   "type": "server_error"}})
                        return
                    text = stub.responder(body)
                    self._send(200, _completion(body, text))
                finally:
                    with stub._lock:
                        stub.in_flight -= 1

        return Handler

    def __enter__(self) -> StubServer:
        self._httpd = _Server(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


def _completion(body: dict[str, Any], text: str | None) -> dict[str, Any]:
    prompt = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
    completion = len((text or "").split())
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }


def collab_responder(body: dict[str, Any]) -> str:
    """Role-aware canned replies for the prompts :mod:`icml25.collab` sends: JSON for the user
    simulator and the interactivity judge, plain text for the assistant."""
    messages = body.get("messages") or [{}]
    first = str(messages[0].get("content") or "")
    if "role-playing a human USER" in first:
        return json.dumps({"current_answer": "a draft", "thought": "need more",
                           "response": "Make it shorter, please."})
    if "judging how interactive" in first:
        return json.dumps({"thought": "asked one question", "interactivity": 0.5})
    return "Here is a shorter draft. Should I keep the title?"
