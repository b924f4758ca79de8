"""Session variables: their names, the admin role and their encodings, for every layer.

A session is a role plus session variables: names starting with `PREFIX` (any case in
metadata and on the wire, stored lower-case), string values. The prefix is written here
only, so a later setting (Hasura's `x-hasura-`) changes one place; every module asks
`is_session_variable`/`session_key` instead of comparing prefixes itself
(`tests/test_role_view.py` finds prefix literals elsewhere).

Encodings, one each:
- a JSON value → the text of a variable (`session_text`, lists as `pg_array_literal`);
- variables → the JSON object Postgres reads as `svc.user` and handlers get as
  `session_variables` (`session_json`, `handler_session`);
- variables → the headers of a call to a remote schema (`session_headers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

#: The prefix of every session variable and of svc's own request headers.
PREFIX = "x-svc-"
#: `PREFIX` as the bytes of a raw (lower-case) header name.
PREFIX_BYTES = PREFIX.encode()
#: The variable (and request header) naming the acting role.
ROLE_VARIABLE = PREFIX + "role"
#: The role that bypasses every permission (Hasura's `admin`).
ADMIN_ROLE = "admin"
#: Request headers carrying credentials: never session variables (Hasura
#: `modifySessionVariables`).
ADMIN_SECRET_HEADER = PREFIX + "admin-secret"
ACCESS_KEY_HEADER = PREFIX + "access-key"
CREDENTIAL_HEADERS = frozenset({ADMIN_SECRET_HEADER, ACCESS_KEY_HEADER})
#: The JWT claims naming the roles a token may act as and its default one.
ALLOWED_ROLES_CLAIM = PREFIX + "allowed-roles"
DEFAULT_ROLE_CLAIM = PREFIX + "default-role"
#: Hasura v2's message when a session has no role (`mkUserInfo`).
ROLE_NOT_FOUND = f"{ROLE_VARIABLE} not found in session variables"


def is_admin(role: str) -> bool:
    """True for the role that bypasses every permission (`ADMIN_ROLE`)."""
    return role == ADMIN_ROLE


def is_session_variable(value: object) -> bool:
    """True for a string naming a session variable or svc header (`X-Svc-User-Id`),
    whatever its case."""
    return isinstance(value, str) and value.lower().startswith(PREFIX)


def session_key(name: str) -> str:
    """The stored form of a session variable's name (lower-case)."""
    return name.lower()


def role_session(role: str) -> dict[str, str]:
    """The variables of a session that has none but its role (`{x-svc-role: role}`)."""
    return {ROLE_VARIABLE: role}


def handler_session(variables: Mapping[str, str], role: str) -> dict[str, str]:
    """The variables an action handler gets: names normalised, the role added when the
    session lacks it."""
    out = {session_key(k): v for k, v in variables.items()}
    out.setdefault(ROLE_VARIABLE, role)
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
