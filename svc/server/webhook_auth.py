"""Webhook mode: ask the auth hook who the request is (spec section 5).

`AuthWebhook.session(headers)` calls the configured URL and turns its answer into a
`Session`. The rules, with their sources:

- **Request** (spec 5, "Webhook request"; Hasura `Hasura.Server.Auth.WebHook`):
  GET mode forwards the client's headers except `IGNORED_CLIENT_HEADERS`; POST mode sends
  `{"headers": {name: value, ...}}` with every client header (names lower-case, as the
  server received them). Hasura also sends `"request"` (the GraphQL request); svc does not.
- **Response** (spec 5, "Webhook response"; spec 7): 200 → the JSON object body holds the
  session variables; 401 → 401 `access-denied` "Authentication hook unauthorized this
  request"; any other status → 500 `unexpected` "Invalid response from authorization
  hook"; no answer at all (connection refused, timeout, protocol error) → 500
  `unexpected` "webhook authentication request failed". The messages and codes are
  Hasura v2's (`throw401`/`throw500` in `mkUserInfoFromResp`/`userInfoFromAuthHook`).
- **Role**: only the hook decides. The role is the hook's `x-svc-role`; the client's own
  `X-Svc-Role` header is merely forwarded, so a hook may honour it, but svc never reads it
  in this mode (Hasura's `getUserInfoWithExpTime` uses the hook's answer alone). A 200
  answer without a role is 400 `invalid-params` "x-svc-role not found in session
  variables" (Hasura v2 `mkUserInfo URBFromSessionVariables`; Hasura 1.x answered 500
  "missing x-hasura-role key in webhook response").
- **Expiry and caching** (spec 5): a 200 answer is cached, keyed by a hash of the client's
  credential headers, until `Cache-Control: max-age=<s>` (or `s-maxage`) or `Expires`
  (`%a, %d %b %Y %T GMT`) says it expires, never beyond. The keys are read from the JSON
  body first; only when the body has neither are the HTTP response headers of the same
  names consulted (body wins). `no-store`/`no-cache`, a zero age, an unparsable value or
  no expiry at all mean "not cached". Hasura reads only the body keys and uses them to end
  websocket sessions; svc also uses them to skip repeated hook calls.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.outbound import OutboundClient, OutboundError, OutboundResponse, shared_client
from svc.server.session import Session, cache_lifetime, hook_session
from svc.session_vars import SVC_NAMES, Names

_log = logging.getLogger(__name__)

# Hasura's `commonClientHeadersIgnored` (spec 5, GET mode), lower-case.
IGNORED_CLIENT_HEADERS = frozenset(
    {
        "content-length",
        "content-type",
        "content-md5",
        "user-agent",
        "host",
        "origin",
        "referer",
        "accept",
        "accept-encoding",
        "accept-language",
        "accept-datetime",
        "cache-control",
        "connection",
        "dnt",
    }
)
# Hop-by-hop headers describe the client's own connection to svc; forwarding them on a
# bodiless GET would break the hook request (e.g. `transfer-encoding: chunked`).
HOP_BY_HOP_HEADERS = frozenset(
    {
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "keep-alive",
        "expect",
        "proxy-connection",
        "proxy-authorization",
    }
)
_NOT_FORWARDED = IGNORED_CLIENT_HEADERS | HOP_BY_HOP_HEADERS
UNAUTHORIZED = "Authentication hook unauthorized this request"
INVALID_RESPONSE = "Invalid response from authorization hook"
REQUEST_FAILED = "webhook authentication request failed"


def forwarded_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The client headers GET mode forwards (also the cache key's input in both modes).

    `headers`: lower-cased names → values. Drops Hasura's ignored list (spec 5: Content-Length,
    Content-Type, Content-MD5, User-Agent, Host, Origin, Referer, Accept, Accept-Encoding,
    Accept-Language, Accept-Datetime, Cache-Control, Connection, DNT) and hop-by-hop headers.
    """
    return {k: v for k, v in headers.items() if k.lower() not in _NOT_FORWARDED}


def cache_key(credentials: Mapping[str, str]) -> str:
    """SHA-256 hex digest of the sorted `(name, value)` pairs (names lower-cased)."""
    pairs = sorted((k.lower(), v) for k, v in credentials.items())
    return hashlib.sha256(msgspec.json.encode(pairs)).hexdigest()


def _body_key(body: Mapping[str, Any], name: str) -> str | None:
    for key, value in body.items():
        if key.lower() == name and isinstance(value, str):
            return value
    return None


