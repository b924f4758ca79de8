"""The httpx connection pool behind `OutboundClient` (`SVC_GRAPHQL_OUTBOUND_CLIENT=httpx`):
several httpx clients of `SHARD_CONNECTIONS` connections each; a call goes to the one
with the fewest calls in flight, because httpcore checks every connection of its pool
for expiry (a `poll` per idle socket) on every request, so one pool of 100 spent ~30% of
an event delivery's CPU there (py-spy)."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import ssl
import sys
from collections.abc import Sequence
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

from svc.outbound.answers import HeaderPairs, Kind, OutboundError
from svc.version import VERSION

# httpcore tries `import sniffio` on every request; without sniffio installed (anyio 4
# no longer needs it) each failed import searched sys.path again: ~0.3 ms per call, 10%
# of an event delivery (measured with cProfile). A None entry fails at once.
if importlib.util.find_spec("sniffio") is None:
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]

SHARD_CONNECTIONS = 10  # connections per httpx client of the pool

# A jar that keeps nothing: the client is shared by every caller (actions, auth webhook,
# remote schemas, events), so one answer's cookies would otherwise be sent to all of them.
_NO_COOKIES = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


def _kind(exc: Exception) -> Kind:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return "invalid-url"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.DecodingError):
        return "invalid-response"
    return "connection"


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


class HttpxPool:
    """At most `pool_size` connections over httpx shards, made on first use on the
    calling loop (a call from another loop drops the old loop's clients)."""

    def __init__(self, pool_size: int, connect_timeout: float) -> None:
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self._shards: list[httpx.AsyncClient | None] = []
        self._busy: list[int] = []  # requests in flight per shard
        self._loop: asyncio.AbstractEventLoop | None = None

    def _shard(self) -> tuple[int, httpx.AsyncClient]:
        """The shard with the fewest requests in flight (the first of them, so a light
        load stays on one) and its httpx client, made on first use on this loop."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
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

    async def send(
        self,
        method: str,
        url: str,
        headers: HeaderPairs,
        content: bytes | None,
        limit: float,
        without: Sequence[str],
    ) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
        """(status, lower-cased header pairs, decoded body); `limit`: seconds per phase.
        Raises `OutboundError`."""
        phases = httpx.Timeout(limit, connect=min(self.connect_timeout, limit))
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
        pairs = tuple((k.lower(), v) for k, v in response.headers.multi_items())
        return response.status_code, pairs, response.content

    async def close(self) -> None:
        """Close every pooled connection (a later call opens new ones)."""
        shards, self._shards, self._busy = self._shards, [], []
        if self._loop is asyncio.get_running_loop():
            await asyncio.gather(*(http.aclose() for http in shards if http is not None))
        self._loop = None
