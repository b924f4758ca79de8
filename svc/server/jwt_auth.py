"""JWT mode: verify a bearer token (pyjwt) and turn its claims into a session.

`SVC_GRAPHQL_JWT_SECRET` is a JSON object shaped like Hasura v2's
`HASURA_GRAPHQL_JWT_SECRET` (Hasura `Hasura.Server.Auth.JWT`, `JWTConfig`):

- `type` + `key`: `HS256`/`HS384`/`HS512` with the shared secret (at least 32/48/64
  characters, as Hasura's `parseHmacKey`); `RS256`/`RS384`/`RS512`, `ES256`/`ES384`/`ES512`
  or `Ed25519` (pyjwt's `EdDSA`) with a PEM public key or an X.509 certificate PEM.
  Tokens must use exactly that algorithm (never `none`, never HS with a public key).
- `jwk_url` instead of `key`: a JWK set fetched (`svc.outbound`) and cached for the answer's
  `Cache-Control: max-age`/`s-maxage`, else its `Expires` (Hasura's `updateJwkRef`); an
  answer with neither is kept until a token names an unknown `kid`. A token whose `kid` is
  not in the set makes one more fetch, at most once per `refetch_interval` seconds (10).
  Each key allows only the algorithms of its own type (`alg` when the JWK names one):
  RSA → RS256/384/512, EC → the ES algorithm of its curve, OKP → EdDSA; `oct` keys are
  ignored, so a JWK set can never make HS verification with a public key possible.
- `claims_namespace` (default `https://svc.io/jwt/claims`; `https://hasura.io/jwt/claims`
  under the Hasura names switch, whose `x-hasura-*` names then replace every `x-svc-*`
  below: `svc.session_vars.Names`, fixed when the verifier is made) or `claims_namespace_path`
  (a JSON path such as `$.svc.claims`; `$` is the whole payload); `claims_format` `json`
  (default) or `stringified_json`; or `claims_map`, which replaces the namespace lookup.
- `audience` (string or list), `issuer`, `allowed_skew` (seconds of leeway for `exp`,
  `nbf`, `iat`; default 0), `header` (`{"type": "Authorization"}`, the default, or
  `{"type": "Cookie", "name": "<cookie>"}`).

Claims → session (Hasura's `processJwt_` and `parseHasuraClaims`): `x-svc-allowed-roles`
(a list of role names) and `x-svc-default-role` are required; the role is the request's
`X-Svc-Role` header when given, else the default role, and must be an allowed role. Every
other `x-svc-*` claim (names case-insensitive, stored lower-case) is a session variable:
strings as they are, lists as Postgres array literals (`{a,b}`), anything else as its JSON
text. Other request headers are not session variables in this mode.

Errors (all `SvcError`, status 400, path `$`; codes are Hasura's `Hasura.Base.Error`,
messages Hasura v2's, with `x-svc-` for `x-hasura-`):

- `invalid-headers`: "Missing 'Authorization' or 'Cookie' header in JWT authentication
  mode", "Malformed Authorization header", "Could not find <name> in Cookie header".
- `invalid-jwt`: "Could not verify JWT: <reason>", the reason named as Hasura's jose
  library names it: `JWTExpired`, `JWTNotYetValid` (nbf), `JWTIssuedAtFuture`,
  `JWTNotInAudience`, `JWTNotInIssuer`, `JWSError JWSInvalidSignature`,
  `JWSError AlgorithmNotImplemented` (an algorithm other than the configured one, `none`),
  `JWSError NoUsableKeys` (no key of the JWK set for the token's `kid`),
  `JWSError (CompactDecodeError …)` (not a JWT), `JWTClaimsSetDecodeError …`.
- `jwt-missing-role-claims`: "JWT claim does not contain x-svc-allowed-roles" (or
  `x-svc-default-role`).
- `jwt-invalid-claims`: "claims key: '<ns>' not found", "claims not found at
  claims_namespace_path: '<path>'", "expecting a json object when claims_format is json",
  "expecting a string when claims_format is stringified_json", "expecting stringified json
  at: '<where>', but found: <value>", "invalid x-svc-allowed-roles; should be a list of
  roles", "invalid x-svc-default-role; should be a single role name", "JWT claim from
  claims_map, <name> not found".
- `access-denied`: "Your requested role is not in allowed roles".

Deliberate difference from Hasura: when `audience` (`issuer`) is configured, a token
without an `aud` (`iss`) claim is rejected (`JWTNotInAudience`/`JWTNotInIssuer`); Hasura's
jose library lets it through.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from typing import Any

import jwt

from svc.errors import ErrorCode, SvcError
from svc.outbound import OutboundError, shared_client
from svc.server.jwt_config import (
    ClaimSource,
    Key,
    LiteralClaim,
    PathClaim,
    parse_config,
    parse_jwks,
)
from svc.server.session import Session, cache_lifetime, claims_session
from svc.session_vars import SVC_NAMES, Names, session_key

_log = logging.getLogger(__name__)

MISSING_HEADER = "Missing 'Authorization' or 'Cookie' header in JWT authentication mode"

_JWKS_TIMEOUT_SECONDS = 10.0
_JWKS_RETRY_SECONDS = 10.0  # after a failed fetch, keep the old set this long
_JWKS_MIN_CACHE_SECONDS = 1.0  # `max-age=0` must not mean one fetch per request


def _invalid_jwt(reason: str) -> SvcError:
    return SvcError(ErrorCode.INVALID_JWT, f"Could not verify JWT: {reason}")


def _invalid_claims(message: str) -> SvcError:
    return SvcError(ErrorCode.JWT_INVALID_CLAIMS, message)


def _invalid_headers(message: str) -> SvcError:
    return SvcError(ErrorCode.INVALID_HEADERS, message)


def _lookup(value: Any, keys: tuple[str, ...]) -> tuple[bool, Any]:
    """Follow `keys` into a JSON value: `(found, value)`; digits index into lists."""
    for key in keys:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.lstrip("-").isdigit():
            i = int(key)
            if not -len(value) <= i < len(value):
                return False, None
            value = value[i]
        else:
            return False, None
    return True, value


def parse_cookies(header: str) -> dict[str, str]:
    """`name=value; other=…` → dict (the first of a repeated name wins; quotes removed)."""
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if not sep or not name:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        out.setdefault(name.strip(), value)
    return out


def _error_for(exc: jwt.PyJWTError) -> SvcError:
    """The `invalid-jwt` error for a pyjwt failure, named as Hasura's jose errors."""
    if isinstance(exc, jwt.ExpiredSignatureError):
        return _invalid_jwt("JWTExpired")
    if isinstance(exc, jwt.ImmatureSignatureError):
        return _invalid_jwt("JWTIssuedAtFuture" if "(iat)" in str(exc) else "JWTNotYetValid")
    if isinstance(exc, jwt.InvalidAudienceError):
        return _invalid_jwt("JWTNotInAudience")
    if isinstance(exc, jwt.InvalidIssuerError):
        return _invalid_jwt("JWTNotInIssuer")
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return _invalid_jwt("JWTNotInAudience" if exc.claim == "aud" else "JWTNotInIssuer")
    if isinstance(exc, jwt.InvalidSignatureError):
        return _invalid_jwt("JWSError JWSInvalidSignature")
    if isinstance(exc, jwt.InvalidAlgorithmError | jwt.InvalidKeyError):
        return _invalid_jwt("JWSError AlgorithmNotImplemented")
    if isinstance(exc, jwt.DecodeError):
        return _invalid_jwt(f"JWSError (CompactDecodeError {exc})")
    return _invalid_jwt(f"JWTClaimsSetDecodeError {exc}")


