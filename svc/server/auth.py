"""Who a request acts as: role and session variables from headers (spec section 5).

With an admin secret configured, a request must carry it (compared in constant time) unless
an unauthorized role is configured; without one, every request is admin unless `X-Svc-Role`
names another role.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from svc.config import Config
from svc.errors import SvcError


@dataclass(frozen=True, slots=True)
class Session:
    """The acting role and the `x-svc-*` session variables (lower-case names)."""

    role: str
    variables: dict[str, str]

    @property
    def is_admin(self) -> bool:
        """True for the `admin` role."""
        return self.role == "admin"


def authenticate(config: Config, headers: dict[str, str]) -> Session:
    """Resolve the session from lower-cased request headers.

    Raises 401 `access-denied` for a wrong or missing admin secret.
    """
    variables = {k: v for k, v in headers.items() if k.startswith("x-svc-")}
    variables.pop("x-svc-admin-secret", None)
    if config.admin_secrets:
        given = headers.get("x-svc-admin-secret")
        if given is None:
            if config.unauthorized_role:
                return Session(config.unauthorized_role, {"x-svc-role": config.unauthorized_role})
            raise SvcError(
                "access-denied",
                "x-svc-admin-secret/x-svc-access-key required, but not found",
                status=401,
            )
        if not any(hmac.compare_digest(given.encode(), s.encode()) for s in config.admin_secrets):
            raise SvcError(
                "access-denied", "invalid x-svc-admin-secret/x-svc-access-key", status=401
            )
    role = variables.get("x-svc-role", "admin")
    variables["x-svc-role"] = role
    return Session(role, variables)
