"""Who a request acts as (spec section 5): admin secret, then JWT or auth webhook.

Order, as the reference does it:
Header and variable names are the server's `Names` (`config.hasura_compat`: `X-Hasura-*`
for `X-Svc-*` below, `svc.session_vars`), fixed here at construction.

1. No admin secret configured: every request is admin unless `X-Svc-Role` names another
   role (JWT and webhook modes need a secured endpoint, so they are not consulted).
2. `X-Svc-Admin-Secret` present: it must equal one of the configured secrets (constant-time
   compare), else 401 `access-denied` "invalid x-svc-admin-secret" (the reference's message
   also names `x-hasura-access-key`, a header svc does not accept, so svc's does not); the
   request is admin and may act as any role through
   `X-Svc-Role` and `X-Svc-*` headers.
3. JWT mode: a request with the token header is verified; one without it gets the
   unauthorized role when configured, else 400 `invalid-headers`.
4. Webhook mode: the hook decides.
5. Otherwise: the unauthorized role when configured, else 401 `access-denied`.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

from svc.config import Config
from svc.errors import ErrorCode, SvcError
from svc.server.session import Session, header_session
from svc.server.webhook_auth import AuthWebhook
from svc.session_vars import ADMIN_ROLE, names_for

if TYPE_CHECKING:
    from svc.server.jwt_auth import JwtVerifier

__all__ = ["Authenticator", "Session"]


class Authenticator:
    """Resolves the session of each request; owns the JWT verifier and the webhook client."""

    def __init__(self, config: Config) -> None:
        """Raises ValueError for an invalid JWT configuration."""
        self.config = config
        self.names = names = names_for(config.hasura_compat)
        self.secrets = tuple(s.encode() for s in config.admin_secrets)
        self.jwt: JwtVerifier | None = None
        if config.jwt_secret:
            # Here: pyjwt and cryptography take 0.1 s of each worker's start, JWT mode only.
            from svc.server.jwt_auth import JwtVerifier

            self.jwt = JwtVerifier.from_config(config.jwt_secret, names)
        self.webhook = (
            AuthWebhook(config.auth_hook, config.auth_hook_mode, names=names)
            if config.auth_hook
            else None
        )

    async def session(self, headers: dict[str, str]) -> Session:
        """The session for lower-cased request `headers`.

        Raises SvcError: 401 `access-denied` (missing or wrong admin secret), JWT and webhook
        errors from those modes.
        """
        session, _ = await self.session_until(headers)
        return session

    async def session_until(self, headers: dict[str, str]) -> tuple[Session, float | None]:
        """`(session(headers), expiry)`: the expiry (seconds since the epoch) is a verified
        JWT's `exp` claim, else None (admin secret, unauthorized role, no `exp`; the auth
        webhook's answer lifetime is not reported here). Raises as `session`. The websocket
        transport ends a connection at its expiry (`svc.server.ws_session`)."""
        names = self.names
        if not self.secrets:
            return header_session(headers, ADMIN_ROLE, names), None
        given = headers.get(names.admin_secret_header)
        if given is not None:
            if not self._secret_ok(given.encode()):
                raise SvcError(
                    ErrorCode.ACCESS_DENIED, f"invalid {names.admin_secret_header}", status=401
                )
            return header_session(headers, ADMIN_ROLE, names), None
        if self.jwt is not None:
            if self.jwt.has_token(headers) or not self.config.unauthorized_role:
                return await self.jwt.session_until(headers)
            return self._unauthorized(), None
        if self.webhook is not None:
            return await self.webhook.session(headers), None
        if self.config.unauthorized_role:
            return self._unauthorized(), None
        raise SvcError(
            ErrorCode.ACCESS_DENIED,
            f"{names.admin_secret_header} required, but not found",
            status=401,
        )

    def _secret_ok(self, given: bytes) -> bool:
        ok = False
        for secret in self.secrets:  # every secret is compared: timing does not tell which
            ok |= hmac.compare_digest(given, secret)
        return ok

    def _unauthorized(self) -> Session:
        role = self.config.unauthorized_role or "anonymous"
        return Session(role, self.names.role_session(role), anonymous=True)

    async def close(self) -> None:
        """Close the HTTP clients of the JWKS fetcher and the webhook."""
        if self.jwt is not None:
            await self.jwt.close()
        if self.webhook is not None:
            await self.webhook.close()
