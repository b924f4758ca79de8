"""The ASGI application: routes, body handling, errors, one JSON log line per request.

Websocket upgrades go to `svc.server.ws_asgi`.

Routes (spec section 1): `GET /healthz`, `POST /v1/query` (also `/v2/query`, `/v1/metadata`),
`POST /v1/graphql` (also `/v1alpha1/graphql`), `POST /v1beta1/relay` (the Relay API),
`POST /v1/graphql/explain`,
`GET /v1/version`, `GET /v1alpha1/config`, `POST /v1alpha1/pg_dump`, and the RESTified
endpoints under `/api/rest/`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import msgspec

from svc import logs
from svc.api.engine import Engine, anonymous_request
from svc.api.health import HealthProbe, is_unreachable
from svc.api.rest import RestRequest
from svc.config import Config
from svc.errors import ErrorCode, SvcError, TransportError
from svc.outbound.forwarded import passed_back, set_client_headers
from svc.server.again import Credentials, SessionMemo
from svc.server.auth import Authenticator, Session
from svc.server.console import answer as answer_console
from svc.server.console import favicon
from svc.server.disconnect import AsgiWatch, Sweeper
from svc.server.freezer import Freezer
from svc.server.lifecycle import SHUTTING_DOWN, InFlight, prepare_worker, shut_down
from svc.server.metric_labels import operation_type
from svc.server.metrics import Metrics
from svc.server.ws_asgi import serve_asgi
from svc.server.ws_operations import Subscriber
from svc.server.ws_session import WsContext, WsSettings
from svc.session_vars import use_names
from svc.version import VERSION

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_encode = msgspec.json.encode
_log = logging.getLogger(__name__)
JSON_HEADERS = [("content-type", "application/json; charset=utf-8")]
RAW_JSON_HEADERS = [(k.encode(), v.encode()) for k, v in JSON_HEADERS]
TEXT_HEADERS = [("content-type", "text/plain; charset=utf-8")]
NOT_FOUND = SvcError(ErrorCode.NOT_FOUND, "resource does not exist", status=404)
GRAPHQL_PATHS = ("/v1/graphql", "/v1alpha1/graphql")
RELAY_PATH = "/v1beta1/relay"
# Bodies above this many bytes are decoded (and a GraphQL document parsed) in a worker
# thread, so one large request does not stall every other request of the process.
LARGE_BODY = 1024 * 1024
# `/healthz` gives Postgres this many seconds to answer `SELECT 1`.
HEALTH_TIMEOUT = 2.0
INCONSISTENT = "inconsistent objects in schema"
# Bytes past `--max-body-size` a refused body is still read (and dropped): a server that
# closes a connection with unread data makes the kernel reset it, and the client sees
# "connection reset" instead of the 413.
DRAIN_BYTES = 64 * 1024 * 1024


class HttpError(TransportError):
    """An error about the HTTP request itself (body too large, duplicate credential
    headers, a body nested too deeply): its status applies on GraphQL endpoints too, which
    otherwise answer errors with HTTP 200."""


def body_too_large(limit: int) -> HttpError:
    """413 `invalid-params` "request body too large" (`--max-body-size`)."""
    return HttpError(
        ErrorCode.INVALID_PARAMS,
        f"request body too large: the limit is {limit} bytes (--max-body-size)",
        status=413,
    )


def duplicated_credentials(pairs: Iterable[tuple[str, Any]], prefix: str) -> tuple[str, ...]:
    """Lower-case names of credential or session headers given more than once:
    `authorization` and every `x-svc-*` (`prefix`, the server's `Names.prefix`; finding
    12: the last one must not silently win). `pairs`: (lower-case name, value) in arrival
    order."""
    seen: set[str] = set()
    twice: list[str] = []
    for name, _ in pairs:
        if name == "authorization" or name.startswith(prefix):
            if name in seen and name not in twice:
                twice.append(name)
            seen.add(name)
    return tuple(twice)


class _RequestIds:
    """New request ids shaped as UUID4s: a random prefix per process (made again in a
    forked worker) and a counter in the last 48 bits. Unique per process and as random
    across processes as a UUID4's first 74 bits; 0.2 µs where `str(uuid.uuid4())` is 2.5."""

    def __init__(self) -> None:
        self.renew()
        os.register_at_fork(after_in_child=self.renew)

    def renew(self) -> None:
        self.prefix = str(uuid.uuid4())[:24]
        self.count = itertools.count()

    def next(self) -> str:
        return f"{self.prefix}{next(self.count) & 0xFFFFFFFFFFFF:012x}"