class JwtVerifier:
    """Verifies tokens against `SVC_GRAPHQL_JWT_SECRET` (a JSON object, see the module doc).

    Build one with `from_config`; `session(headers)` answers the `Session` of a request.
    `refetch_interval` (seconds) limits the JWK set refetches caused by unknown `kid`s;
    `fetch_count` counts JWK set fetches (for monitoring and tests).
    """

    refetch_interval: float = 10.0

    def __init__(
        self,
        *,
        key: Any = None,
        algorithm: str | None = None,
        jwk_url: str | None = None,
        claims_namespace: str | None = None,
        claims_namespace_path: tuple[str, tuple[str, ...]] | None = None,
        claims_format: str = "json",
        claims_map: dict[str, ClaimSource] | None = None,
        audience: str | list[str] | None = None,
        issuer: str | None = None,
        leeway: float = 0.0,
        cookie_name: str | None = None,
        names: Names = SVC_NAMES,
    ) -> None:
        """Use `from_config`; the arguments are its parsed form (`names`: the server's
        session names; a `claims_namespace` of None is theirs)."""
        self._static = (
            Key(None, key, (algorithm,)) if key is not None and algorithm is not None else None
        )
        self.jwk_url = jwk_url
        self.names = names
        self.claims_namespace = (
            names.claims_namespace if claims_namespace is None else claims_namespace
        )
        self._role_claims = frozenset({names.allowed_roles_claim, names.default_role_claim})
        self.claims_namespace_path = claims_namespace_path
        self.claims_format = claims_format
        self.claims_map = claims_map
        self.audience = audience
        self.issuer = issuer
        self.leeway = leeway
        self.cookie_name = cookie_name
        self.fetch_count = 0
        self._jwks: list[Key] | None = None
        self._jwks_expires: float | None = None  # monotonic deadline; None: no expiry
        self._generation = 0
        self._last_kid_refetch = -math.inf
        self._lock = asyncio.Lock()

    # -- configuration ------------------------------------------------------------------
    @classmethod
    def from_config(cls, raw: str, names: Names = SVC_NAMES) -> JwtVerifier:
        """Parse the JSON configuration (Hasura's `JWTConfig` fields, see the module doc)
        for a server with session names `names` (`svc.session_vars`).

        Raises ValueError with a message naming the offending field when it is invalid
        (`svc.server.jwt_config.parse_config`).
        """
        return cls(**parse_config(raw, names))

    def config_record(self) -> dict[str, Any]:
        """`{"claims_namespace": …, "claims_format": …}` for the Config API (spec 2.12).

        Adds `claims_namespace_path` and `claims_map` when they are configured (as Hasura's
        `JWTInfo`); never the key.
        """
        record: dict[str, Any] = {
            "claims_namespace": self.claims_namespace,
            "claims_format": self.claims_format,
        }
        if self.claims_namespace_path is not None:
            record["claims_namespace_path"] = self.claims_namespace_path[0]
        if self.claims_map is not None:
            record["claims_map"] = {
                name: (
                    {"path": src.text, **({"default": src.default} if src.has_default else {})}
                    if isinstance(src, PathClaim)
                    else src.value
                )
                for name, src in self.claims_map.items()
            }
        return record

    # -- requests -----------------------------------------------------------------------
    def has_token(self, headers: dict[str, str]) -> bool:
        """Whether the request carries the configured header or cookie at all.

        Authorization mode: an `Authorization` header (any value). Cookie mode: a cookie of
        the configured name in the `Cookie` header.
        """
        if self.cookie_name is None:
            return "authorization" in headers
        return self.cookie_name in parse_cookies(headers.get("cookie", ""))

    def _token(self, headers: dict[str, str]) -> str:
        """The raw token from lower-cased `headers`; raises 400 `invalid-headers`."""
        if self.cookie_name is None:
            value = headers.get("authorization")
            if value is None:
                raise _invalid_headers(MISSING_HEADER)
            parts = value.split()
            if len(parts) != 2 or parts[0].lower() != "bearer":
                raise _invalid_headers("Malformed Authorization header")
            return parts[1]
        cookie = headers.get("cookie")
        if cookie is None:
            raise _invalid_headers(MISSING_HEADER)
        token = parse_cookies(cookie).get(self.cookie_name)
        if not token:
            raise _invalid_headers(f"Could not find {self.cookie_name} in Cookie header")
        return token

    async def session(self, headers: dict[str, str]) -> Session:
        """Verify the token in lower-cased `headers`; raises SvcError (`invalid-jwt`, …).

        Returns `Session(role, variables)`: the role is `X-Svc-Role` or the default role,
        `variables` the token's `x-svc-*` claims (lower-case names) plus `x-svc-role`.
        Raises 400 `invalid-headers` (no or malformed header), `invalid-jwt` (signature,
        algorithm, expiry, `nbf`, `aud`, `iss`), `jwt-missing-role-claims`,
        `jwt-invalid-claims`, `access-denied` (role not allowed): Hasura's `processJwt_`.
        """
        session, _ = await self.session_until(headers)
        return session

    async def session_until(self, headers: dict[str, str]) -> tuple[Session, float | None]:
        """`(session(headers), expiry)`: the expiry is the token's `exp` claim (seconds
        since the epoch), None when it has none. Raises as `session`.

        Hasura's `processJwt_` answers the same expiry with the user info; its websocket
        transport ends a connection at that time (`WebSocket.hs`, `tokenExpiryHandler`).
        """
        payload = await self.verify(self._token(headers))
        claims = self.claims(payload)
        allowed, default = _roles(claims, self.names)
        role = headers.get(self.names.role_variable) or default
        if role not in allowed:
            raise SvcError(ErrorCode.ACCESS_DENIED, "Your requested role is not in allowed roles")
        exp = payload.get("exp")  # pyjwt has checked it is a number when present
        expiry = float(exp) if isinstance(exp, int | float) else None
        return claims_session(claims, role, self._role_claims, self.names), expiry

    async def verify(self, token: str) -> dict[str, Any]:
        """The verified payload of `token`; raises 400 `invalid-jwt` (see module doc)."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise _error_for(exc) from None
        alg = header.get("alg")
        if self._static is not None:
            candidates = [self._static]
        else:
            kid = header.get("kid")
            if kid is not None and not isinstance(kid, str):
                raise _invalid_jwt("JWSError (CompactDecodeError kid must be a string)")
            candidates = await self._jwks_keys(kid)
            if not candidates:
                raise _invalid_jwt("JWSError NoUsableKeys")
            candidates = [k for k in candidates if alg in k.algorithms]
            if not candidates:
                raise _invalid_jwt("JWSError AlgorithmNotImplemented")
        failure: jwt.PyJWTError | None = None
        for candidate in candidates:
            try:
                payload: dict[str, Any] = jwt.decode(
                    token,
                    key=candidate.key,
                    algorithms=list(candidate.algorithms),
                    audience=self.audience,
                    issuer=self.issuer,
                    leeway=self.leeway,
                    options={"verify_aud": self.audience is not None},
                )
                return payload
            except jwt.InvalidSignatureError as exc:  # another key of the set may match
                failure = exc
            except jwt.PyJWTError as exc:
                raise _error_for(exc) from None
        assert failure is not None
        raise _error_for(failure) from None

    def claims(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The `x-svc-*` claims of a verified payload, names lower-cased.

        With `claims_map`: its entries (Hasura's `parseClaimsMap` `JCMap`). Otherwise the
        object at the namespace (decoded first when `stringified_json`), filtered to
        `x-svc-*` keys. Raises 400 `jwt-invalid-claims` / `jwt-missing-role-claims`.
        """
        if self.claims_map is not None:
            return self._mapped_claims(payload)
        if self.claims_namespace_path is not None:
            text, keys = self.claims_namespace_path
            found, value = _lookup(payload, keys)
            where = f"claims_namespace_path {text}"
            if not found:
                raise _invalid_claims(f"claims not found at claims_namespace_path: '{text}'")
        else:
            where = f"claims_namespace {self.claims_namespace}"
            if self.claims_namespace not in payload:
                raise _invalid_claims(f"claims key: '{self.claims_namespace}' not found")
            value = payload[self.claims_namespace]
        if self.claims_format == "stringified_json":
            if not isinstance(value, str):
                raise _invalid_claims("expecting a string when claims_format is stringified_json")
            try:
                decoded = json.loads(value)
            except json.JSONDecodeError:
                decoded = None
            if not isinstance(decoded, dict):
                raise _invalid_claims(
                    f"expecting stringified json at: '{where}', but found: {value}"
                )
            value = decoded
        elif not isinstance(value, dict):
            raise _invalid_claims("expecting a json object when claims_format is json")
        is_variable = self.names.is_session_variable
        return {session_key(str(k)): v for k, v in value.items() if is_variable(str(k))}

    def _mapped_claims(self, payload: dict[str, Any]) -> dict[str, Any]:
        assert self.claims_map is not None
        out: dict[str, Any] = {}
        for name, source in self.claims_map.items():
            if isinstance(source, LiteralClaim):
                out[name] = source.value
                continue
            found, value = _lookup(payload, source.keys)
            if found:
                out[name] = value
            elif source.has_default:
                out[name] = source.default
            elif name in self._role_claims:
                raise SvcError(
                    ErrorCode.JWT_MISSING_ROLE_CLAIMS, f"JWT claim does not contain {name}"
                )
            else:
                raise _invalid_claims(f"JWT claim from claims_map, {name} not found")
        return out

    # -- JWK set --------------------------------------------------------------------------
    async def _jwks_keys(self, kid: str | None) -> list[Key]:
        """Keys of the JWK set for `kid` (every key when the token names none)."""
        now = time.monotonic()
        before = self._generation
        if self._jwks is None or (self._jwks_expires is not None and now >= self._jwks_expires):
            await self._refresh(before)
        found = self._match(kid)
        fresh = self._generation != before  # this request already caused (or saw) a fetch
        if (
            not found
            and kid is not None
            and not fresh
            and now - self._last_kid_refetch >= self.refetch_interval
        ):
            self._last_kid_refetch = now
            await self._refresh(self._generation)
            found = self._match(kid)
        return found

    def _match(self, kid: str | None) -> list[Key]:
        keys = self._jwks or []
        return list(keys) if kid is None else [k for k in keys if k.kid == kid]

    async def _refresh(self, seen: int) -> None:
        """Fetch the JWK set unless another request did since generation `seen`."""
        async with self._lock:
            if self._generation != seen:
                return
            assert self.jwk_url is not None
            self.fetch_count += 1
            try:
                response = await shared_client().request(
                    "GET", self.jwk_url, timeout=_JWKS_TIMEOUT_SECONDS
                )
                if not 200 <= response.status < 300:
                    raise ValueError(f"Non-2xx response ({response.status})")
                keys = parse_jwks(response.json())
            except (OutboundError, ValueError) as exc:
                self._log(f"Error fetching JWK from {self.jwk_url}: {exc}")
                if self._jwks is None:
                    self._jwks = []
                self._jwks_expires = time.monotonic() + _JWKS_RETRY_SECONDS
            else:
                self._jwks = keys
                ttl = cache_lifetime(
                    response.header("cache-control"), response.header("expires"), time.time()
                )
                self._jwks_expires = (
                    None if ttl is None else time.monotonic() + max(ttl, _JWKS_MIN_CACHE_SECONDS)
                )
            self._generation += 1

    @staticmethod
    def _log(message: str) -> None:
        """One JSON line on stderr (Hasura logs `jwk-refresh-log`)."""
        line = {"type": "jwk-refresh-log", "level": "error", "message": message}
        _log.error(line)

    async def close(self) -> None:
        """Nothing to release: JWK sets are fetched through the process's outbound client
        (`svc.outbound`), closed at shutdown."""


def _roles(claims: dict[str, Any], names: Names) -> tuple[list[str], str]:
    """`(allowed roles, default role)` from lower-cased claims (Hasura `parseHasuraClaims`),
    the claims named by `names` (`x-svc-allowed-roles`, `x-svc-default-role`).

    Raises 400 `jwt-missing-role-claims` when either is absent, `jwt-invalid-claims` when
    the allowed roles are not a list of non-empty strings or the default role not a
    non-empty string.
    """
    allowed_claim, default_claim = names.allowed_roles_claim, names.default_role_claim
    for name in (allowed_claim, default_claim):
        if name not in claims:
            raise SvcError(ErrorCode.JWT_MISSING_ROLE_CLAIMS, f"JWT claim does not contain {name}")
    allowed = claims[allowed_claim]
    if not isinstance(allowed, list) or not all(isinstance(r, str) and r for r in allowed):
        raise _invalid_claims(f"invalid {allowed_claim}; should be a list of roles")
    default = claims[default_claim]
    if not isinstance(default, str) or not default:
        raise _invalid_claims(f"invalid {default_claim}; should be a single role name")
    return allowed, default
