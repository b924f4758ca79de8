"""The session a request acts as, and the one encoding of its values (spec section 5).

A session is a role plus `x-svc-*` session variables (lower-case names, string values;
`x-hasura-*` under the Hasura names compatibility switch: each function takes the server's
`svc.session_vars.Names`, fixed when the `Authenticator` was made, so no request looks the
spelling up). Each source of session values has one function here, so admin headers, JWT
claims and auth-webhook answers encode values the same way
(`svc.session_vars.session_text`):

- `header_session`: the `x-svc-*` request headers of an admin (or unsecured) request;
- `claims_session`: the `x-svc-*` claims of a verified JWT (Hasura's `parseHasuraClaims`);
- `hook_session`: the 200 JSON body of the auth webhook (Hasura's `mkUserInfoFromResp`);
- `cache_lifetime`: how long an HTTP answer (JWK set, webhook answer) may be reused.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from svc.errors import ErrorCode, SvcError
from svc.session_vars import Names, is_admin, session_key, session_text


@dataclass(frozen=True, slots=True)
class Session:
    """The acting role and the session variables (lower-case `x-svc-*` names, string values).

    List values (array claims of a JWT, lists from an auth webhook) are Postgres array
    literals such as `{a,b}`, the form the reference's permission rules read them in.
    `backend_only`: the request may use `backend_only` insert, update and delete
    permissions (Hasura's `BackendOnlyFieldAccess`: only an admin-secret or unsecured
    request saying so, `header_session`).
    """

    role: str
    variables: dict[str, str]
    backend_only: bool = False
    anonymous: bool = False  # the unauthorized role's: no credentials (its own connections)

    @property
    def is_admin(self) -> bool:
        """True for the `admin` role."""
        return is_admin(self.role)


# -- sources --------------------------------------------------------------------------------
def header_session(headers: Mapping[str, str], default_role: str, names: Names) -> Session:
    """The session of an admin (or unsecured) request from lower-cased `headers`.

    Every header of `names`' prefix (`x-svc-*`) but the admin secret is a variable; the
    role is `names.role_variable` (`x-svc-role`), else `default_role`. The session may
    use `backend_only` permissions when `names.backend_only_header` is a true value
    (Hasura `mkUserInfo`'s `getBackendOnlyFieldAccess` for `UAdminSecretSent` and
    `UAuthNotSet`); raises 400 `bad-request` for a value that is not a boolean text.
    """
    prefix, role_variable = names.prefix, names.role_variable
    variables = {k: v for k, v in headers.items() if k.startswith(prefix)}
    variables.pop(names.admin_secret_header, None)
    role = variables.get(role_variable, default_role)
    variables[role_variable] = role
    flag = variables.get(names.backend_only_header)
    backend_only = flag is not None and _boolean_text(names.backend_only_header, flag)
    return Session(role, variables, backend_only)


_TRUE_TEXTS = ("true", "t", "yes", "y")
_FALSE_TEXTS = ("false", "f", "no", "n")


def _boolean_text(header: str, value: str) -> bool:
    """Hasura's `parseStringAsBool` (case-insensitive); raises 400 `bad-request` naming
    `header` with the reference's message otherwise."""
    lowered = value.lower()
    if lowered in _TRUE_TEXTS or lowered in _FALSE_TEXTS:
        return lowered in _TRUE_TEXTS
    shown = ",".join(f'"{t}"' for t in _TRUE_TEXTS)
    shown_false = ",".join(f'"{t}"' for t in _FALSE_TEXTS)
    raise SvcError(
        ErrorCode.BAD_REQUEST,
        f"{header}:  Not a valid boolean text. True values are [{shown}] and  False values"
        f" are [{shown_false}]. All values are case insensitive",
        status=400,
    )


def claims_session(
    claims: Mapping[str, Any], role: str, skip: frozenset[str], names: Names
) -> Session:
    """The session of a verified JWT acting as `role` (already checked against its claims).

    `claims`: lower-cased `x-svc-*` claims; those named in `skip` (the role claims) are
    not variables; every other is, encoded by `session_text` (JSON null → `null`).
    """
    variables = {name: session_text(v) for name, v in claims.items() if name not in skip}
    variables[names.role_variable] = role
    return Session(role, variables)


def hook_session(body: Mapping[str, Any], names: Names) -> Session:
    """The session of an auth webhook's 200 JSON object `body` (spec 5).

    Keys of `names`' prefix (`x-svc-*`, lower-cased) are variables, encoded by
    `session_text`; other keys, null values and the credentials (`x-svc-admin-secret`,
    `x-svc-access-key`) are dropped. Raises 400 `invalid-params` "x-svc-role not found in
    session variables" when the role is missing or blank (Hasura v2 `mkUserInfo
    URBFromSessionVariables`).
    """
    variables: dict[str, str] = {}
    for key, value in body.items():
        name = session_key(key)
        if (
            name.startswith(names.prefix)
            and name not in names.credential_headers
            and value is not None
        ):
            variables[name] = session_text(value)
    role = variables.get(names.role_variable, "")
    if not role.strip():
        raise SvcError(ErrorCode.INVALID_PARAMS, names.role_not_found, status=400)
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
