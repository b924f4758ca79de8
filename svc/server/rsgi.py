"""The app over Granian's native RSGI interface, which `svc serve` uses (measured faster
than ASGI in `bench/`: no per-message dicts, one call to send the response).

RSGI hands over the scope and a protocol object: `await protocol()` is the whole body
(`async for chunk in protocol` its chunks), `protocol.client_disconnect()` a future done
when the client goes away, and `protocol.response_bytes(status, headers, body)` answers.
Worker start and stop call `__rsgi_init__` / `__rsgi_del__` with the worker's event loop.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from svc import logs
from svc.config import Config
from svc.server.app import (
    DRAIN_BYTES,
    App,
    Request,
    body_too_large,
    duplicated_credentials,
    request_id,
)
from svc.server.disconnect import RsgiWatch
from svc.server.lifecycle import prepare_worker, shut_down
from svc.server.ws_rsgi import serve_rsgi


class RsgiApp:
    """Serves one `App` over RSGI."""

    def __init__(self, app: App) -> None:
        self.app = app

    def __rsgi_init__(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the engine in the worker's loop before it serves; under `svc serve`, first
        install the end-of-grace handler (`svc.server.lifecycle.prepare_worker`)."""
        prepare_worker(loop, self.app.in_flight, self.app.ws.close_all)
        loop.run_until_complete(self.app.startup())

    def __rsgi_del__(self, loop: asyncio.AbstractEventLoop) -> None:
        """Stop the engine when the worker stops (`lifecycle.shut_down`: bounded).

        Granian calls it once every connection of the worker is done, i.e. after the
        in-flight requests finished or were cancelled at the end of the grace period."""
        loop.run_until_complete(shut_down(self.app.shutdown(), self.app.in_flight))

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        """Answer one HTTP request, or serve a websocket (`svc.server.ws_rsgi`).

         The body is read up to `--max-body-size` (413 past it, `_BodyReader`). A request
         still running after `ARM_SECONDS` is cancelled when its client goes away
        : no answer is sent, the log line says 499."""
        if scope.proto != "http":
            if scope.proto == "ws":
                await serve_rsgi(self.app.ws, scope, protocol, self.app.graphql_on)
            return
        started = time.perf_counter()
        app = self.app
        # Granian gives lower-case names and only ASCII values (it drops the others);
        # `items()` keeps repeated headers, which the dict collapses.
        pairs = scope.headers.items()
        headers = dict(pairs)
        query = scope.query_string
        request = Request(
            scope.method,
            scope.path,
            None,
            query.encode("latin-1") if isinstance(query, str) else query,
            headers,
            _BodyReader(protocol, headers.get("content-length"), app.config.max_body_size).read,
            request_id(headers.get("x-request-id")),
            duplicated_credentials(pairs, app.names.prefix) if len(headers) < len(pairs) else (),
        )
        watch = RsgiWatch(app.sweeper, protocol)
        try:
            status, payload, response_headers = await app.handle(request)
        except asyncio.CancelledError:
            if watch.disconnected:
                app.log_disconnect(request, started)
                return
            raise
        finally:
            watch.stop()
        protocol.response_bytes(status, response_headers, payload)
        app.log(request, status, started)


class _BodyReader:
    """Reads a request body of at most `limit` bytes; raises 413 `HttpError` past it."""

    __slots__ = ("declared", "limit", "protocol")

    def __init__(self, protocol: Any, declared: str | None, limit: int) -> None:
        self.protocol = protocol
        self.declared = declared
        self.limit = limit

    async def read(self) -> bytes:
        """The whole body. A `content-length` within the limit (HTTP framing bounds the body
        by it): one read; one more than `DRAIN_BYTES` past it: refused unread. Otherwise
        chunks are counted as they come, and a body past the limit is read to its end and
        dropped (up to `DRAIN_BYTES`), so the client, still sending, receives the 413
        rather than a reset connection."""
        limit = self.limit
        if self.declared is not None:
            try:
                size = int(self.declared)
            except ValueError:
                size = -1
            if size > limit + DRAIN_BYTES:
                raise body_too_large(limit)
            if 0 <= size <= limit:
                data: bytes = await self.protocol()
                if len(data) > limit:
                    raise body_too_large(limit)
                return data
        # No length, or too long: count chunks as they come; past the limit keep reading
        # (and dropping) up to `DRAIN_BYTES` more.
        chunks: list[bytes] = []
        total = 0
        async for chunk in self.protocol:
            total += len(chunk)
            if total > limit:
                chunks.clear()
                if total > limit + DRAIN_BYTES:
                    break
            else:
                chunks.append(chunk)
        if total > limit:
            raise body_too_large(limit)
        return b"".join(chunks)


def create_app() -> RsgiApp:
    """The factory Granian workers call: configuration from `SVC_GRAPHQL_*`, log lines
    through `svc.logs`."""
    logs.setup()
    return RsgiApp(App(Config.from_env()))
