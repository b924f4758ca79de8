"""The aiohttp connection pool behind `OutboundClient` (the default,
`SVC_GRAPHQL_OUTBOUND_CLIENT=aiohttp`): one `aiohttp.ClientSession` per event loop over
one `TCPConnector` of at most `pool_size` connections. Chosen over httpx by measurement:
~8x the requests per second to a local webhook in the same run (README "Performance",
`bench.events`), the per-request cost that bounded event delivery."""

from __future__ import annotations

import asyncio
import functools
import ssl
import urllib.request
from collections.abc import Sequence
from urllib.parse import urlsplit

import aiohttp
import certifi
from multidict import CIMultiDict

from svc.outbound.answers import HeaderPairs, Kind, OutboundError, header_list
from svc.version import VERSION

_USER_AGENT = f"svc/{VERSION}"


def _kind(exc: BaseException) -> Kind:
    if isinstance(exc, TimeoutError):  # aiohttp's connect and read timeouts are ones too
        return "timeout"
    if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError | ValueError):
        return "invalid-url"
    if isinstance(
        exc,
        aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError | aiohttp.ClientResponseError,
    ):
        return "invalid-response"
    return "connection"


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for the process (certifi's CA bundle, as httpx's): making one loads
    the bundle (~10 ms)."""
    return ssl.create_default_context(cafile=certifi.where())


def _headers(headers: HeaderPairs, without: Sequence[str]) -> CIMultiDict[str]:
    """The headers to send: the caller's (repeats and order kept), less `without`, plus
    svc's `User-Agent` unless given or removed."""
    dropped = {name.lower() for name in without}
    sent: CIMultiDict[str] = CIMultiDict(
        (k, v) for k, v in header_list(headers) if k.lower() not in dropped
    )
    if "user-agent" not in dropped and "User-Agent" not in sent:
        sent["User-Agent"] = _USER_AGENT
    return sent


class AiohttpPool:
    """At most `pool_size` connections, each new one given `connect_timeout` seconds to
    connect; made on first use on the calling loop (a call from another loop, as each
    test's, drops the old loop's session: it cannot be closed from here)."""

    def __init__(self, pool_size: int, connect_timeout: float) -> None:
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proxies: dict[str, str] = {}

    def _current(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            if self._session is not None:
                self._session.detach()  # its loop is gone: nothing to close on it
            connector = aiohttp.TCPConnector(
                limit=self.pool_size, limit_per_host=0, ssl=_tls_context()
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),  # no caller's cookies reach another
                # aiohttp's trust_env reads ~/.netrc and the proxy variables on every
                # request (in a thread: ~40% of a delivery's CPU); they are read once.
                trust_env=False,
            )
            self._proxies = urllib.request.getproxies()
            self._loop = loop
        return self._session

    def _proxy(self, url: str) -> str | None:
        """The proxy for `url` from the environment (`HTTP_PROXY`, `HTTPS_PROXY`,
        `NO_PROXY`, read when the session was made), as httpx honours them."""
        if not self._proxies:
            return None
        parts = urlsplit(url)
        if urllib.request.proxy_bypass(parts.hostname or ""):  # NO_PROXY
            return None
        return self._proxies.get(parts.scheme)

    async def send(
        self,
        method: str,
        url: str,
        headers: HeaderPairs,
        content: bytes | None,
        limit: float,
        without: Sequence[str],
    ) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
        """(status, lower-cased header pairs, decoded body); `limit`: seconds for the
        pool wait plus connect, and for each wait for response bytes. Raises
        `OutboundError`."""
        connect = min(self.connect_timeout, limit)
        timeout = aiohttp.ClientTimeout(
            total=None, connect=limit, sock_connect=connect, sock_read=limit
        )
        # No automatic Content-Type for a bytes body (aiohttp would say octet-stream).
        skip = {"Content-Type", *without}
        try:
            session = self._current()
            async with session.request(
                method,
                url,
                proxy=self._proxy(url),
                headers=_headers(headers, without),
                data=content,
                timeout=timeout,
                allow_redirects=False,
                skip_auto_headers=skip,
            ) as response:
                body = await response.read()
                pairs = tuple(
                    (k.decode("latin-1").lower(), v.decode("latin-1"))
                    for k, v in response.raw_headers
                )
                return response.status, pairs, body
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise OutboundError(_kind(exc), url, str(exc) or type(exc).__name__) from exc

    async def close(self) -> None:
        """Close every pooled connection (a later call opens new ones)."""
        session, self._session = self._session, None
        if session is not None and self._loop is asyncio.get_running_loop():
            await session.close()
        elif session is not None:
            session.detach()
        self._loop = None
