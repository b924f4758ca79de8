"""The process's outbound HTTP client: one connection pool behind
`OutboundClient.request`, which answers an `OutboundResponse` or raises `OutboundError`.

Every outbound call of svc (auth webhook, JWK sets, actions, remote schemas, event and
scheduled deliveries) goes through `shared_client()`, so connections to one host are
reused across callers and the process never holds more than `pool_size` of them. The
library behind it is aiohttp (`svc/outbound/pool_aiohttp.py`) unless
`SVC_GRAPHQL_OUTBOUND_CLIENT=httpx` (`svc/outbound/pool_httpx.py`); both give the same
answers and error kinds (`tests/test_outbound.py` runs on each). The pool is made on
first use on the running event loop (and again if a call comes from another loop, as
each test's loop is) and closed by `close_shared()` at shutdown (`Engine.close`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from svc.config import outbound_client
from svc.outbound.answers import HeaderPairs, Kind, OutboundError, OutboundResponse

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_TIMEOUT",
    "HeaderPairs",
    "Kind",
    "OutboundClient",
    "OutboundError",
    "OutboundResponse",
    "close_shared",
    "configure_shared",
    "shared_client",
]

DEFAULT_POOL_SIZE = 100  # the reference's HTTP manager keeps up to 100 per host
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_TIMEOUT = 60.0


class _Pool(Protocol):
    async def send(
        self,
        method: str,
        url: str,
        headers: HeaderPairs,
        content: bytes | None,
        limit: float,
        without: Sequence[str],
    ) -> tuple[int, tuple[tuple[str, str], ...], bytes]: ...

    async def close(self) -> None: ...


def _pool_class(library: str) -> Any:
    """The pool class of `library`, imported when first chosen: each library costs ~0.3 s
    of a worker's start (httpx also imports its command line's click, rich and pygments).
    Raises ValueError for another library."""
    if library == "aiohttp":
        from svc.outbound.pool_aiohttp import AiohttpPool

        return AiohttpPool
    if library == "httpx":
        from svc.outbound.pool_httpx import HttpxPool

        return HttpxPool
    raise ValueError(f"unknown outbound client library {library!r}")


class OutboundClient:
    """A pool of HTTP connections: at most `pool_size` open at once (a call waits for a
    free one), each new one given `connect_timeout` seconds to connect; `timeout` is the
    default per-call limit (seconds) on each other phase: waiting for a pooled
    connection, and each wait for response bytes. Redirects are not followed, cookies
    not kept. `library`: `aiohttp` or `httpx` (None: `svc.config.outbound_client()`).
    Raises ValueError for a non-positive size or timeout, or another library."""

    def __init__(
        self,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        timeout: float = DEFAULT_TIMEOUT,
        library: str | None = None,
    ) -> None:
        if pool_size < 1 or connect_timeout <= 0 or timeout <= 0:
            raise ValueError("pool_size, connect_timeout and timeout must be positive")
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.library = outbound_client() if library is None else library
        self._pool: _Pool = _pool_class(self.library)(pool_size, connect_timeout)

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: HeaderPairs = (),
        content: bytes | None = None,
        timeout: float | None = None,
        without: Sequence[str] = (),
    ) -> OutboundResponse:
        """Send one request and read the whole answer (any status is an answer).

        `headers`: pairs or a dict, str (ASCII/latin-1) or bytes; `timeout`: seconds per
        phase for this call (None: the client's); `without`: header names not to send,
        the client's own included (`User-Agent`; an event trigger's request transform
        removes headers). Raises `OutboundError` (see its kinds).
        """
        limit = self.timeout if timeout is None else timeout
        started = time.perf_counter()
        status, pairs, body = await self._pool.send(method, url, headers, content, limit, without)
        return OutboundResponse(status, pairs, body, time.perf_counter() - started)

    async def close(self) -> None:
        """Close every pooled connection (a later call opens new ones)."""
        await self._pool.close()


_shared: list[OutboundClient] = []


def shared_client() -> OutboundClient:
    """The process's one client (created with the defaults on first use, unless
    `configure_shared` came first)."""
    if not _shared:
        _shared.append(OutboundClient())
    return _shared[0]


def configure_shared(**options: Any) -> OutboundClient:
    """Replace the process's client with one made with `options` (`pool_size`,
    `connect_timeout`, `timeout`); call at startup, before any request. Raises
    ValueError for bad options."""
    client = OutboundClient(**options)
    _shared[:] = [client]
    return client


async def close_shared() -> None:
    """Close the process's client's connections (at shutdown; idempotent)."""
    for client in _shared:
        await client.close()