_IDS = _RequestIds()


def request_id(given: str | None) -> str:
    """The client's `x-request-id` when it is 1-128 printable ASCII characters, else a new
    UUID4-shaped id (`_RequestIds`; the reference also answers every request with an
    `x-request-id`)."""
    if given and len(given) <= 128 and given.isascii() and given.isprintable():
        return given
    return _IDS.next()


def _given_request_id(raw: list[tuple[bytes, bytes]]) -> str | None:
    """The `x-request-id` among ASGI raw headers, None when absent."""
    for name, value in raw:
        if name == b"x-request-id":
            return value.decode("latin-1")
    return None


def _header_value(raw: bytes) -> str:
    """Header values are read as UTF-8 (as the reference reads session variables), falling
    back to latin-1 for bytes that are not UTF-8."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("latin-1")


@dataclass(slots=True)
class Request:
    """One HTTP request, whatever the server interface (ASGI or Granian's RSGI).

    `headers` has lower-case names (the first value of a repeated header);
    `raw_path` is the still percent-encoded path when the interface gives it (RESTified
    endpoints keep `%2F` inside a segment); `body()` reads the whole body, raising 413
    `HttpError` past `--max-body-size`; `duplicates` names credential headers sent more
    than once; `request_id` is echoed as `x-request-id`; `error` is what the log line
    reports about a failed request."""

    method: str
    path: str
    raw_path: str | None
    query_string: bytes
    headers: dict[str, str]
    body: Callable[[], Awaitable[bytes]]
    request_id: str = ""
    duplicates: tuple[str, ...] = ()
    error: dict[str, Any] | None = None
    operation: str = ""  # GraphQL operation type, for /v1/metrics
    # ASGI: the credential headers as they arrived (`svc.server.again`), None elsewhere.
    credentials: Credentials | None = None


Headers = list[tuple[str, str]]
Response = tuple[int, bytes, Headers]


class App:
    """ASGI 3 application; the engine is started by the lifespan protocol. `handle` is
    interface-neutral; `svc.server.rsgi` serves the same app over RSGI."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.engine: Engine | None = None
        self.auth = Authenticator(config)
        # The session names of the whole process (`--hasura-compat`): decided here, at
        # start, before any metadata is read (svc.session_vars).
        self.names = self.auth.names
        use_names(self.names)
        self.health = HealthProbe(config.database_url)
        # Requests being answered: cancelled when a `svc serve` shutdown's grace period ends.
        self.in_flight = InFlight()
        # Websocket connections: closed with 1001 when the worker stops.
        self.ws = WsContext(self.auth, self._subscriber, WsSettings.of(config))
        self.metrics = Metrics(self)  # /v1/metrics
        # Requests watched for their client going away once they run long enough.
        self.sweeper = Sweeper()
        # Sessions of credentials seen before, for `_again` (svc.server.again).
        self.sessions = SessionMemo(
            self.auth.jwt is None and self.auth.webhook is None, self.names.prefix_bytes
        )
        self.again_limit = min(LARGE_BODY, config.max_body_size)
        # The collector kept off the long-lived heap (svc.server.freezer).
        self.freezer = Freezer(lambda: -1 if self.engine is None else self.engine.state.version)
        # Whether every request gets a log line (`log`).
        self.logs_requests = config.log_requests and config.log_level in ("debug", "info")

    def _subscriber(self) -> Subscriber | None:
        """The engine, as the websocket transport calls it (None while it starts)."""
        return self.engine

    @property
    def graphql_on(self) -> bool:
        """Whether the `graphql` API (and so its websockets) is enabled."""
        return "graphql" in self.config.enabled_apis

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await serve_asgi(self.ws, scope, receive, send, self.graphql_on)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """ASGI lifespan: start the engine (under `svc serve`, after installing the
        end-of-grace handler) and stop it within bounds (`lifecycle.shut_down`)."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                prepare_worker(asyncio.get_running_loop(), self.in_flight, self.ws.close_all)
                try:
                    await self.startup()
                except Exception as exc:  # reported to the server, which exits
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await shut_down(self.shutdown(), self.in_flight)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def startup(self) -> None:
        """Start the engine (idempotent)."""
        if self.engine is None:
            self.engine = await Engine.start(self.config)
            self.freezer.tick()
            self.freezer.start()

    async def shutdown(self) -> None:
        """Stop the engine."""
        self.freezer.stop()
        if self.engine is not None:
            await self.engine.close()
            self.engine = None
        await self.health.close()
        await self.auth.close()
        self.metrics.close()

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI: the body is read first (bounded by `--max-body-size`); a request still
        running after `ARM_SECONDS` starts waiting for `http.disconnect` and is cancelled
        when its client goes away (`svc.server.disconnect`). A repeated GraphQL query with
        remembered credentials is answered by `_again` before anything else is built."""
        started = time.perf_counter()
        raw = scope["headers"]
        read: list[dict[str, Any]] = [await receive()]
        if (
            self.sessions.enabled
            and read[0]["type"] == "http.request"
            and scope["method"] == "POST"
            and scope["path"] in GRAPHQL_PATHS
        ):
            whole = await self._whole_small_body(read, receive)
            if whole is not None and await self._again(
                scope["path"], raw, whole, receive, send, started
            ):
                return
        # ASGI servers give lower-case names (the spec requires it; Granian's come from
        # hyper, which keeps them lower-case).
        raw_headers_in = [(k.decode("latin-1"), v) for k, v in raw]
        headers = {}
        for k, v in raw_headers_in:
            if k not in headers:
                headers[k] = v.decode() if v.isascii() else _header_value(v)
        try:
            declared = int(headers.get("content-length") or 0)
        except ValueError:
            declared = 0
        body_read = await _read_body(receive, read, declared, self.config.max_body_size)
        if body_read is None:
            return  # gone before the body arrived: nobody to answer
        data, failure = body_read

        async def body() -> bytes:
            if failure is not None:
                raise failure
            return data

        raw_path = scope.get("raw_path")
        request = Request(
            scope["method"],
            scope["path"],
            raw_path.decode("latin-1") if raw_path else None,
            scope.get("query_string", b""),
            headers,
            body,
            request_id(headers.get("x-request-id")),
            duplicated_credentials(raw_headers_in, self.names.prefix)
            if len(headers) < len(raw_headers_in)
            else (),
            credentials=self.sessions.key(raw),
        )
        watch = AsgiWatch(self.sweeper, receive) if failure is None else None
        try:
            status, payload, out_headers = await self.handle(request)
        except asyncio.CancelledError:
            if watch is not None and watch.disconnected:
                asyncio.current_task().uncancel()  # type: ignore[union-attr]
                self.log_disconnect(request, started)
                return
            raise
        finally:
            if watch is not None:
                watch.stop()
        await _send_answer(send, status, payload, out_headers)
        self.log(request, status, started)

    async def _again(
        self,
        path: str,
        raw: list[tuple[bytes, bytes]],
        body: bytes,
        receive: Receive,
        send: Send,
        started: float,
    ) -> bool:
        """Answer a GraphQL request whose bytes this worker answered before for the same
        credentials (`svc.server.again`), from `GraphQLService.answer_again` alone; False
        (nothing sent) when it is not one, or when anything but its own statement failed
        (the general path then answers it, errors included). Counted, logged, watched for
        a disconnect and cancelled at shutdown as every request is."""
        engine = self.engine
        key, given = self.sessions.scan(raw)
        session = self.sessions.get(key)
        if session is not None and session.anonymous:
            anonymous_request()
        if (
            engine is None
            or session is None
            or len(body) > self.again_limit
            or b"@cached" in body
            or not self.graphql_on
        ):
            return False
        task = asyncio.current_task()
        assert task is not None  # an ASGI app runs in a task
        watch = AsgiWatch(self.sweeper, receive, task)
        in_flight = self.in_flight.tasks
        in_flight.add(task)
        try:
            state = await engine.current_state()
            state = state.serving(session.role, session.backend_only)
            payload = await engine.graphql_service.answer_again(
                state, session.role, session.variables, body
            )
        except asyncio.CancelledError:
            request = self._plain_request(path, raw, body)
            if watch.disconnected:
                task.uncancel()
                self.log_disconnect(request, started)
                return True
            if not self.in_flight.stopping:
                raise
            status, payload, headers = self._error(request, SHUTTING_DOWN)
            headers = [*headers, ("x-request-id", request.request_id)]
            await _send_answer(send, status, payload, headers)
            return True
        except Exception:  # e.g. the state cannot be reloaded: the general path says why
            return False
        finally:
            in_flight.discard(task)
            watch.stop()
        if payload is None:
            return False
        rid = _IDS.next() if given is None else request_id(given.decode("latin-1"))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*RAW_JSON_HEADERS, (b"x-request-id", rid.encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})
        seconds = time.perf_counter() - started
        if payload[:8] == b'{"data":':
            self.metrics.count_query_data(path, seconds)
        else:
            self.metrics.count(path, "query", 200, payload, seconds)
        if self.logs_requests:
            self.log(self._plain_request(path, raw, body, rid), 200, started)
        return True

    async def _whole_small_body(self, read: list[dict[str, Any]], receive: Receive) -> bytes | None:
        """The body when it fits `again_limit` and its messages up to the last are here
        (Granian sends a whole small body, then an empty last message: that one is read
        too, so the disconnect watch later gets `http.disconnect`); None otherwise.
        `read` holds the messages received so far and gets every one this reads, for the
        general path to go on from."""
        first = read[0]
        body: bytes = first.get("body", b"")
        if len(body) > self.again_limit:
            return None
        if first.get("more_body"):
            last = await receive()
            read.append(last)
            if last["type"] != "http.request" or last.get("body") or last.get("more_body"):
                return None
        return body

    @staticmethod
    def _plain_request(
        path: str, raw: list[tuple[bytes, bytes]], body: bytes, rid: str | None = None
    ) -> Request:
        """The `Request` of an answer `_again` gave, for the log line and errors."""

        async def read() -> bytes:
            return body

        given = _given_request_id(raw)
        request = Request("POST", path, None, b"", {}, read, rid or request_id(given))
        request.operation = "query"
        return request

    def log(self, request: Request, status: int, started: float) -> None:
        """One JSON line per request on stdout (`SVC_GRAPHQL_LOG_REQUESTS`; `svc.logs`); a
        request that failed with a server error (5xx) is logged even when request logging
        is off, with its request id, error code, message and, for an unexpected exception,
        the traceback."""
        error = request.error
        if self.logs_requests or (error is not None and status >= 500):
            entry: dict[str, Any] = {
                "type": "http-log",
                "level": "error" if status >= 500 else "info",
                "request_id": request.request_id,
                "method": request.method,
                "path": request.path,
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000, 3),
            }
            if error is not None:
                entry["error"] = error
            _log.log(logging.ERROR if status >= 500 else logging.INFO, entry)

    def log_disconnect(self, request: Request, started: float) -> None:
        """The log line of a request whose client went away (status 499, nginx's "client
        closed request"); its handling was cancelled."""
        request.error = {"code": "client-disconnected", "message": "client closed request"}
        self.log(request, 499, started)

    async def handle(self, request: Request) -> Response:
        """Route one request; returns (status, body, headers), never raises except on
        cancellation. Headers include `x-request-id`."""
        started = time.perf_counter()
        with self.in_flight:
            try:
                status, payload, headers = await self._route(request)
            except SvcError as exc:
                status, payload, headers = self._error(request, exc)
            except Exception as exc:
                status, payload, headers = self._error(request, self._classify(request, exc))
            except asyncio.CancelledError:
                if not self.in_flight.stopping:  # e.g. the client went away
                    raise
                status, payload, headers = self._error(request, SHUTTING_DOWN)
        self.metrics.observe(request, status, payload, time.perf_counter() - started)
        return status, payload, [*headers, ("x-request-id", request.request_id)]

    def _classify(self, request: Request, exc: Exception) -> SvcError:
        """The `SvcError` an exception that escaped a route stands for:
        not UTF-8 → 400 `invalid-json`; too deep (RecursionError) → 400 `invalid-json`;
        Postgres unreachable → 500 `postgres-error`; anything else → 500 `unexpected`."""
        if isinstance(exc, UnicodeDecodeError):
            return HttpError(ErrorCode.INVALID_JSON, "invalid json: the body is not valid UTF-8")
        if isinstance(exc, RecursionError):
            return HttpError(
                ErrorCode.INVALID_JSON, "invalid json: the request is nested too deeply"
            )
        trace = "".join(traceback.format_exception(exc)).strip()
        request.error = {"exception": f"{type(exc).__name__}: {exc}", "traceback": trace}
        if is_unreachable(exc):
            return SvcError(
                ErrorCode.POSTGRES_ERROR,
                f"connection error: the database is unreachable ({type(exc).__name__})",
                status=500,
            )
        return SvcError(
            ErrorCode.UNEXPECTED,
            f"unexpected error (request id {request.request_id})",
            status=500,
        )

    def _error(self, request: Request, exc: SvcError) -> Response:
        """The answer for `exc`: `{path, error, code}` with its status; on GraphQL
        endpoints `{errors: [...]}`, with HTTP 200 for errors about the operation and the
        error's own status for errors about the HTTP request (`HttpError`, invalid JSON,
        not found) and for server errors (5xx: e.g. an auth webhook answering other than
        200/401, spec section 5)."""
        detail = request.error or {}
        request.error = {"code": exc.code, "message": exc.message, **detail}
        path = request.path.rstrip("/") or "/"
        if path in GRAPHQL_PATHS or path == RELAY_PATH:
            body = _encode({"errors": [exc.to_graphql_error()]})
            keeps_status = (
                isinstance(exc, TransportError)
                or exc.status >= 500
                or exc.code in (ErrorCode.INVALID_JSON, ErrorCode.NOT_FOUND)
            )
            return (exc.status if keeps_status else 200), body, JSON_HEADERS
        return exc.status, _encode(exc.to_query_body()), JSON_HEADERS

    async def _route(self, request: Request) -> Response:
        method, path = request.method, request.path.rstrip("/") or "/"
        headers = request.headers
        set_client_headers(headers)  # actions' forward_client_headers
        if path == "/healthz":
            return await self._healthz(request)
        if path == "/v1/version" and method == "GET":
            return 200, _encode({"version": VERSION}), JSON_HEADERS
        if path == "/favicon.ico" and method == "GET":
            return favicon()
        if method == "GET" and (path in ("/", "/console") or path.startswith("/console/")):
            return answer_console(path, request.headers, self.config)
        if path == "/v1/metrics" and method == "GET":
            return await self.metrics.answer(request.headers)
        if request.duplicates:
            raise HttpError(
                ErrorCode.INVALID_HEADERS,
                f"header sent more than once: {', '.join(request.duplicates)}",
            )
        engine = self.engine
        if engine is None:
            raise SvcError(ErrorCode.UNEXPECTED, "server is starting", status=503)
        session = await self.auth.session(headers)
        if session.anonymous:  # its statements take the anonymous share (svc.execute.db)
            anonymous_request()
        if request.credentials is not None:
            self.sessions.remember(request.credentials, session)
        if path.startswith("/api/rest/"):  # RESTified endpoints (spec 4.12)
            self._require_api("graphql")
            return await self._rest(request, engine, session)
        if (path in GRAPHQL_PATHS or path == RELAY_PATH) and method == "POST":
            self._require_api("graphql")
            relay = path == RELAY_PATH  # the Relay API (`svc.schema.relay`)
            body = await request.body()
            request.operation = operation_type(body)
            if len(body) > LARGE_BODY:
                payload = await self._large_graphql(engine, body, session, relay)
            else:
                payload = await engine.graphql_body(
                    body,
                    session.role,
                    session.variables,
                    backend_only=session.backend_only,
                    relay=relay,
                )
            return 200, payload, [*JSON_HEADERS, *passed_back()]  # Set-Cookie
        if path in ("/v1/query", "/v2/query", "/v1/metadata") and method == "POST":
            self._require_api("metadata")
            raw = await self._json(request)
            answer = await engine.metadata(raw, session.role, session.variables)
            return 200, _encode(answer), JSON_HEADERS
        if path == "/v1/graphql/explain" and method == "POST":
            self._require_api("metadata")
            raw = await self._json(request)
            self._require_admin(session)
            return 200, _encode(await engine.explain(raw)), JSON_HEADERS
        if path == "/v1alpha1/pg_dump" and method == "POST":
            self._require_api("pgdump")
            raw = await self._json(request)
            self._require_admin(session)
            return 200, await engine.pg_dump(raw), [("content-type", "application/sql")]
        if path == "/v1alpha1/config" and method == "GET":
            self._require_api("config")
            self._require_admin(session)
            return 200, _encode(self._config_record()), JSON_HEADERS
        raise NOT_FOUND

    @staticmethod
    async def _rest(request: Request, engine: Engine, session: Session) -> Response:
        """A RESTified endpoint call; raises 400 `invalid-json` for a body that is not
        UTF-8 (the endpoint reads it as JSON or a form: text either way)."""
        body = await request.body()
        if body and not body.isascii():
            try:
                body.decode()
            except UnicodeDecodeError:
                raise HttpError(
                    ErrorCode.INVALID_JSON, "invalid json: the body is not valid UTF-8"
                ) from None
        full = request.raw_path or request.path  # raw: `%2F` stays in a segment
        rest = RestRequest(
            request.method,
            full.split("?")[0][len("/api/rest/") :],
            request.query_string,
            body,
            request.headers.get("content-type", ""),
            path_is_raw=request.raw_path is not None,
        )
        answer = await engine.rest(
            rest, session.role, session.variables, backend_only=session.backend_only
        )
        return answer.status, answer.body, JSON_HEADERS + answer.headers

    async def _healthz(self, request: Request) -> Response:
        """`/healthz` as the reference answers it (Hasura docs, "Health Check API"): 200
        `OK`; 500 `ERROR` when Postgres does not answer `SELECT 1` within
        `HEALTH_TIMEOUT` seconds (on the probe's own connection, which busy query
        connections cannot starve); with inconsistent metadata 200 `WARN: inconsistent
        objects in schema`, or 500 `ERROR: inconsistent objects in schema` with
        `?strict=true`."""
        if not await self.health.ok(HEALTH_TIMEOUT):
            request.error = {"code": ErrorCode.POSTGRES_ERROR, "message": "database unreachable"}
            return 500, b"ERROR", TEXT_HEADERS
        engine = self.engine
        if engine is not None and await engine.inconsistent():
            query = parse_qsl(request.query_string.decode("latin-1"))
            if any(k == "strict" and v.lower() == "true" for k, v in query):
                return 500, f"ERROR: {INCONSISTENT}".encode(), TEXT_HEADERS
            return 200, f"WARN: {INCONSISTENT}".encode(), TEXT_HEADERS
        return 200, b"OK", TEXT_HEADERS

    async def _large_graphql(
        self, engine: Engine, body: bytes, session: Session, relay: bool = False
    ) -> bytes:
        """A GraphQL body above `LARGE_BODY` bytes: decoded, and its document parsed and
        validated, in a worker thread (graphql-core's parser is pure Python: a 20 MB
        comment takes seconds), then answered on the loop from the warmed caches
        (`relay`: of the Relay API)."""
        role = session.role
        backend_only = session.backend_only
        raw, failed = await engine.prepare_large(body, role, backend_only=backend_only, relay=relay)
        if failed is not None:
            return _encode({"errors": [failed.to_graphql_error(admin=session.is_admin)]})
        return await engine.graphql(
            raw, role, session.variables, backend_only=backend_only, relay=relay
        )

    def _require_api(self, name: str) -> None:
        if name not in self.config.enabled_apis:
            raise NOT_FOUND

    @staticmethod
    def _require_admin(session: Session) -> None:
        if not session.is_admin:
            raise SvcError(ErrorCode.ACCESS_DENIED, "restricted access : admin only", path="$.args")

    @staticmethod
    async def _json(request: Request) -> Any:
        """The body's JSON (decoded in a worker thread above `LARGE_BODY` bytes); raises
        400 `invalid-json`, 413 past `--max-body-size`."""
        body = await request.body()
        if len(body) > LARGE_BODY:
            return await asyncio.to_thread(Engine.decode_json, body)
        return Engine.decode_json(body)

    def _config_record(self) -> dict[str, Any]:
        """The `/v1alpha1/config` record (spec 2.12) in the reference's key order (Hasura
        `server/src-lib/Hasura/Server/API/Config.hs`, `ServerConfig`): `live_queries` and
        `streaming_queries` are `{batch_size, refetch_delay}` (`SubscriptionsOptions`'
        `ToJSON`: the refetch interval in seconds), `experimental_features` the list of
        `SVC_GRAPHQL_EXPERIMENTAL_FEATURES` keys given (`svc.config.experimental_features`,
        its `HashSet ExperimentalFeature` as a JSON array)."""
        return {
            "version": VERSION,
            "is_admin_secret_set": bool(self.config.admin_secrets),
            "is_auth_hook_set": self.auth.webhook is not None,
            "is_jwt_set": self.auth.jwt is not None,
            "jwt": self.auth.jwt.config_record() if self.auth.jwt is not None else [],
            "is_allow_list_enabled": self.config.enable_allowlist,
            "live_queries": {
                "batch_size": self.config.live_queries_batch_size,
                # Hasura reports the interval in seconds (`refetch_delay`: 1 by default)
                "refetch_delay": _seconds_value(self.config.live_queries_refetch_interval),
            },
            "streaming_queries": {
                "batch_size": self.config.streaming_queries_batch_size,
                "refetch_delay": _seconds_value(self.config.streaming_queries_refetch_interval),
            },
            "experimental_features": list(self.config.experimental_features),
        }


