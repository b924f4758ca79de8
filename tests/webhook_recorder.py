"""A webhook recorder for tests of event and scheduled deliveries: a real threaded
HTTP/1.1 server on 127.0.0.1 (a fixed port or any free one) that records every POST
(method, path with query string, lower-cased headers, body and parsed JSON) after
answering it, into a FIFO tests pop with a timeout.

Answers by path (`rule(path, status=…, delay=…, headers=…)`); the defaults are
FIXTURES.md §4.1's `events` fixture: `/fail` 500, `/sleep_2s` 204 after 2 s, `/block`
204 once `unblock()` is called (60 s cap), anything else 204. GET answers 200 and is not
recorded. Every attempt is recorded, also one whose client gave up waiting.

    with WebhookRecorder(port=5592) as hook:
        hook.rule("/flaky", status=503, headers={"Retry-After": "1"})
        ...
        req = hook.pop(within=3.0)   # Hook(method, path, headers, body, json, at)
        assert req.json["trigger"]["name"] == "t1"
        hook.count()                 # requests recorded and not popped
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Hook:
    """One recorded request: `method`, `path` (with query string), `headers` (lower-cased
    names, last value wins), `body` (bytes), `json` (the parsed body, None when it is
    not JSON), `at` (`time.monotonic()` when it was answered)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    at: float


@dataclass
class Rule:
    """How a path is answered: `status`, `delay` (seconds before answering), extra
    `headers`, `body` bytes, `block` (wait for `unblock()`, at most 60 s), or `answer`
    (a function of the request returning a status, e.g. to fail the first N times)."""

    status: int = 204
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    block: bool = False
    answer: Callable[[Hook], int] | None = None


def _defaults() -> dict[str, Rule]:
    return {"/fail": Rule(500), "/sleep_2s": Rule(204, delay=2.0), "/block": Rule(204, block=True)}


class WebhookRecorder:
    """The server; a context manager (listening on enter, stopped on exit). `port=0`
    picks a free port. Raises OSError on enter when the port is taken."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1") -> None:
        self.host = host
        self._port = port
        self.rules: dict[str, Rule] = _defaults()
        self.default = Rule()
        self.records: queue.Queue[Hook] = queue.Queue()
        self.total = 0  # every request recorded since start (popped or not)
        self._lock = threading.Lock()
        self._unblocked = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port listened on (after enter)."""
        assert self._server is not None
        return int(self._server.server_address[1])

    def url(self, path: str = "/") -> str:
        """`http://<host>:<port><path>`."""
        return f"http://{self.host}:{self.port}{path}"

    def rule(self, path: str, **options: Any) -> None:
        """Answer POSTs to `path` (without query string) by `Rule(**options)`."""
        self.rules[path] = Rule(**options)

    def unblock(self) -> None:
        """Release every request waiting on a `block` rule (and later ones)."""
        self._unblocked.set()

    def pop(self, within: float = 3.0) -> Hook:
        """The oldest recorded request not popped yet, waiting up to `within` seconds.
        Raises queue.Empty when none came."""
        return self.records.get(timeout=within)

    def drain(self) -> list[Hook]:
        """Every recorded request not popped yet (no waiting)."""
        out: list[Hook] = []
        while True:
            try:
                out.append(self.records.get_nowait())
            except queue.Empty:
                return out

    def count(self) -> int:
        """Recorded requests not popped yet."""
        return self.records.qsize()

    def _record(self, hook: Hook) -> None:
        with self._lock:
            self.total += 1
            self.records.put(hook)

    def _rule(self, path: str) -> Rule:
        return self.rules.get(path.split("?", 1)[0], self.default)

    def __enter__(self) -> WebhookRecorder:
        self._server = _Server((self.host, self._port), _handler(self))
        self._server.daemon_threads = True
        self._server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._unblocked.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class _Server(ThreadingHTTPServer):
    # Thousands of deliveries may connect at once (several svc processes, 100 each):
    # the default backlog of 5 would refuse connections under load.
    request_queue_size = 1024


def _handler(rec: WebhookRecorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = 1 << 16  # head and body leave in one write (no delayed-ACK stalls)
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._reply(200, {}, b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                parsed = json.loads(body) if body else None
            except ValueError:
                parsed = None
            rule = rec._rule(self.path)
            hook = Hook("POST", self.path, headers, body, parsed, 0.0)
            status = rule.answer(hook) if rule.answer else rule.status
            if rule.delay:
                time.sleep(rule.delay)
            if rule.block:
                rec._unblocked.wait(60)
            try:
                self._reply(status, rule.headers, rule.body)
            finally:
                # After answering, as the reference's recorder (FIXTURES.md §4.1).
                rec._record(Hook("POST", self.path, headers, body, parsed, time.monotonic()))

        def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body:
                    self.wfile.write(body)
                self.wfile.flush()
            except OSError:
                pass  # the client gave up (timeout): the attempt is still recorded

    return Handler
