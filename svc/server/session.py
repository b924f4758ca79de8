"""The session a request acts as, and the one encoding of its values (spec section 5).

A session is a role plus `x-svc-*` session variables (lower-case names, string values).
Each source of session values has one function here, so admin headers, JWT claims and
auth-webhook answers encode values the same way:

- `header_session`: the `x-svc-*` request headers of an admin (or unsecured) request;
- `claims_session`: the `x-svc-*` claims of a verified JWT (Hasura's `parseHasuraClaims`);
- `hook_session`: the 200 JSON body of the auth webhook (Hasura's `mkUserInfoFromResp`);
- `session_text`: one JSON value → the text of a session variable;
- `cache_lifetime`: how long an HTTP answer (JWK set, webhook answer) may be reused.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError

ROLE = "x-svc-role"
PREFIX = "x-svc-"
ROLE_NOT_FOUND = "x-svc-role not found in session variables"
# Never session variables, whatever a client or hook sends (Hasura `modifySessionVariables`).
_CREDENTIALS = frozenset({"x-svc-admin-secret", "x-svc-access-key"})


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


# -- values ---------------------------------------------------------------------------------
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


# -- sources --------------------------------------------------------------------------------
def header_session(headers: Mapping[str, str], default_role: str) -> Session:
    """The session of an admin (or unsecured) request from lower-cased `headers`.

    Every `x-svc-*` header but the admin secret is a variable; the role is `x-svc-role`,
    else `default_role`.
    """
    variables = {k: v for k, v in headers.items() if k.startswith(PREFIX)}
    variables.pop("x-svc-admin-secret", None)
    role = variables.get(ROLE, default_role)
    variables[ROLE] = role
    return Session(role, variables)


def claims_session(claims: Mapping[str, Any], role: str, skip: frozenset[str]) -> Session:
    """The session of a verified JWT acting as `role` (already checked against its claims).

    `claims`: lower-cased `x-svc-*` claims; those named in `skip` (the role claims) are
    not variables; every other is, encoded by `session_text` (JSON null → `null`).
    """
    variables = {name: session_text(v) for name, v in claims.items() if name not in skip}
    variables[ROLE] = role
    return Session(role, variables)


def hook_session(body: Mapping[str, Any]) -> Session:
    """The session of an auth webhook's 200 JSON object `body` (spec 5).

    `x-svc-*` keys (lower-cased) are variables, encoded by `session_text`; other keys,
    null values and the credentials (`x-svc-admin-secret`, `x-svc-access-key`) are dropped.
    Raises 400 `invalid-params` "x-svc-role not found in session variables" when the role
    is missing or blank (Hasura v2 `mkUserInfo URBFromSessionVariables`).
    """
    variables: dict[str, str] = {}
    for key, value in body.items():
        name = key.lower()
        if name.startswith(PREFIX) and name not in _CREDENTIALS and value is not None:
            variables[name] = session_text(value)
    role = variables.get(ROLE, "")
    if not role.strip():
        raise SvcError(ErrorCode.INVALID_PARAMS, ROLE_NOT_FOUND, status=400)
    return Session(role, variables)


# -- HTTP cache lifetimes -------------------------------------------------------------------
_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}
_EXPIRES = re.compile(
    r"\s*(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{1,2}) ([A-Z][a-z]{2}) (\d{4}) "
    r"(\d{2}):(\d{2}):(\d{2}) GMT\s*"
)
_DIRECTIVE = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*("[^"]*"|[^,\s]*))?\s*')


def parse_max_age(value: str) -> float | None:
    """Seconds of freshness a `Cache-Control` value grants: `max-age=<s>` or `s-maxage=<s>`.

    Returns None when there is none or it does not parse (the caller then looks at
    `Expires`, as Hasura's `timeFromCacheControl <|> timeFromExpires` does), 0.0 when
    `no-store` or `no-cache` forbid reuse. Directive names are case-insensitive (RFC 9111).
    """
    age: float | None = None
    for part in value.split(","):
        match = _DIRECTIVE.fullmatch(part)
        if match is None:
            continue
        name, arg = match.group(1).lower(), (match.group(2) or "").strip('"')
        if name in ("no-store", "no-cache"):
            return 0.0
        if name in ("max-age", "s-maxage") and age is None and arg.isascii() and arg.isdigit():
            age = float(arg)
    return age


def parse_expires(value: str) -> float | None:
    """The POSIX time (seconds) of an `Expires` value in `%a, %d %b %Y %T GMT`, else None.

    Parsed without the locale (`Thu, 01 Jan 2037 00:00:00 GMT`), as Hasura's
    `parseExpirationTime` does with `defaultTimeLocale`.
    """
    match = _EXPIRES.fullmatch(value)
    if match is None or match.group(2) not in _MONTHS:
        return None
    day, month, year, hour, minute, second = match.groups()
    try:
        at = datetime(
            int(year), _MONTHS[month], int(day), int(hour), int(minute), int(second), tzinfo=UTC
        )
    except ValueError:
        return None
    return at.timestamp()


def cache_lifetime(cache_control: str | None, expires: str | None, now: float) -> float | None:
    """Seconds (never negative) from `now` (POSIX) that an HTTP answer may be reused.

    `Cache-Control` first (`parse_max_age`), else `Expires` (`parse_expires`); None when
    neither says (Hasura's `timeFromCacheControl <|> timeFromExpires`, used for JWK sets
    and webhook answers alike).
    """
    if cache_control is not None:
        age = parse_max_age(cache_control)
        if age is not None:
            return age
    if expires is not None:
        at = parse_expires(expires)
        if at is not None:
            return max(0.0, at - now)
    return None
