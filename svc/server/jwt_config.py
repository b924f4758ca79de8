"""Parsing `SVC_GRAPHQL_JWT_SECRET` and JWK sets into verification keys and claim sources.

The fields and their rules are described in `svc.server.jwt_auth`'s module doc (Hasura
v2's `JWTConfig`); every invalid configuration raises ValueError naming the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from svc.errors import SvcError
from svc.json_path import parse_json_path
from svc.session_vars import SVC_NAMES, Names

_FIELDS = frozenset(
    {
        "type",
        "key",
        "jwk_url",
        "claims_namespace",
        "claims_namespace_path",
        "claims_format",
        "claims_map",
        "audience",
        "issuer",
        "allowed_skew",
        "header",
    }
)

# Minimum HMAC secret length per algorithm (Hasura's `parseHmacKey`: size / 8 characters).
_HMAC_MIN_LENGTH = {"HS256": 32, "HS384": 48, "HS512": 64}
_RSA_ALGORITHMS = ("RS256", "RS384", "RS512")
# Algorithm → the curve its keys must use.
_EC_CURVES: dict[str, type[ec.EllipticCurve]] = {
    "ES256": ec.SECP256R1,
    "ES384": ec.SECP384R1,
    "ES512": ec.SECP521R1,
}
_EC_BY_CRV = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
_TYPE_NAMES = {"Ed25519": "EdDSA", "EdDSA": "EdDSA"}


@dataclass(frozen=True, slots=True)
class PathClaim:
    """A `claims_map` entry read from the payload at `keys` (`text` is the path as given)."""

    text: str
    keys: tuple[str, ...]
    has_default: bool = False
    default: Any = None


@dataclass(frozen=True, slots=True)
class LiteralClaim:
    """A `claims_map` entry with a fixed value."""

    value: Any


ClaimSource = PathClaim | LiteralClaim


@dataclass(frozen=True, slots=True)
class Key:
    """One verification key and the algorithms a token may use with it."""

    kid: str | None
    key: Any
    algorithms: tuple[str, ...]


def _json_path(text: Any, what: str) -> tuple[str, ...]:
    """The keys of a JSON path from the configuration; ValueError when it is not one."""
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a JSON path string such as '$.a.b'")
    try:
        return parse_json_path(text)
    except SvcError as exc:
        raise ValueError(f"invalid JSON path in {what}: {text!r} ({exc.message})") from None


def _public_key(pem: str, algorithm: str) -> Any:
    """The public key of a PEM public key or X.509 certificate, checked against `algorithm`.

    Raises ValueError when the PEM cannot be read or holds a key of another type.
    """
    data = pem.encode()
    key: Any
    try:
        if b"-----BEGIN CERTIFICATE-----" in data:
            key = x509.load_pem_x509_certificate(data).public_key()
        else:
            key = load_pem_public_key(data)
    except ValueError as exc:
        raise ValueError(
            f"Invalid JWK: key must be a PEM public key or X.509 certificate ({exc})"
        ) from None
    if algorithm in _RSA_ALGORITHMS:
        ok = isinstance(key, rsa.RSAPublicKey)
    elif algorithm in _EC_CURVES:
        ok = isinstance(key, ec.EllipticCurvePublicKey) and isinstance(
            key.curve, _EC_CURVES[algorithm]
        )
    else:
        ok = isinstance(key, ed25519.Ed25519PublicKey)
    if not ok:
        raise ValueError(f"Invalid JWK: the key is not a {algorithm} public key")
    return key


def _jwk_key(data: Any) -> Key | None:
    """A verification key from one JWK of a set, or None when it cannot verify tokens.

    `oct` (HMAC) keys, encryption keys (`use: enc`) and unsupported types are skipped.
    """
    if not isinstance(data, dict) or data.get("use", "sig") != "sig":
        return None
    kty, crv, alg = data.get("kty"), data.get("crv"), data.get("alg")
    if kty == "RSA":
        family: tuple[str, ...] = _RSA_ALGORITHMS
    elif kty == "EC" and crv in _EC_BY_CRV:
        family = (_EC_BY_CRV[crv],)
    elif kty == "OKP" and crv == "Ed25519":
        family = ("EdDSA",)
    else:
        return None
    if alg is not None and alg not in family:
        return None
    algorithms = (alg,) if alg is not None else family
    try:
        key = jwt.PyJWK(data, algorithms[0]).key
    except jwt.PyJWTError:
        return None
    kid = data.get("kid")
    return Key(kid if isinstance(kid, str) else None, key, algorithms)


def parse_jwks(body: Any) -> list[Key]:
    """The usable keys of a JWK set document `{"keys": [...]}`; ValueError if not one."""
    if not isinstance(body, dict) or not isinstance(body.get("keys"), list):
        raise ValueError('a JWK set must be a JSON object with a "keys" list')
    return [k for k in (_jwk_key(d) for d in body["keys"]) if k is not None]


def _claim_source(name: str, raw: Any) -> ClaimSource:
    """One `claims_map` value: `{"path": …, "default": …}`, a `$…` path string, or a literal."""
    if isinstance(raw, dict):
        if "path" not in raw:
            raise ValueError(f'claims_map.{name}: an object needs a "path"')
        keys = _json_path(raw["path"], f"claims_map.{name}.path")
        return PathClaim(raw["path"], keys, "default" in raw, raw.get("default"))
    if isinstance(raw, str) and raw.startswith("$"):
        return PathClaim(raw, _json_path(raw, f"claims_map.{name}"))
    return LiteralClaim(raw)


def parse_config(raw: str, names: Names = SVC_NAMES) -> dict[str, Any]:
    """The keyword arguments of `JwtVerifier` from the JSON configuration `raw`, for a
    server with session names `names` (the default claims namespace and the claim names
    `claims_map` must use: `x-svc-*`, or `x-hasura-*` under the Hasura names switch).

    Raises ValueError with a message naming the offending field when it is invalid.
    """
    try:
        conf = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"SVC_GRAPHQL_JWT_SECRET is not valid JSON: {exc}") from None
    if not isinstance(conf, dict):
        raise ValueError("SVC_GRAPHQL_JWT_SECRET must be a JSON object")
    unknown = sorted(set(conf) - _FIELDS)
    if unknown:
        raise ValueError(f"SVC_GRAPHQL_JWT_SECRET: unknown field(s) {', '.join(unknown)}")
    return {
        **_key_config(conf),
        **_claims_config(conf, names),
        **_checks_config(conf),
        "cookie_name": _cookie_name(conf),
    }


def _checks_config(conf: dict[str, Any]) -> dict[str, Any]:
    """`audience`, `issuer` and `allowed_skew` (as `leeway` seconds)."""
    audience = conf.get("audience")
    if audience is not None and not (
        isinstance(audience, str)
        or (isinstance(audience, list) and audience and all(isinstance(a, str) for a in audience))
    ):
        raise ValueError("audience must be a string or a non-empty list of strings")
    issuer = conf.get("issuer")
    if issuer is not None and not isinstance(issuer, str):
        raise ValueError("issuer must be a string")
    skew = conf.get("allowed_skew", 0)
    if isinstance(skew, bool) or not isinstance(skew, int | float) or skew < 0:
        raise ValueError("allowed_skew must be a number of seconds, at least 0")
    return {"audience": audience, "issuer": issuer, "leeway": float(skew)}


def _cookie_name(conf: dict[str, Any]) -> str | None:
    """The cookie holding the token (`header: {"type": "Cookie", "name": …}`), None for
    the `Authorization` header."""
    header = conf.get("header", {"type": "Authorization"})
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise ValueError('header must be an object such as {"type": "Authorization"}')
    kind = header["type"].lower()
    if kind == "cookie":
        name = header.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError('header of type "Cookie" needs a "name"')
        return name
    if kind != "authorization":
        raise ValueError("header: expected 'type' is 'Authorization' or 'Cookie'")
    return None


def _key_config(conf: dict[str, Any]) -> dict[str, Any]:
    key, url = conf.get("key"), conf.get("jwk_url")
    if key is None and url is None:
        raise ValueError("key and jwk_url both cannot be empty")
    if key is not None and url is not None:
        raise ValueError("key, jwk_url both cannot be present")
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError("jwk_url must be an http(s) URL")
        return {"jwk_url": url}
    if not isinstance(key, str) or not key:
        raise ValueError("key must be a non-empty string")
    kind = conf.get("type")
    if not isinstance(kind, str):
        raise ValueError('"type" is required with "key" (e.g. "HS256", "RS256")')
    algorithm = _TYPE_NAMES.get(kind, kind)
    if algorithm in _HMAC_MIN_LENGTH:
        need = _HMAC_MIN_LENGTH[algorithm]
        if len(key) < need:
            raise ValueError(
                f"Invalid JWK: Key size too small; should be atleast {need} characters"
            )
        if "-----BEGIN" in key:
            raise ValueError(f"Invalid JWK: a {algorithm} secret cannot be a PEM key")
        return {"key": key, "algorithm": algorithm}
    if algorithm in _RSA_ALGORITHMS or algorithm in _EC_CURVES or algorithm == "EdDSA":
        return {"key": _public_key(key, algorithm), "algorithm": algorithm}
    raise ValueError(f"Invalid JWK: Key type: {kind} is not supported")


def _claims_config(conf: dict[str, Any], names: Names) -> dict[str, Any]:
    out: dict[str, Any] = {"names": names, "claims_namespace": names.claims_namespace}
    ns, ns_path = conf.get("claims_namespace"), conf.get("claims_namespace_path")
    if ns is not None and ns_path is not None:
        raise ValueError("claims_namespace and claims_namespace_path both cannot be set")
    if ns is not None:
        if not isinstance(ns, str):
            raise ValueError("claims_namespace must be a string")
        out["claims_namespace"] = ns
    if ns_path is not None:
        out["claims_namespace_path"] = (ns_path, _json_path(ns_path, "claims_namespace_path"))
    fmt = conf.get("claims_format", "json")
    if fmt not in ("json", "stringified_json"):
        raise ValueError("claims_format must be 'json' or 'stringified_json'")
    out["claims_format"] = fmt
    claims_map = conf.get("claims_map")
    if claims_map is not None:
        if not isinstance(claims_map, dict):
            raise ValueError("claims_map must be a JSON object")
        sources = {str(k).lower(): v for k, v in claims_map.items()}
        for required in (names.allowed_roles_claim, names.default_role_claim):
            if required not in sources:
                raise ValueError(f"claims_map: {required} is expected but not found")
        for name in sources:
            if not names.is_session_variable(name):
                raise ValueError(
                    f"claims_map: {name} is not an {names.prefix}* session variable "
                    f"(a server {names.switch} reads these)"
                )
        out["claims_map"] = {k: _claim_source(k, v) for k, v in sources.items()}
    return out
