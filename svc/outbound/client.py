"""The process's outbound HTTP client: one pooled `httpx.AsyncClient` behind
`OutboundClient.request`, which answers an `OutboundResponse` or raises `OutboundError`.

Every outbound call of svc (auth webhook, JWK sets; later actions, remote schemas, event
and scheduled deliveries) goes through `shared_client()`, so connections to one host are
reused across callers and the process never holds more than `pool_size` of them. The
httpx client is created on first use on the running event loop (and again if a call
comes from another loop, as each test's loop is) and closed by `close_shared()` at
shutdown (`Engine.close`).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import ssl
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any, Literal

import httpx
import msgspec

from svc.errors import ErrorCode, SvcError
from svc.version import VERSION

# httpcore tries `import sniffio` on every request; without sniffio installed (anyio 4
# no longer needs it) each failed import searched sys.path again: ~0.3 ms per call, 10%
# of an event delivery (measured with cProfile). A None entry fails at once.
if importlib.util.find_spec("sniffio") is None:
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]

DEFAULT_POOL_SIZE = 100  # the reference's HTTP manager keeps up to 100 per host
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_TIMEOUT = 60.0

Kind = Literal["timeout", "connection", "invalid-response", "invalid-url"]
# What each kind says; the texts are those of the reference's HTTP exception log
# (`Response timeout`, `Connection failure`, …) so callers can show them unchanged.
_MESSAGES: dict[str, str] = {
    "timeout": "Response timeout",
    "connection": "Connection failure",
    "invalid-response": "Invalid response",
    "invalid-url": "Invalid URL",
}
HeaderPairs = Sequence[tuple[str, str]] | Sequence[tuple[bytes, bytes]] | Mapping[str, str]


class OutboundError(SvcError):
    """An outbound call got no usable HTTP answer: 500 `unexpected` with `kind`
    (`timeout`: a connect, send, read or pool wait took longer than allowed;
    `connection`: refused, reset or unreachable; `invalid-response`: not HTTP;
    `invalid-url`: the URL cannot be requested), `url` and `detail` (the library's own
    text). Callers turn it into the reference's error for their feature."""

    def __init__(self, kind: Kind, url: str, detail: str = "") -> None:
        super().__init__(ErrorCode.UNEXPECTED, _MESSAGES[kind], status=500)
        self.kind: Kind = kind
        self.url = url
        self.detail = detail


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    """An HTTP answer: `status`, `headers` (lower-cased names, in the order received,
    repeats kept), `body` (bytes, content-decoded), `elapsed` (seconds from sending the
    request to reading the whole body)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    elapsed: float

    def header(self, name: str) -> str | None:
        """The value of header `name` (any case; repeated headers joined by ", ", as
        httpx and RFC 9110 combine them), None when absent."""
        wanted = name.lower()
        values = [v for k, v in self.headers if k == wanted]
        return ", ".join(values) if values else None

    def json(self) -> Any:
        """The body decoded as JSON; raises msgspec.DecodeError when it is not JSON."""
        return msgspec.json.decode(self.body)


def _kind(exc: Exception) -> Kind:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return "invalid-url"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.DecodingError):
        return "invalid-response"
    return "connection"


# A jar that keeps nothing: the client is shared by every caller (actions, auth webhook,
# remote schemas, events), so one answer's cookies would otherwise be sent to all of them.
_NO_COOKIES = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


SHARD_CONNECTIONS = 10  # connections per httpx client of the pool (see OutboundClient)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every shard: making one loads the CA bundle (~10 ms)."""
    return httpx.create_ssl_context()


def _new_http(connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(
        limits=limits,
        verify=_tls_context(),
        follow_redirects=False,
        headers={"user-agent": f"svc/{VERSION}"},
        cookies=_NO_COOKIES,  # a webhook's Set-Cookie must not reach other callers
    )


class OutboundClient:
    """A pool of HTTP connections: at most `pool_size` open at once (a call waits for a
    free one), each new one given `connect_timeout` seconds to connect; `timeout` is the
    default per-call limit (seconds) on each other phase: waiting for a pooled
    connection, sending, and each wait for response bytes (httpx's phase timeouts).
    Redirects are not followed. Raises ValueError for a non-positive size or timeout.

    The pool is several httpx clients of `SHARD_CONNECTIONS` connections each, and a call
    goes to the one with the fewest calls in flight: httpcore checks every connection of
    its pool for expiry (a `poll` per idle socket) on every request, so one pool of 100
    spent ~30% of an event delivery's CPU there (py-spy)."""

    def __init__(
        self,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if pool_size < 1 or connect_timeout <= 0 or timeout <= 0:
            raise ValueError("pool_size, connect_timeout and timeout must be positive")
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self._shards: list[httpx.AsyncClient | None] = []  # made on first use
        self._busy: list[int] = []  # requests in flight per shard
        self._loop: asyncio.AbstractEventLoop | None = None

    def _shard(self) -> tuple[int, httpx.AsyncClient]:
        """The shard with the fewest requests in flight (the first of them, so a light
        load stays on one) and its httpx client, made on first use on this loop."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # Clients of another (finished) loop cannot be used or closed here: drop them.
            count = -(-self.pool_size // SHARD_CONNECTIONS)
            self._shards = [None] * count
            self._busy = [0] * count
            self._loop = loop
        busy = self._busy
        index = busy.index(min(busy))
        http = self._shards[index]
        if http is None:
            size = min(SHARD_CONNECTIONS, self.pool_size - index * SHARD_CONNECTIONS)
            http = self._shards[index] = _new_http(size)
        return index, http

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
        phases = httpx.Timeout(limit, connect=min(self.connect_timeout, limit))
        started = time.perf_counter()
        shard, http = self._shard()
        self._busy[shard] += 1
        try:
            if without:
                request = http.build_request(
                    method, url, headers=headers, content=content, timeout=phases
                )
                for name in without:
                    request.headers.pop(name, None)
                response = await http.send(request)
            else:
                response = await http.request(
                    method, url, headers=headers, content=content, timeout=phases
                )
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise OutboundError(_kind(exc), url, str(exc) or type(exc).__name__) from exc
        finally:
            if shard < len(self._shards) and self._shards[shard] is http:
                self._busy[shard] -= 1
        elapsed = time.perf_counter() - started
        pairs = tuple((k.lower(), v) for k, v in response.headers.multi_items())
        return OutboundResponse(response.status_code, pairs, response.content, elapsed)

    async def close(self) -> None:
        """Close every pooled connection (a later call opens new ones)."""
        shards, self._shards, self._busy = self._shards, [], []
        if self._loop is asyncio.get_running_loop():
            await asyncio.gather(*(http.aclose() for http in shards if http is not None))
        self._loop = None


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
