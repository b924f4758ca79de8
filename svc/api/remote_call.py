"""One GraphQL request to a remote schema through the shared outbound client
(ARCHITECTURE.md "Seams": `svc.outbound`).

Headers follow the reference (FIXTURES.md §7.2, Hasura `Server/Utils.hs`): the configured
headers, then the session variables as `x-svc-*` headers, then (with
`forward_client_headers`) the client's headers without hop-by-hop, content, accept and
`x-svc-*` ones, plus `X-Forwarded-Host` and `X-Forwarded-User-Agent`; a name is sent once,
the earlier source winning.
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.api.remote_guard import remote_guard
from svc.errors import ErrorCode, SvcError
from svc.metadata.remote_schemas import RemoteSchema
from svc.outbound import (
    OutboundError,
    OutboundResponse,
    env_value,
    render_template,
    resolve_headers,
    shared_client,
)
from svc.session_vars import is_session_variable, session_headers

# Client headers never forwarded (Hasura `commonClientHeadersIgnored` and the like).
NOT_FORWARDED = frozenset(
    {
        "content-length",
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
        "content-type",
        "transfer-encoding",
        "keep-alive",
        "upgrade",
    }
)


def remote_url(entry: RemoteSchema) -> str:
    """The remote's URL now: `url` with `{{ENV}}` rendered, or `url_from_env`'s value.
    Raises 400 `unexpected` / `not-found` for a missing environment variable."""
    d = entry.definition
    if d.url_from_env is not None:
        return env_value(d.url_from_env)
    return render_template(d.url or "")


def request_headers(
    entry: RemoteSchema,
    session: dict[str, str] | None = None,
    client: list[tuple[str, str]] | None = None,
) -> list[tuple[str, str]]:
    """The headers of a call to `entry` for a request with `session` variables and the
    `client`'s headers (lower-case names), in precedence order, each name once."""
    sent: dict[str, tuple[str, str]] = {}

    def add(name: str, value: str) -> None:
        sent.setdefault(name.lower(), (name, value))

    for name, value in resolve_headers(entry.definition.headers or ()):
        add(name, value)
    for name, value in session_headers(session or {}):
        add(name, value)
    if entry.definition.forward_client_headers and client:
        for name, value in client:
            low = name.lower()
            if low not in NOT_FORWARDED and not is_session_variable(low):
                add(name, value)
        host = next((v for k, v in client if k.lower() == "host"), None)
        agent = next((v for k, v in client if k.lower() == "user-agent"), None)
        if host is not None:
            add("X-Forwarded-Host", host)
        if agent is not None:
            add("X-Forwarded-User-Agent", agent)
    add("Content-Type", "application/json")
    return list(sent.values())


async def post_graphql(
    entry: RemoteSchema,
    body: dict[str, Any],
    headers: list[tuple[str, str]],
    timeout: float | None = None,
) -> tuple[Any, OutboundResponse]:
    """POST `body` (`{query, variables?, operationName?}`) to the remote; `(decoded JSON
    answer, response)`; `timeout` (seconds) overrides the remote's `timeout_seconds`.
    Raises 500 `unexpected` "HTTP exception occurred while sending the request to <url>"
    when no answer came (timed out, refused), 400 `remote-schema-error` "Invalid
    response from remote" when the answer is not JSON, and the bounds of
    `svc.api.remote_guard` (concurrency, circuit breaker)."""
    url = remote_url(entry)
    seconds = entry.definition.timeout if timeout is None else timeout
    async with remote_guard().call(entry.name, seconds):
        try:
            response = await shared_client().request(
                "POST", url, headers=headers, content=msgspec.json.encode(body), timeout=seconds
            )
        except OutboundError as exc:
            raise SvcError(
                ErrorCode.UNEXPECTED,
                f"HTTP exception occurred while sending the request to {entry.definition.url}",
                status=500 if exc.kind != "invalid-url" else 400,
                internal={"kind": exc.kind, "detail": exc.detail},
            ) from exc
        try:
            return response.json(), response
        except (msgspec.DecodeError, UnicodeDecodeError):
            raise SvcError(
                ErrorCode.REMOTE_SCHEMA_ERROR,
                f"Invalid response from remote: status {response.status}",
                internal={"body": response.body[:1000].decode(errors="replace")},
            ) from None