def _seconds_value(milliseconds: int) -> int | float:
    """Milliseconds as seconds: an integer when whole (1000 -> 1), else a float."""
    return milliseconds // 1000 if milliseconds % 1000 == 0 else milliseconds / 1000


async def _send_answer(send: Send, status: int, payload: bytes, headers: Headers) -> None:
    """ASGI: send one whole answer."""
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


async def _read_body(
    receive: Receive, read: list[dict[str, Any]], declared: int, limit: int
) -> tuple[bytes, HttpError | None] | None:
    """ASGI: `(body, None)`, or `(b"", 413 error)` past `limit` bytes (`read`: the
    messages already received, in order; `declared`: the Content-Length, 0 when absent);
    None when the client went away first. A refused body is still read, up to
    `DRAIN_BYTES` more, and dropped, so the 413 reaches the client."""
    failure = body_too_large(limit) if declared > limit else None
    chunks: list[bytes] = []
    size = 0
    pending = iter(read)
    while declared <= limit + DRAIN_BYTES and size <= limit + DRAIN_BYTES:
        message = next(pending, None)
        if message is None:
            message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            failure = body_too_large(limit)
            chunks.clear()
        elif failure is None:
            chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks), failure
    return b"", failure


def create_app() -> App:
    """The app factory Granian workers call: configuration from `SVC_GRAPHQL_*`, log lines
    through `svc.logs` (set up here too: a server other than `svc serve` may call this)."""
    logs.setup()
    return App(Config.from_env())
