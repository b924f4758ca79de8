"""The ASGI application: routes, body handling, errors, one JSON log line per request.

Routes (spec section 1): `GET /healthz`, `POST /v1/query` (also `/v2/query`, `/v1/metadata`),
`POST /v1/graphql` (also `/v1alpha1/graphql`), `POST /v1/graphql/explain`,
`GET /v1/version`, `GET /v1alpha1/config`, `POST /v1alpha1/pg_dump`, and the RESTified
endpoints under `/api/rest/`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from svc.api.engine import Engine
from svc.api.graphql import decode_json
from svc.api.rest import RestRequest
from svc.config import Config
from svc.errors import SvcError
from svc.execute.pg_dump import pg_dump
from svc.server.auth import Authenticator, Session
from svc.version import VERSION

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_encode = msgspec.json.encode
JSON_HEADERS = [("content-type", "application/json; charset=utf-8")]
NOT_FOUND = SvcError("not-found", "resource does not exist", status=404)


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

    `headers` has lower-case names; `raw_path` is the still percent-encoded path when the
    interface gives it (RESTified endpoints keep `%2F` inside a segment); `body()` reads the
    whole body."""

    method: str
    path: str
    raw_path: str | None
    query_string: bytes
    headers: dict[str, str]
    body: Callable[[], Awaitable[bytes]]


Response = tuple[int, bytes, list[tuple[str, str]]]


class App:
    """ASGI 3 application; the engine is started by the lifespan protocol. `handle` is
    interface-neutral; `svc.server.rsgi` serves the same app over RSGI."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.engine: Engine | None = None
        self.auth = Authenticator(config)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:  # reported to the server, which exits
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def startup(self) -> None:
        """Start the engine (idempotent)."""
        if self.engine is None:
            self.engine = await Engine.start(self.config)

    async def shutdown(self) -> None:
        """Stop the engine."""
        if self.engine is not None:
            await self.engine.close()
            self.engine = None
        await self.auth.close()

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()

        async def body() -> bytes:
            chunks: list[bytes] = []
            while True:
                message = await receive()
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    return b"".join(chunks)

        raw_path = scope.get("raw_path")
        request = Request(
            scope["method"],
            scope["path"],
            raw_path.decode("latin-1") if raw_path else None,
            scope.get("query_string", b""),
            {k.decode("latin-1").lower(): _header_value(v) for k, v in scope["headers"]},
            body,
        )
        status, payload, headers = await self.handle(request)
        raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        await send({"type": "http.response.start", "status": status, "headers": raw_headers})
        await send({"type": "http.response.body", "body": payload})
        self.log(request, status, started)

    def log(self, request: Request, status: int, started: float) -> None:
        """One JSON line per request on stdout (`SVC_GRAPHQL_LOG_REQUESTS`)."""
        if self.config.log_requests:
            entry = {
                "type": "http-log",
                "method": request.method,
                "path": request.path,
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000, 3),
            }
            sys.stdout.write(_encode(entry).decode() + "\n")

    async def handle(self, request: Request) -> Response:
        """Route one request; returns (status, body, headers)."""
        method, path = request.method, request.path.rstrip("/") or "/"
        headers = request.headers
        try:
            if path == "/healthz":
                return 200, b"OK", [("content-type", "text/plain")]
            if path == "/v1/version" and method == "GET":
                return 200, _encode({"version": VERSION}), JSON_HEADERS
            engine = self.engine
            if engine is None:
                raise SvcError("unexpected", "server is starting", status=503)
            session = await self.auth.session(headers)
            if path.startswith("/api/rest/"):  # RESTified endpoints (spec 4.12)
                self._require_api("graphql")
                body = await request.body()
                full = request.raw_path or request.path  # raw: `%2F` stays in a segment
                rest = RestRequest(
                    method,
                    full.split("?")[0][len("/api/rest/") :],
                    request.query_string,
                    body,
                    headers.get("content-type", ""),
                    path_is_raw=request.raw_path is not None,
                )
                answer = await engine.rest(rest, session.role, session.variables)
                return answer.status, answer.body, JSON_HEADERS + answer.headers
            if path in ("/v1/graphql", "/v1alpha1/graphql") and method == "POST":
                self._require_api("graphql")
                body = await request.body()
                return (
                    200,
                    await engine.graphql_body(body, session.role, session.variables),
                    (JSON_HEADERS),
                )
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
                return 200, await self._pg_dump(raw), [("content-type", "application/sql")]
            if path == "/v1alpha1/config" and method == "GET":
                self._require_api("config")
                self._require_admin(session)
                return 200, _encode(self._config_record()), JSON_HEADERS
            raise NOT_FOUND
        except SvcError as exc:
            is_graphql = path in ("/v1/graphql", "/v1alpha1/graphql")
            if is_graphql and exc.code not in ("invalid-json", "not-found"):
                return 200, _encode({"errors": [exc.to_graphql_error()]}), JSON_HEADERS
            return exc.status, _encode(exc.to_query_body()), JSON_HEADERS

    def _require_api(self, name: str) -> None:
        if name not in self.config.enabled_apis:
            raise NOT_FOUND

    @staticmethod
    def _require_admin(session: Session) -> None:
        if not session.is_admin:
            raise SvcError("access-denied", "restricted access : admin only", path="$.args")

    @staticmethod
    async def _json(request: Request) -> Any:
        return decode_json(await request.body())

    async def _pg_dump(self, raw: Any) -> bytes:
        """Hasura's `{opts, clean_output, source}` body; 400 `invalid-params` otherwise."""
        if not isinstance(raw, dict):
            raise SvcError("invalid-params", "expected an object", path="$")
        opts = raw.get("opts", [])
        if not isinstance(opts, list) or not all(isinstance(o, str) for o in opts):
            raise SvcError("invalid-params", "opts must be a list of strings", path="$.opts")
        return await pg_dump(self.config.database_url, opts, bool(raw.get("clean_output")))

    def _config_record(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "is_admin_secret_set": bool(self.config.admin_secrets),
            "is_auth_hook_set": self.auth.webhook is not None,
            "is_jwt_set": self.auth.jwt is not None,
            "jwt": self.auth.jwt.config_record() if self.auth.jwt is not None else [],
            "is_allow_list_enabled": self.config.enable_allowlist,
            "live_queries": {"batch_size": 100, "refetch_delay": 1},
        }


def create_app() -> App:
    """The app factory Granian workers call: configuration from `SVC_GRAPHQL_*`."""
    return App(Config.from_env(dict(os.environ)))
