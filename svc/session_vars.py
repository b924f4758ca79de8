"""Session variables: their names, the admin role and their encodings, for every layer.

A session is a role plus session variables: names starting with the process's prefix (any
case in metadata and on the wire, stored lower-case), string values. The prefix and every
name made from it (the role variable, the credential headers, the JWT role claims and
default claims namespace) are written here only, as a frozen `Names`: `SVC_NAMES`
(`x-svc-`, the default) or `HASURA_NAMES` (`x-hasura-`, the Hasura names compatibility
switch `--hasura-compat` / `SVC_GRAPHQL_HASURA_COMPAT`, read by `svc.config`). One
spelling per process, as the reference has one: under either, the other is not a session
variable (a request header of the other spelling is an ordinary header; metadata naming
one is refused, `svc.metadata.session_names`).

The process's `Names` are chosen once at start, before anything reads them: a server's
`App` (from its `Config`) and the `svc` command (`svc compile`, `svc metadata`) call
`use_names`; until then they are `SVC_NAMES`. The request path reads none of this per
request: the server's authentication holds its `Names` from construction. Other modules
ask `is_session_variable`/`session_key`/`process_names()` instead of comparing prefixes
themselves (`tests/test_role_view.py` finds prefix literals elsewhere).

Encodings, one each:
- a JSON value → the text of a variable (`session_text`, lists as `pg_array_literal`);
- variables → the JSON object Postgres reads as `svc.user` and handlers get as
  `session_variables` (`session_json`, `handler_session`);
- variables → the headers of a call to a remote schema (`session_headers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec

from svc.config import HASURA_COMPAT_ENV

#: The role that bypasses every permission (Hasura's `admin`), whatever the names.
ADMIN_ROLE = "admin"
#: The option that turns on Hasura's names (`svc serve`, `svc compile`, `svc metadata`), as
#: error hints name it with its variable (`svc.config.HASURA_COMPAT_ENV`).
HASURA_COMPAT_FLAG = "--hasura-compat"


@dataclass(frozen=True, slots=True)
class Names:
    """Every name made from one session-variable prefix (all lower-case).

    `prefix`: of every session variable and of the server's own request headers;
    `role_variable`: the variable (and request header) naming the acting role;
    `admin_secret_header`, `access_key_header`: credential headers, never session
    variables (Hasura `modifySessionVariables`); `backend_only_header`: the header an
    admin-secret (or unsecured) request sends to use `backend_only` permissions
    (Hasura's `useBackendOnlyPermissionsHeader`); `allowed_roles_claim`,
    `default_role_claim`: the JWT claims naming the roles a token may act as and its
    default one; `claims_namespace`: where a JWT's claims are when the JWT configuration
    names no `claims_namespace`(`_path`); `role_not_found`: Hasura v2's message when a
    session has no role (`mkUserInfo`); `spelling`: whose names these are and `switch`:
    how a process gets them (both for hints).
    """

    prefix: str
    claims_namespace: str
    spelling: str
    switch: str
    prefix_bytes: bytes
    role_variable: str
    admin_secret_header: str
    access_key_header: str
    credential_headers: frozenset[str]
    backend_only_header: str
    allowed_roles_claim: str
    default_role_claim: str
    role_not_found: str

    @classmethod
    def of(cls, prefix: str, claims_namespace: str, spelling: str, switch: str) -> Names:
        """The names made from `prefix` (lower-case, ending in `-`)."""
        role = prefix + "role"
        secret, key = prefix + "admin-secret", prefix + "access-key"
        return cls(
            prefix=prefix,
            claims_namespace=claims_namespace,
            spelling=spelling,
            switch=switch,
            prefix_bytes=prefix.encode(),
            role_variable=role,
            admin_secret_header=secret,
            access_key_header=key,
            credential_headers=frozenset({secret, key}),
            backend_only_header=prefix + "use-backend-only-permissions",
            allowed_roles_claim=prefix + "allowed-roles",
            default_role_claim=prefix + "default-role",
            role_not_found=f"{role} not found in session variables",
        )

    def is_session_variable(self, value: object) -> bool:
        """True for a string naming a session variable or a server header of these names
        (`X-Svc-User-Id`), whatever its case."""
        return isinstance(value, str) and value.lower().startswith(self.prefix)

    def role_session(self, role: str) -> dict[str, str]:
        """The variables of a session that has none but its role (`{x-svc-role: role}`)."""
        return {self.role_variable: role}


#: svc's own names (the default).
SVC_NAMES = Names.of(
    "x-svc-",
    "https://svc.io/jwt/claims",
    "svc's",
    f"without {HASURA_COMPAT_FLAG} ({HASURA_COMPAT_ENV} unset or false)",
)
#: Hasura's names (`--hasura-compat`): `X-Hasura-Role`, `https://hasura.io/jwt/claims`, ….
HASURA_NAMES = Names.of(
    "x-hasura-",
    "https://hasura.io/jwt/claims",
    "Hasura's",
    f"with {HASURA_COMPAT_FLAG} ({HASURA_COMPAT_ENV}=true)",
)


def names_for(hasura_compat: bool) -> Names:
    """`HASURA_NAMES` when the Hasura names compatibility switch is on, else `SVC_NAMES`."""
    return HASURA_NAMES if hasura_compat else SVC_NAMES


def other_names(names: Names) -> Names:
    """The spelling a process with `names` does not read (metadata naming it is refused)."""
    return SVC_NAMES if names is HASURA_NAMES else HASURA_NAMES


class _Process:
    """The names this process reads session variables with: set once at start by
    `use_names` (an `App`, the `svc` command), svc's own until then. A class attribute,
    not a `global`: process-wide by nature, like the reference's one prefix."""

    names: ClassVar[Names] = SVC_NAMES


def use_names(names: Names) -> None:
    """Make `names` this process's (at start, before any metadata is read or request
    served: nothing re-reads what was decided under the previous names)."""
    _Process.names = names


def process_names() -> Names:
    """This process's names (`use_names`; `SVC_NAMES` by default)."""
    return _Process.names


def is_admin(role: str) -> bool:
    """True for the role that bypasses every permission (`ADMIN_ROLE`)."""
    return role == ADMIN_ROLE


def is_session_variable(value: object) -> bool:
    """True for a string naming a session variable or server header of this process's
    names (`X-Svc-User-Id`, or `X-Hasura-User-Id` under the switch), whatever its case."""
    return isinstance(value, str) and value.lower().startswith(_Process.names.prefix)


def session_key(name: str) -> str:
    """The stored form of a session variable's name (lower-case)."""
    return name.lower()


def role_session(role: str) -> dict[str, str]:
    """The variables of a session that has none but its role (`{x-svc-role: role}`)."""
    return {_Process.names.role_variable: role}


def handler_session(variables: Mapping[str, str], role: str) -> dict[str, str]:
    """The variables an action handler gets: names normalised, the role added when the
    session lacks it."""
    out = {session_key(k): v for k, v in variables.items()}
    out.setdefault(_Process.names.role_variable, role)
    return out


# -- encodings ------------------------------------------------------------------------------
def _array_element(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, list):  # a nested array stays unquoted: `{{1,2},{3,4}}`
        return pg_array_literal(value)
    text = session_text(value)
    special = any(c in '{}",\\' or c.isspace() for c in text)
    if text and text.upper() != "NULL" and not special:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def pg_array_literal(values: list[Any]) -> str:
    """A Postgres array literal for a JSON list: `["a", "b c"]` → `{a,"b c"}`.

    Elements are quoted only when Postgres needs it (empty, `NULL`, whitespace or any of
    `{}",\\`); JSON null is `NULL`; nested lists nest.
    """
    return "{" + ",".join(_array_element(v) for v in values) + "}"


def session_text(value: Any) -> str:
    """The text of one session variable from a JSON value.

    Strings as they are, lists as Postgres array literals (`pg_array_literal`), numbers,
    booleans, null and objects as their compact JSON text (Hasura passes session values
    to Postgres as text).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return pg_array_literal(value)
    return msgspec.json.encode(value).decode()


def session_json(variables: Mapping[str, str]) -> str:
    """The JSON object text of `variables`, as `svc.user` holds it (Postgres reads it with
    `current_setting('svc.user')::json`, as event triggers' `session_variables`)."""
    return msgspec.json.encode(variables).decode()


def session_headers(variables: Mapping[str, str]) -> list[tuple[str, str]]:
    """The request headers a remote schema gets for a session: one per variable, named
    as the variable (Hasura forwards `x-hasura-*` the same way)."""
    return list(variables.items())
