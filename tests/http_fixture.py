"""A small real HTTP/1.1 server for tests of outbound calls (webhooks, actions, remote
schemas): routes answer what the test says, every request is recorded.

    with HttpFixture() as srv:
        srv.route("/hook", lambda req: Reply(200, b'{"ok": true}'))
        srv.route("/slow", lambda req: Reply(200, b"{}", delay=1.0))
        url = srv.url("/hook")
        ...
        assert srv.requests[0].headers["x-custom"] == "1"

Threads serve connections (keep-alive: one thread per connection), so `Recorded.port`
tells which client connection carried a request and `max_in_flight` how many requests
were being answered at once. Unknown paths answer 404. `Reply.hang_up` closes the
connection without answering; `Reply.delay` waits before answering (seconds).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Recorded:
    """One request as received: method, path (with query string), headers (lower-cased
    names; last value wins), body bytes, the client's port, and arrival time
    (`time.monotonic()`)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    port: int
    at: float

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """What a route answers: status, body, extra headers, a delay before answering
    (seconds), or `hang_up` (close the connection without any answer)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hang_up: bool = False


Route = Callable[[Recorded], Reply]


class HttpFixture:
    """The server; a context manager (started on enter, stopped on exit)."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        """The port the server listens on (127.0.0.1)."""
        return int(self._server.server_address[1])

    def url(self, path: str = "/") -> str:
        """`http://127.0.0.1:<port><path>`."""
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str, answer: Route) -> None:
        """Answer requests for `path` (without query string) with `answer(request)`."""
        self.routes[path] = answer

    def reset(self, settle: float = 2.0) -> None:
        """Forget recorded requests and the in-flight maximum, after waiting up to
        `settle` seconds for requests still being answered (a previous test's slow route
        whose client gave up) so they do not count in the next test."""
        deadline = time.monotonic() + settle
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._lock:
            self.requests.clear()
            self.max_in_flight = self.in_flight

    def _enter(self, request: Recorded) -> Route | None:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return self.routes.get(request.path.split("?", 1)[0])

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def __enter__(self) -> HttpFixture:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(fixture: HttpFixture) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = 1 << 16  # head and body leave in one write (no delayed-ACK stalls)

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            request = Recorded(
                self.command, self.path, headers, body, self.client_address[1], time.monotonic()
            )
            route = fixture._enter(request)
            try:
                reply = route(request) if route else Reply(404, b"not found")
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.hang_up:
                    self.close_connection = True
                    return
                self._send(reply)
            finally:
                fixture._leave()

        def _send(self, reply: Reply) -> None:
            try:
                self.send_response(reply.status)
                self.send_header("Content-Length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body)
            except OSError:  # the client gave up (timeout tests)
                self.close_connection = True

        do_GET = _serve
        do_POST = _serve
        do_PUT = _serve
        do_DELETE = _serve
        do_PATCH = _serve

    return Handler
