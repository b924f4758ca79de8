"""The sessions of credentials seen before, for answering a repeated GraphQL request before
any header dict, `Request` or session object is built (the request path's
own cost under ASGI).

A repeated query is already answered from its bytes alone
(`GraphQLService.answer_again`); what remained per request was the HTTP layer around it:
decoding every header, the request object, authentication, routing. `App._http` now
answers a `POST` to a GraphQL path whose body came in one message, and whose credential
headers map to a session remembered here, straight from `answer_again`; anything else
(a first request, an error, an unknown credential) takes the general path, which
remembers the session it resolved.

Only where the session is a pure function of the credential headers: no JWT (tokens
expire, keys rotate) and no auth webhook (the hook decides each time). With an admin
secret, only a request whose secret was checked once lands here (a wrong secret is never
remembered: its request failed). Credential headers are `authorization` and every
`x-svc-*` header (`x-hasura-*` under the Hasura names switch: the memo holds the server's
prefix), compared as the bytes that arrived.
"""

from __future__ import annotations

from collections.abc import Iterable

from svc.server.auth import Session

Credentials = tuple[tuple[bytes, bytes], ...]

# The most credential sets remembered per worker; past it the memo starts over (a bound
# on memory when every request carries another token or session variable).
MEMO_ENTRIES = 4096


def credentials(raw_headers: Iterable[tuple[bytes, bytes]], prefix: bytes) -> Credentials:
    """The credential headers of a request (`authorization`, and those starting with
    `prefix`, the server's `Names.prefix_bytes`: `x-svc-`), as `(name, value)` bytes in
    arrival order: the key of a remembered session."""
    length = len(prefix)
    return tuple(
        pair for pair in raw_headers if pair[0][:length] == prefix or pair[0] == b"authorization"
    )


class SessionMemo:
    """`Credentials` → the `Session` the authenticator resolved for them, when sessions
    are a pure function of the headers (module docstring); `enabled` False otherwise.
    `prefix`: the server's session-variable prefix as bytes (`key`)."""

    __slots__ = ("enabled", "prefix", "sessions")

    def __init__(self, enabled: bool, prefix: bytes) -> None:
        self.enabled = enabled
        self.prefix = prefix
        self.sessions: dict[Credentials, Session] = {}

    def key(self, raw_headers: Iterable[tuple[bytes, bytes]]) -> Credentials:
        """The credentials of a request's raw headers (`credentials`)."""
        return credentials(raw_headers, self.prefix)

    def scan(self, raw_headers: Iterable[tuple[bytes, bytes]]) -> tuple[Credentials, bytes | None]:
        """`key` and the `x-request-id` value (None when absent) of raw headers, in one
        pass (the repeated-request path reads both)."""
        prefix, length = self.prefix, len(self.prefix)
        found: list[tuple[bytes, bytes]] = []
        given = None
        for pair in raw_headers:
            name = pair[0]
            if name[:length] == prefix or name == b"authorization":
                found.append(pair)
            elif name == b"x-request-id":
                given = pair[1]
        return tuple(found), given

    def get(self, key: Credentials) -> Session | None:
        """The remembered session, or None."""
        return self.sessions.get(key)

    def remember(self, key: Credentials, session: Session) -> None:
        """Remember `session` for `key` (a name given twice is never remembered: such a
        request is refused)."""
        if not self.enabled or len({name for name, _ in key}) < len(key):
            return
        if len(self.sessions) >= MEMO_ENTRIES:
            self.sessions.clear()
        self.sessions[key] = session
