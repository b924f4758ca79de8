"""JWT mode: verify a bearer token (pyjwt) and turn its claims into a session.

INTERFACE STUB — being implemented; see `JwtVerifier`.
"""

from __future__ import annotations

from typing import Any

from svc.errors import SvcError
from svc.server.session import Session


class JwtVerifier:
    """Verifies tokens against `SVC_GRAPHQL_JWT_SECRET` (a JSON object)."""

    @classmethod
    def from_config(cls, raw: str) -> JwtVerifier:
        """Parse the JSON configuration; raises ValueError when it is invalid."""
        raise ValueError("JWT mode is not implemented yet")

    def config_record(self) -> dict[str, Any]:
        """`{"claims_namespace": …, "claims_format": …}` for the Config API (spec 2.12)."""
        raise NotImplementedError

    def has_token(self, headers: dict[str, str]) -> bool:
        """Whether the request carries the configured header or cookie at all."""
        raise NotImplementedError

    async def session(self, headers: dict[str, str]) -> Session:
        """Verify the token in lower-cased `headers`; raises SvcError (`invalid-jwt`, …)."""
        raise SvcError("invalid-jwt", "JWT mode is not implemented yet")

    async def close(self) -> None:
        """Release the JWKS HTTP client, if any."""