class AuthWebhook:
    """Calls `SVC_GRAPHQL_AUTH_HOOK` in GET or POST mode and caches the answers.

    One instance per server process; `session` is safe to call concurrently from one event
    loop (cache updates never await, so they cannot interleave). Concurrent requests with the
    same credentials may each call the hook before the first answer is cached.
    """

    def __init__(
        self,
        url: str,
        mode: str = "GET",
        *,
        timeout: float = 10.0,
        cache_size: int = 10_000,
        client: OutboundClient | None = None,
        names: Names = SVC_NAMES,
    ) -> None:
        """`url`: the hook; `mode`: `GET` or `POST` (any case); `timeout`: seconds for
        each phase of the hook exchange (connect, send, each wait for the answer);
        `cache_size`: most answers kept; `client`: the outbound client (default: the
        process's, `svc.outbound.shared_client()`); `names`: the server's session names
        (the hook answers `x-hasura-*` keys under the Hasura names switch).

        Raises ValueError for another mode or a non-positive `cache_size`.
        """
        method = mode.upper()
        if method not in ("GET", "POST"):
            raise ValueError(f"auth hook mode must be GET or POST, not {mode!r}")
        if cache_size < 1:
            raise ValueError("cache_size must be positive")
        self.url = url
        self.mode = method
        self.names = names
        self.timeout = timeout
        self.cache_size = cache_size
        self._client = client
        # key → (time.monotonic() deadline, session); insertion order is age order.
        self._cache: dict[str, tuple[float, Session]] = {}

    async def session(self, headers: dict[str, str]) -> Session:
        """The session for lower-cased client `headers` (name → value).

        Returns a cached answer while it is fresh (spec 5 expiry), else asks the hook.
        Raises SvcError: 401 `access-denied` (hook answered 401); 400 `invalid-params` (200
        without `x-svc-role`); 500 `unexpected` (other status, body not a JSON object, hook
        unreachable or slower than `timeout`).
        """
        credentials = forwarded_headers(headers)
        key = cache_key(credentials)
        hit = self._cache.get(key)
        if hit is not None:
            if hit[0] > time.monotonic():
                return Session(hit[1].role, dict(hit[1].variables))
            self._cache.pop(key, None)
        response = await self._call(headers, credentials)
        session, lifetime = self._answer(response)
        if lifetime is not None and lifetime > 0:
            self._store(key, time.monotonic() + lifetime, session)
        return Session(session.role, dict(session.variables))

    async def close(self) -> None:
        """Nothing to release: the connections belong to the outbound client, which the
        process closes at shutdown (`svc.outbound.close_shared`)."""

    async def _call(self, headers: dict[str, str], credentials: dict[str, str]) -> OutboundResponse:
        client = self._client or shared_client()
        try:
            if self.mode == "GET":
                sent = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in credentials.items()]
                return await client.request("GET", self.url, headers=sent, timeout=self.timeout)
            body = msgspec.json.encode({"headers": headers})
            return await client.request(
                "POST",
                self.url,
                content=body,
                headers={"content-type": "application/json"},
                timeout=self.timeout,
            )
        except (OutboundError, UnicodeError) as exc:
            reason = exc.kind if isinstance(exc, OutboundError) else type(exc).__name__
            self._log(None, reason)
            raise SvcError(ErrorCode.UNEXPECTED, REQUEST_FAILED, status=500) from None

    def _answer(self, response: OutboundResponse) -> tuple[Session, float | None]:
        """The session and its lifetime in seconds (None: not cacheable) of a hook answer."""
        status = response.status
        if status == 401:
            raise SvcError(ErrorCode.ACCESS_DENIED, UNAUTHORIZED, status=401)
        if status != 200:
            self._log(status, "unexpected status")
            raise SvcError(ErrorCode.UNEXPECTED, INVALID_RESPONSE, status=500)
        try:
            body = response.json()
        except msgspec.DecodeError:
            self._log(status, "invalid JSON")
            raise SvcError(
                ErrorCode.UNEXPECTED, f"{INVALID_RESPONSE}: invalid JSON", status=500
            ) from None
        if not isinstance(body, dict):
            self._log(status, "not a JSON object")
            raise SvcError(
                ErrorCode.UNEXPECTED, f"{INVALID_RESPONSE}: expected a JSON object", status=500
            )
        session = hook_session(body, self.names)
        body_cc, body_exp = _body_key(body, "cache-control"), _body_key(body, "expires")
        if body_cc is None and body_exp is None:  # the body wins; else the HTTP headers
            body_cc = response.header("cache-control")
            body_exp = response.header("expires")
        return session, cache_lifetime(body_cc, body_exp, time.time())

    def _store(self, key: str, deadline: float, session: Session) -> None:
        cache = self._cache
        cache.pop(key, None)
        if len(cache) >= self.cache_size:
            now = time.monotonic()
            for stale in [k for k, (d, _) in cache.items() if d <= now]:
                del cache[stale]
            # Still full: drop the oldest tenth at once so the scan above stays rare.
            excess = len(cache) - self.cache_size + 1
            if excess > 0:
                excess = max(excess, self.cache_size // 10)
                for old in list(cache)[:excess]:
                    del cache[old]
        cache[key] = (deadline, session)

    def _log(self, status: int | None, reason: str) -> None:
        """One JSON line on stderr for a failed hook call (Hasura logs `webhook-log`)."""
        line = {
            "type": "webhook-log",
            "level": "error",
            "url": self.url,
            "method": self.mode,
            "status": status,
            "reason": reason,
        }
        _log.error(line)
