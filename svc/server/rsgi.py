"""The app over Granian's native RSGI interface, which `svc serve` uses (measured faster
than ASGI in `bench/`: no per-message dicts, one call to send the response).

RSGI hands over the scope and a protocol object: `await protocol()` is the whole body and
`protocol.response_bytes(status, headers, body)` answers. Worker start and stop call
`__rsgi_init__` / `__rsgi_del__` with the worker's event loop.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from svc.config import Config
from svc.server.app import App, Request


class RsgiApp:
    """Serves one `App` over RSGI."""

    def __init__(self, app: App) -> None:
        self.app = app

    def __rsgi_init__(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the engine in the worker's loop before it serves."""
        loop.run_until_complete(self.app.startup())

    def __rsgi_del__(self, loop: asyncio.AbstractEventLoop) -> None:
        """Stop the engine when the worker stops."""
        loop.run_until_complete(self.app.shutdown())

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        """Answer one HTTP request (other protocols are not served)."""
        if scope.proto != "http":
            return
        started = time.perf_counter()
        # Granian gives lower-case names and only ASCII values (it drops the others).
        headers = dict(scope.headers.items())

        async def body() -> bytes:
            data: bytes = await protocol()
            return data

        query = scope.query_string
        request = Request(
            scope.method,
            scope.path,
            None,
            query.encode("latin-1") if isinstance(query, str) else query,
            headers,
            body,
        )
        status, payload, response_headers = await self.app.handle(request)
        protocol.response_bytes(status, response_headers, payload)
        self.app.log(request, status, started)


def create_app() -> RsgiApp:
    """The factory Granian workers call: configuration from `SVC_GRAPHQL_*`."""
    return RsgiApp(App(Config.from_env(dict(os.environ))))
