"""The session a request acts as: role plus `x-svc-*` session variables (spec section 5)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Session:
    """The acting role and the session variables (lower-case `x-svc-*` names, string values).

    List values (array claims of a JWT, lists from an auth webhook) are Postgres array
    literals such as `{a,b}`, the form the reference's permission rules read them in.
    """

    role: str
    variables: dict[str, str]

    @property
    def is_admin(self) -> bool:
        """True for the `admin` role."""
        return self.role == "admin"
