"""Webhook mode: ask the auth hook who the request is (spec section 5).

INTERFACE STUB — being implemented; see `AuthWebhook`.
"""

from __future__ import annotations

from svc.errors import SvcError
from svc.server.session import Session


class AuthWebhook:
    """Calls `SVC_GRAPHQL_AUTH_HOOK` in GET or POST mode and caches the answers."""

    def __init__(self, url: str, mode: str = "GET") -> None:
        self.url = url
        self.mode = mode

    async def session(self, headers: dict[str, str]) -> Session:
        """The session for lower-cased client `headers`; raises SvcError on denial."""
        raise SvcError("unexpected", "auth webhook is not implemented yet", status=500)

    async def close(self) -> None:
        """Release the HTTP client."""
