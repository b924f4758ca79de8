"""JWT mode (`svc/server/jwt_auth.py`): real keys, real tokens, a real JWK set server and
real svc servers; no mocks.

Most rules are checked against `JwtVerifier` directly (fast); one server per key type checks
that a token reaches the permission filter end to end, with the admin secret still working.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from svc.errors import SvcError
from svc.server.jwt_auth import (
    MISSING_HEADER,
    JwtVerifier,
    parse_cookies,
)
from svc.server.session import Session, cache_lifetime
from svc.session_vars import pg_array_literal
from tests.support import ServerProcess, create_database

NS = "https://svc.io/jwt/claims"
ADMIN_SECRET = "jwt-tests-admin-secret"
ADMIN = {"X-Svc-Admin-Secret": ADMIN_SECRET}
HS_SECRET = "a shared secret that is longer than 32 characters"
AUDIENCE = "svc-tests"
ISSUER = "https://issuer.test"

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
RSA_OTHER = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
EC_384 = ec.generate_private_key(ec.SECP384R1())
ED_KEY = ed25519.Ed25519PrivateKey.generate()

Key = Any


# -- keys and tokens --------------------------------------------------------------------
def public_pem(key: Key) -> str:
    """The PEM SubjectPublicKeyInfo of a private key's public half."""
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def certificate_pem(key: rsa.RSAPrivateKey) -> str:
    """A self-signed X.509 certificate for `key`, PEM."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "svc-jwt-test")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def svc_claims(
    user: str = "1", roles: list[str] | None = None, default: str = "user"
) -> dict[str, Any]:
    """The `x-svc-*` claims of a user."""
    return {
        "x-svc-allowed-roles": ["user"] if roles is None else roles,
        "x-svc-default-role": default,
        "x-svc-user-id": user,
    }


def payload(claims: Any = None, *, ns: str | None = NS, **registered: Any) -> dict[str, Any]:
    """A token payload: `claims` under `ns` (unless None), `exp` in 5 minutes by default."""
    body: dict[str, Any] = {"sub": "someone", "exp": int(time.time()) + 300}
    if ns is not None:
        body[ns] = svc_claims() if claims is None else claims
    body.update(registered)
    return {k: v for k, v in body.items() if v is not None}


def sign(body: dict[str, Any], key: Key, alg: str, **header: Any) -> str:
    """A token signed by pyjwt."""
    return jwt.encode(body, key, algorithm=alg, headers=header or None)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(body: dict[str, Any], alg: str, secret: bytes | None) -> str:
    """A token built by hand, as an attacker would: `alg` `none` (no signature), or HS256
    with `secret` (pyjwt refuses to sign with a PEM key as HMAC secret, an attacker does
    not)."""
    head = b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    signing_input = f"{head}.{b64(json.dumps(body).encode())}"
    if secret is None:
        return signing_input + "."
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(mac)}"


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def verifier(**conf: Any) -> JwtVerifier:
    return JwtVerifier.from_config(json.dumps(conf))


async def fails(v: JwtVerifier, headers: dict[str, str], code: str, message: str) -> None:
    """`v.session(headers)` raises 400 `code` with exactly `message`."""
    with pytest.raises(SvcError) as info:
        await v.session(headers)
    assert (info.value.status, info.value.code, info.value.message) == (400, code, message)


def jwk(key: Key, kid: str) -> dict[str, Any]:
    """The public JWK of a private key, with `kid`."""
    public = key.public_key()
    if isinstance(public, rsa.RSAPublicKey):
        data = RSAAlgorithm.to_jwk(public, as_dict=True)
    elif isinstance(public, ec.EllipticCurvePublicKey):
        data = ECAlgorithm.to_jwk(public, as_dict=True)
    else:
        data = OKPAlgorithm.to_jwk(public, as_dict=True)
    return {**data, "kid": kid}


class JwksServer:
    """A real HTTP server answering `GET /jwks` with `self.keys` and `self.cache_control`."""

    def __init__(self, keys: list[dict[str, Any]], cache_control: str = "max-age=300") -> None:
        self.keys = keys
        self.cache_control = cache_control
        self.status = 200
        self.hits = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.hits += 1
                body = json.dumps({"keys": owner.keys}).encode()
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if owner.cache_control:
                    self.send_header("Cache-Control", owner.cache_control)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/jwks"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def jwks() -> Iterator[JwksServer]:
    server = JwksServer([jwk(RSA_KEY, "k1")])
    try:
        yield server
    finally:
        server.close()


# -- the bad-token corpus ---------------------------------------------------------------
STRICT = {
    "type": "RS256",
    "key": public_pem(RSA_KEY),
    "audience": [AUDIENCE, "another"],
    "issuer": ISSUER,
    "allowed_skew": 30,
}


def good(**changes: Any) -> dict[str, Any]:
    """A payload the STRICT verifier accepts, with `changes` (None removes a claim)."""
    body = payload(aud=AUDIENCE, iss=ISSUER)
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def rs(body: dict[str, Any]) -> dict[str, str]:
    return bearer(sign(body, RSA_KEY, "RS256"))


def verify_error(reason: str) -> tuple[str, str]:
    return "invalid-jwt", f"Could not verify JWT: {reason}"


def now() -> int:
    return int(time.time())


def tampered(token: str) -> str:
    """`token` with its payload replaced (same header and signature)."""
    head, _, signature = token.split(".")
    return f"{head}.{b64(json.dumps(good(sub='admin')).encode())}.{signature}"


CORPUS: list[tuple[str, Callable[[], dict[str, str]], tuple[str, str]]] = [
    (
        "alg none",
        lambda: bearer(forged(good(), "none", None)),
        verify_error("JWSError AlgorithmNotImplemented"),
    ),
    (
        "wrong key",
        lambda: bearer(sign(good(), RSA_OTHER, "RS256")),
        verify_error("JWSError JWSInvalidSignature"),
    ),
    (
        "HS256 signed with the RSA public key PEM",
        lambda: bearer(forged(good(), "HS256", public_pem(RSA_KEY).encode())),
        verify_error("JWSError AlgorithmNotImplemented"),
    ),
    (
        "another RSA algorithm",
        lambda: bearer(sign(good(), RSA_KEY, "RS512")),
        verify_error("JWSError AlgorithmNotImplemented"),
    ),
    (
        "tampered payload",
        lambda: bearer(tampered(sign(good(), RSA_KEY, "RS256"))),
        verify_error("JWSError JWSInvalidSignature"),
    ),
    ("expired past allowed_skew", lambda: rs(good(exp=now() - 120)), verify_error("JWTExpired")),
    ("nbf in the future", lambda: rs(good(nbf=now() + 120)), verify_error("JWTNotYetValid")),
    ("iat in the future", lambda: rs(good(iat=now() + 120)), verify_error("JWTIssuedAtFuture")),
    ("wrong aud", lambda: rs(good(aud="someone-else")), verify_error("JWTNotInAudience")),
    ("no aud", lambda: rs(good(aud=None)), verify_error("JWTNotInAudience")),
    ("wrong iss", lambda: rs(good(iss="https://evil.test")), verify_error("JWTNotInIssuer")),
    ("no iss", lambda: rs(good(iss=None)), verify_error("JWTNotInIssuer")),
    (
        "not a JWT",
        lambda: bearer("not-a-token"),
        verify_error("JWSError (CompactDecodeError Not enough segments)"),
    ),
    ("no header", lambda: {}, ("invalid-headers", MISSING_HEADER)),
    (
        "not Bearer",
        lambda: {"authorization": "Basic dXNlcjpwYXNz"},
        ("invalid-headers", "Malformed Authorization header"),
    ),
    (
        "Bearer without token",
        lambda: {"authorization": "Bearer"},
        ("invalid-headers", "Malformed Authorization header"),
    ),
    (
        "Bearer with two tokens",
        lambda: {"authorization": "Bearer a b"},
        ("invalid-headers", "Malformed Authorization header"),
    ),
    (
        "no claims namespace",
        lambda: rs(good(**{NS: None})),
        ("jwt-invalid-claims", f"claims key: '{NS}' not found"),
    ),
    (
        "claims namespace not an object",
        lambda: rs(good(**{NS: "x"})),
        ("jwt-invalid-claims", "expecting a json object when claims_format is json"),
    ),
    (
        "no allowed roles",
        lambda: rs(good(**{NS: {"x-svc-default-role": "user"}})),
        ("jwt-missing-role-claims", "JWT claim does not contain x-svc-allowed-roles"),
    ),
    (
        "no default role",
        lambda: rs(good(**{NS: {"x-svc-allowed-roles": ["user"]}})),
        ("jwt-missing-role-claims", "JWT claim does not contain x-svc-default-role"),
    ),
    (
        "allowed roles not a list",
        lambda: rs(good(**{NS: {"x-svc-allowed-roles": "user", "x-svc-default-role": "user"}})),
        ("jwt-invalid-claims", "invalid x-svc-allowed-roles; should be a list of roles"),
    ),
    (
        "default role not a string",
        lambda: rs(good(**{NS: {"x-svc-allowed-roles": ["user"], "x-svc-default-role": 1}})),
        ("jwt-invalid-claims", "invalid x-svc-default-role; should be a single role name"),
    ),
    (
        "default role not allowed",
        lambda: rs(good(**{NS: svc_claims(roles=["editor"], default="user")})),
        ("access-denied", "Your requested role is not in allowed roles"),
    ),
    (
        "requested role not allowed",
        lambda: {**rs(good()), "x-svc-role": "admin"},
        ("access-denied", "Your requested role is not in allowed roles"),
    ),
]


@pytest.mark.parametrize(("make", "expected"), [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS])
async def test_bad_tokens_are_rejected(
    make: Callable[[], dict[str, str]], expected: tuple[str, str]
) -> None:
    await fails(verifier(**STRICT), make(), *expected)


async def test_expiry_within_allowed_skew_is_accepted() -> None:
    v = verifier(**STRICT)
    session = await v.session(rs(good(exp=now() - 10, nbf=now() + 10, iat=now() + 10)))
    assert session.role == "user"
    await fails(
        verifier(**{**STRICT, "allowed_skew": 0}),
        rs(good(exp=now() - 10)),
        *(verify_error("JWTExpired")),
    )


async def test_session_from_claims() -> None:
    """Role from the header or the default; `x-svc-*` claims only, names lower-cased, values
    as text; request headers other than X-Svc-Role are not session variables."""
    v = verifier(**STRICT)
    claims = {
        "X-Svc-Allowed-Roles": ["user", "editor"],
        "X-SVC-Default-Role": "user",
        "X-Svc-User-Id": "42",
        "x-svc-org-ids": [1, 2, "a b"],
        "x-svc-age": 7,
        "x-svc-is-owner": True,
        "x-svc-meta": {"a": 1},
        "not-a-session-variable": "x",
    }
    headers = {**rs(good(**{NS: claims})), "x-svc-user-id": "1", "x-svc-extra": "y"}
    assert await v.session(headers) == Session(
        "user",
        {
            "x-svc-role": "user",
            "x-svc-user-id": "42",
            "x-svc-org-ids": '{1,2,"a b"}',
            "x-svc-age": "7",
            "x-svc-is-owner": "true",
            "x-svc-meta": '{"a":1}',
        },
    )
    editor = await v.session({**headers, "x-svc-role": "editor"})
    assert (editor.role, editor.variables["x-svc-role"]) == ("editor", "editor")


async def test_hmac_and_other_key_types() -> None:
    hs = verifier(type="HS512", key="k" * 64)
    assert (await hs.session(bearer(sign(payload(), "k" * 64, "HS512")))).role == "user"
    await fails(
        hs,
        bearer(sign(payload(), "k" * 64, "HS256")),
        *verify_error("JWSError AlgorithmNotImplemented"),
    )
    await fails(
        hs,
        bearer(sign(payload(), "j" * 64, "HS512")),
        *verify_error("JWSError JWSInvalidSignature"),
    )
    cert = verifier(type="RS384", key=certificate_pem(RSA_KEY))
    assert (await cert.session(bearer(sign(payload(), RSA_KEY, "RS384")))).role == "user"
    es = verifier(type="ES256", key=public_pem(EC_KEY))
    assert (await es.session(bearer(sign(payload(), EC_KEY, "ES256")))).role == "user"
    ed = verifier(type="Ed25519", key=public_pem(ED_KEY))
    assert (await ed.session(bearer(sign(payload(), ED_KEY, "EdDSA")))).role == "user"
    # An RS256 server does not take an ES256 token, nor an HS256 one signed with its PEM.
    await fails(
        verifier(**STRICT),
        bearer(sign(good(), EC_KEY, "ES256")),
        *verify_error("JWSError AlgorithmNotImplemented"),
    )


# -- claims location and format ---------------------------------------------------------
async def test_claims_namespace_path() -> None:
    nested = verifier(type="HS256", key=HS_SECRET, claims_namespace_path="$.svc.claims")
    body = payload(ns=None, svc={"claims": svc_claims("9")})
    session = await nested.session(bearer(sign(body, HS_SECRET, "HS256")))
    assert session.variables["x-svc-user-id"] == "9"
    await fails(
        nested,
        bearer(sign(payload(), HS_SECRET, "HS256")),
        "jwt-invalid-claims",
        "claims not found at claims_namespace_path: '$.svc.claims'",
    )
    whole = verifier(type="HS256", key=HS_SECRET, claims_namespace_path="$")
    body = {**payload(ns=None), **svc_claims("5")}
    assert (await whole.session(bearer(sign(body, HS_SECRET, "HS256")))).variables[
        "x-svc-user-id"
    ] == "5"
    custom = verifier(type="HS256", key=HS_SECRET, claims_namespace="claims")
    body = payload(ns="claims", claims=svc_claims("6"))
    assert (await custom.session(bearer(sign(body, HS_SECRET, "HS256")))).variables[
        "x-svc-user-id"
    ] == "6"


async def test_stringified_json_claims() -> None:
    v = verifier(type="HS256", key=HS_SECRET, claims_format="stringified_json")
    body = payload(claims=json.dumps(svc_claims("3")))
    assert (await v.session(bearer(sign(body, HS_SECRET, "HS256")))).variables[
        "x-svc-user-id"
    ] == "3"
    await fails(
        v,
        bearer(sign(payload(), HS_SECRET, "HS256")),
        "jwt-invalid-claims",
        "expecting a string when claims_format is stringified_json",
    )
    await fails(
        v,
        bearer(sign(payload(claims="{nope"), HS_SECRET, "HS256")),
        "jwt-invalid-claims",
        f"expecting stringified json at: 'claims_namespace {NS}', but found: {{nope",
    )


async def test_claims_map() -> None:
    v = verifier(
        type="HS256",
        key=HS_SECRET,
        claims_map={
            "x-svc-allowed-roles": {"path": "$.user.roles"},
            "x-svc-default-role": {"path": "$.user.role", "default": "user"},
            "X-Svc-User-Id": "$.user.id",
            "x-svc-team": {"path": "$.user.teams[1]", "default": "none"},
            "x-svc-source": "static",
            "x-svc-groups": {"path": "$.groups"},
        },
    )
    body = payload(ns=None, user={"id": 11, "roles": ["user", "x"], "teams": ["a", "b"]})
    body["groups"] = ["g1", "g2"]
    session = await v.session(bearer(sign(body, HS_SECRET, "HS256")))
    assert session == Session(
        "user",
        {
            "x-svc-role": "user",
            "x-svc-user-id": "11",
            "x-svc-team": "b",
            "x-svc-source": "static",
            "x-svc-groups": "{g1,g2}",
        },
    )
    no_team = payload(ns=None, user={"id": 1, "roles": ["user"]}, groups=[])
    session = await v.session(bearer(sign(no_team, HS_SECRET, "HS256")))
    assert (session.variables["x-svc-team"], session.variables["x-svc-groups"]) == ("none", "{}")
    await fails(
        v,
        bearer(sign(payload(ns=None, user={"roles": ["user"]}, groups=[]), HS_SECRET, "HS256")),
        "jwt-invalid-claims",
        "JWT claim from claims_map, x-svc-user-id not found",
    )
    await fails(
        v,
        bearer(sign(payload(ns=None, user={"id": 1}, groups=[]), HS_SECRET, "HS256")),
        "jwt-missing-role-claims",
        "JWT claim does not contain x-svc-allowed-roles",
    )
    assert v.config_record()["claims_map"]["x-svc-default-role"] == {
        "path": "$.user.role",
        "default": "user",
    }


async def test_cookie_header() -> None:
    v = verifier(type="HS256", key=HS_SECRET, header={"type": "Cookie", "name": "svc_token"})
    token = sign(payload(), HS_SECRET, "HS256")
    headers = {"cookie": f'theme=dark; svc_token="{token}"; other=1'}
    assert v.has_token(headers)
    assert (await v.session(headers)).role == "user"
    assert not v.has_token({"cookie": "theme=dark"})
    assert not v.has_token(bearer(token))  # the Authorization header is not read
    await fails(
        v,
        {"cookie": "theme=dark"},
        "invalid-headers",
        "Could not find svc_token in Cookie header",
    )
    await fails(v, bearer(token), "invalid-headers", MISSING_HEADER)


# -- JWK sets ---------------------------------------------------------------------------
async def test_jwks_is_cached_and_rotation_is_picked_up(jwks: JwksServer) -> None:
    v = verifier(jwk_url=jwks.url)
    assert not v.has_token({}) and v.has_token(bearer("x"))
    for _ in range(3):
        await v.session(bearer(sign(payload(), RSA_KEY, "RS256", kid="k1")))
    assert (jwks.hits, v.fetch_count) == (1, 1)  # Cache-Control: max-age=300

    jwks.keys = [jwk(RSA_OTHER, "k2"), jwk(EC_KEY, "k3")]  # rotation
    session = await v.session(
        bearer(sign(payload(claims=svc_claims("2")), RSA_OTHER, "RS256", kid="k2"))
    )
    assert session.variables["x-svc-user-id"] == "2"
    assert jwks.hits == 2  # the unknown kid caused one refetch
    assert (await v.session(bearer(sign(payload(), EC_KEY, "ES256", kid="k3")))).role == "user"
    # The old key is gone after the rotation.
    await fails(
        v,
        bearer(sign(payload(), RSA_KEY, "RS256", kid="k1")),
        *verify_error("JWSError NoUsableKeys"),
    )
    assert jwks.hits == 2  # unknown-kid refetches are rate-limited (10 s)

    v.refetch_interval = 0
    await fails(
        v,
        bearer(sign(payload(), RSA_KEY, "RS256", kid="k9")),
        *verify_error("JWSError NoUsableKeys"),
    )
    assert jwks.hits == 3  # refetched once, still unknown: rejected


async def test_jwks_expiry_refetches(jwks: JwksServer) -> None:
    jwks.cache_control = "public, max-age=1"
    v = verifier(jwk_url=jwks.url)
    token = sign(payload(), RSA_KEY, "RS256", kid="k1")
    await v.session(bearer(token))
    await v.session(bearer(token))
    assert jwks.hits == 1
    time.sleep(1.1)
    await v.session(bearer(token))
    assert jwks.hits == 2


async def test_jwks_algorithms_are_those_of_the_keys(jwks: JwksServer) -> None:
    """No HS with a public key, no `oct` keys from a JWK set, no `none`."""
    jwks.keys = [
        jwk(RSA_KEY, "rsa"),
        jwk(EC_KEY, "ec"),
        {"kty": "oct", "k": b64(HS_SECRET.encode()), "kid": "hmac"},
    ]
    v = verifier(jwk_url=jwks.url)
    body = payload()
    pem = public_pem(RSA_KEY).encode()
    head = {"alg": "HS256", "typ": "JWT", "kid": "rsa"}
    signing_input = f"{b64(json.dumps(head).encode())}.{b64(json.dumps(body).encode())}"
    confused = signing_input + "." + b64(hmac.new(pem, signing_input.encode(), "sha256").digest())
    await fails(v, bearer(confused), *verify_error("JWSError AlgorithmNotImplemented"))
    await fails(
        v,
        bearer(sign(body, HS_SECRET, "HS256", kid="hmac")),
        *verify_error("JWSError NoUsableKeys"),
    )
    await fails(
        v,
        bearer(sign(body, RSA_KEY, "RS512", kid="ec")),
        *verify_error("JWSError AlgorithmNotImplemented"),
    )
    await fails(
        v, bearer(forged(body, "none", None)), *verify_error("JWSError AlgorithmNotImplemented")
    )
    # Without a kid every key of the set is tried.
    assert (await v.session(bearer(sign(body, EC_KEY, "ES256")))).role == "user"
    assert (await v.session(bearer(sign(body, RSA_KEY, "RS384", kid="rsa")))).role == "user"


async def test_jwks_unreachable_rejects_tokens(jwks: JwksServer) -> None:
    jwks.status = 500
    v = verifier(jwk_url=jwks.url)
    await fails(
        v,
        bearer(sign(payload(), RSA_KEY, "RS256", kid="k1")),
        *verify_error("JWSError NoUsableKeys"),
    )


def test_cache_lifetime() -> None:
    now = time.time()
    assert cache_lifetime("public, max-age=120", None, now) == 120
    assert cache_lifetime("s-maxage=30", None, now) == 30
    assert cache_lifetime("no-store", None, now) == 0
    at = datetime(2030, 1, 1, tzinfo=UTC)
    assert cache_lifetime(None, format_datetime(at, usegmt=True), at.timestamp() - 60) == 60
    assert cache_lifetime(None, "not a date", now) is None
    assert cache_lifetime(None, None, now) is None


def test_helpers() -> None:
    assert pg_array_literal(["a", "b"]) == "{a,b}"
    assert pg_array_literal(["", "NULL", 'q"', "c,d", None, [1, True]]) == (
        '{"","NULL","q\\"","c,d",NULL,{1,true}}'
    )
    assert parse_cookies('a=1; b="two"; a=3; junk') == {"a": "1", "b": "two"}


# -- configuration ----------------------------------------------------------------------
BAD_CONFIGS: list[tuple[str, str]] = [
    ("not json", "is not valid JSON"),
    ("[1]", "must be a JSON object"),
    ("{}", "key and jwk_url both cannot be empty"),
    (json.dumps({"type": "HS256", "key": HS_SECRET, "jwk_url": "http://x"}), "both cannot be"),
    (json.dumps({"key": HS_SECRET}), '"type" is required'),
    (json.dumps({"type": "HS256", "key": "short"}), "should be atleast 32 characters"),
    (json.dumps({"type": "HS512", "key": "k" * 40}), "should be atleast 64 characters"),
    (json.dumps({"type": "PS256", "key": public_pem(RSA_KEY)}), "PS256 is not supported"),
    (json.dumps({"type": "none", "key": HS_SECRET}), "none is not supported"),
    (json.dumps({"type": "RS256", "key": HS_SECRET}), "PEM public key or X.509"),
    (json.dumps({"type": "ES256", "key": public_pem(RSA_KEY)}), "not a ES256 public key"),
    (json.dumps({"type": "ES256", "key": public_pem(EC_384)}), "not a ES256 public key"),
    (json.dumps({"type": "RS256", "key": public_pem(ED_KEY)}), "not a RS256 public key"),
    (json.dumps({"type": "HS256", "key": public_pem(RSA_KEY)}), "cannot be a PEM key"),
    (json.dumps({"jwk_url": "ftp://x"}), "http(s) URL"),
    (
        json.dumps({"type": "HS256", "key": HS_SECRET, "claims_format": "yaml"}),
        "claims_format",
    ),
    (
        json.dumps(
            {
                "type": "HS256",
                "key": HS_SECRET,
                "claims_namespace": "a",
                "claims_namespace_path": "$",
            }
        ),
        "both cannot be set",
    ),
    (
        json.dumps({"type": "HS256", "key": HS_SECRET, "claims_namespace_path": "$.a["}),
        "invalid JSON path in claims_namespace_path",
    ),
    (
        json.dumps(
            {"type": "HS256", "key": HS_SECRET, "claims_map": {"x-svc-default-role": "user"}}
        ),
        "x-svc-allowed-roles is expected but not found",
    ),
    (json.dumps({"type": "HS256", "key": HS_SECRET, "audience": 5}), "audience"),
    (json.dumps({"type": "HS256", "key": HS_SECRET, "issuer": ["a"]}), "issuer"),
    (json.dumps({"type": "HS256", "key": HS_SECRET, "allowed_skew": -1}), "allowed_skew"),
    (json.dumps({"type": "HS256", "key": HS_SECRET, "header": {"type": "X"}}), "'Cookie'"),
    (json.dumps({"type": "HS256", "key": HS_SECRET, "header": {"type": "Cookie"}}), '"name"'),
    (json.dumps({"type": "HS256", "key": HS_SECRET, "claims_namespce": "a"}), "unknown field"),
]


# ids by position: some keys are generated at import, and every pytest-xdist worker must
# collect the same ids
@pytest.mark.parametrize(
    ("raw", "message"), BAD_CONFIGS, ids=[f"bad{i}" for i in range(len(BAD_CONFIGS))]
)
def test_invalid_configuration_is_a_value_error(raw: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        JwtVerifier.from_config(raw)
    assert message in str(info.value)


def test_config_record() -> None:
    assert verifier(type="HS256", key=HS_SECRET).config_record() == {
        "claims_namespace": NS,
        "claims_format": "json",
    }
    record = verifier(
        type="HS256",
        key=HS_SECRET,
        claims_namespace_path="$.a",
        claims_format="stringified_json",
    ).config_record()
    assert record == {
        "claims_namespace": NS,
        "claims_format": "stringified_json",
        "claims_namespace_path": "$.a",
    }


# -- end to end -------------------------------------------------------------------------
SETUP_SQL = """
create table item (id int primary key, user_id int not null, name text);
insert into item values (1, 1, 'one'), (2, 2, 'two'), (3, 1, 'three');
"""
QUERY = "{ item(order_by: {id: asc}) { id name } }"


def start(pg_url: str, conf: dict[str, Any], *args: str) -> ServerProcess:
    """A server in JWT mode over a new database with `item` tracked; role `user` sees its
    own rows (`X-Svc-User-Id`), role `anonymous` sees row 2."""
    srv = ServerProcess(
        create_database(pg_url),
        "--admin-secret",
        ADMIN_SECRET,
        *args,
        env={"SVC_GRAPHQL_JWT_SECRET": json.dumps(conf)},
    )
    steps = [
        {"type": "run_sql", "args": {"sql": SETUP_SQL}},
        {"type": "track_table", "args": {"schema": "public", "name": "item"}},
        {
            "type": "create_select_permission",
            "args": {
                "table": "item",
                "role": "user",
                "permission": {"columns": ["id", "name"], "filter": {"user_id": "X-Svc-User-Id"}},
            },
        },
        {
            "type": "create_select_permission",
            "args": {
                "table": "item",
                "role": "anonymous",
                "permission": {"columns": ["id"], "filter": {"id": {"_eq": 2}}},
            },
        },
    ]
    r = srv.query({"type": "bulk", "args": steps}, headers=ADMIN)
    assert r.status_code == 200, r.text
    return srv


@pytest.fixture(scope="module")
def e2e_jwks() -> Iterator[JwksServer]:
    server = JwksServer([jwk(RSA_KEY, "rsa"), jwk(EC_KEY, "ec"), jwk(ED_KEY, "ed")])
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def servers(pg_url: str, e2e_jwks: JwksServer) -> Iterator[dict[str, ServerProcess]]:
    """Three servers: a static HS256 secret; a static Ed25519 key with the token in a
    cookie, a `claims_map` and an unauthorized role; a JWK set with RSA, EC and Ed25519 keys.
    (RS256 certificates, ES256, `claims_namespace_path` and `stringified_json` are covered
    against `JwtVerifier` above: each server costs seconds of start-up.)"""
    started: dict[str, ServerProcess] = {}
    configs: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
        "HS256": ({"type": "HS256", "key": HS_SECRET, "allowed_skew": 5}, ()),
        "Ed25519": (
            {
                "type": "Ed25519",
                "key": public_pem(ED_KEY),
                "header": {"type": "Cookie", "name": "svc_token"},
                "claims_map": {
                    "x-svc-allowed-roles": {"path": "$.roles"},
                    "x-svc-default-role": {"path": "$.role", "default": "user"},
                    "x-svc-user-id": "$.uid",
                },
            },
            ("--unauthorized-role", "anonymous"),
        ),
        "jwks": ({"jwk_url": e2e_jwks.url}, ()),
    }
    try:
        # Started side by side: each start waits on its own process.
        with ThreadPoolExecutor(len(configs)) as pool:
            futures = {n: pool.submit(start, pg_url, c, *a) for n, (c, a) in configs.items()}
            wait(futures.values())
        for name, future in futures.items():
            if future.exception() is None:
                started[name] = future.result()
        for future in futures.values():
            future.result()  # raises the first failure, after every server is recorded
        yield started
    finally:
        for srv in started.values():
            srv.stop()


JWKS_KEYS = {"rsa": (RSA_KEY, "RS256"), "ec": (EC_KEY, "ES256"), "ed": (ED_KEY, "EdDSA")}


def token_headers(
    family: str, user: str, roles: list[str] | None = None, kid: str = "rsa"
) -> dict[str, str]:
    """Request headers carrying a valid token for `user` on the `family` server (`kid`: the
    key of the JWK set server's set)."""
    claims = svc_claims(user, roles)
    if family == "HS256":
        return bearer(sign(payload(claims), HS_SECRET, "HS256"))
    if family == "Ed25519":
        body = payload(ns=None, uid=user, roles=claims["x-svc-allowed-roles"])
        return {"Cookie": f"theme=dark; svc_token={sign(body, ED_KEY, 'EdDSA')}"}
    key, alg = JWKS_KEYS[kid]
    return bearer(sign(payload(claims), key, alg, kid=kid))


FAMILIES = ["HS256", "Ed25519", "jwks"]  # jwks: RS256 (and ES256, EdDSA below)


@pytest.mark.parametrize("family", FAMILIES)
def test_tokens_reach_the_permission_filter(servers: dict[str, ServerProcess], family: str) -> None:
    srv = servers[family]
    assert srv.graphql(QUERY, headers=token_headers(family, "1")) == {
        "data": {"item": [{"id": 1, "name": "one"}, {"id": 3, "name": "three"}]}
    }
    assert srv.graphql(QUERY, headers=token_headers(family, "2")) == {
        "data": {"item": [{"id": 2, "name": "two"}]}
    }
    # The admin secret works alongside JWT mode, and may act as any role.
    everything = srv.graphql(QUERY, headers=ADMIN)["data"]["item"]
    assert [row["id"] for row in everything] == [1, 2, 3]
    as_user = srv.graphql(QUERY, headers={**ADMIN, "X-Svc-Role": "user", "X-Svc-User-Id": "2"})
    assert as_user == {"data": {"item": [{"id": 2, "name": "two"}]}}
    # A token's own role is not admin.
    r = srv.query({"type": "export_metadata", "args": {}}, headers=token_headers(family, "1"))
    assert (r.status_code, r.json()["code"]) == (400, "access-denied")


@pytest.mark.parametrize("kid", sorted(JWKS_KEYS))
def test_jwks_server_takes_every_key_of_its_set(
    servers: dict[str, ServerProcess], kid: str
) -> None:
    srv = servers["jwks"]
    assert srv.graphql(QUERY, headers=token_headers("jwks", "2", kid=kid)) == {
        "data": {"item": [{"id": 2, "name": "two"}]}
    }


def test_token_with_admin_role_is_admin(servers: dict[str, ServerProcess]) -> None:
    srv = servers["HS256"]
    headers = {**token_headers("HS256", "1", ["user", "admin"]), "X-Svc-Role": "admin"}
    assert srv.query({"type": "export_metadata", "args": {}}, headers=headers).status_code == 200
    assert len(srv.graphql(QUERY, headers=headers)["data"]["item"]) == 3


def test_bad_tokens_end_to_end(servers: dict[str, ServerProcess]) -> None:
    """GraphQL answers errors with HTTP 200 and `extensions.code`; `/v1/query` with 400."""
    srv = servers["HS256"]
    expired = payload(exp=now() - 60)
    cases: list[tuple[dict[str, str], str, str]] = [
        ({}, "invalid-headers", MISSING_HEADER),
        ({"Authorization": "Token abc"}, "invalid-headers", "Malformed Authorization header"),
        (
            bearer(sign(expired, HS_SECRET, "HS256")),
            "invalid-jwt",
            "Could not verify JWT: JWTExpired",
        ),
        (
            bearer(sign(payload(), "another secret of more than 32 chars!", "HS256")),
            "invalid-jwt",
            "Could not verify JWT: JWSError JWSInvalidSignature",
        ),
        (
            bearer(forged(payload(), "none", None)),
            "invalid-jwt",
            "Could not verify JWT: JWSError AlgorithmNotImplemented",
        ),
        (
            bearer(sign(payload(), RSA_KEY, "RS256")),
            "invalid-jwt",
            "Could not verify JWT: JWSError AlgorithmNotImplemented",
        ),
        (
            bearer(sign(payload(ns=None), HS_SECRET, "HS256")),
            "jwt-invalid-claims",
            f"claims key: '{NS}' not found",
        ),
        (
            {**token_headers("HS256", "1"), "X-Svc-Role": "admin"},
            "access-denied",
            "Your requested role is not in allowed roles",
        ),
    ]
    for headers, code, message in cases:
        r = srv.client.post("/v1/graphql", json={"query": QUERY}, headers=headers)
        assert r.status_code == 200
        assert r.json() == {
            "errors": [{"extensions": {"path": "$", "code": code}, "message": message}]
        }
        r = srv.query({"type": "export_metadata", "args": {}}, headers=headers)
        assert (r.status_code, r.json()["code"], r.json()["error"]) == (400, code, message)


def test_unauthorized_role_without_token(servers: dict[str, ServerProcess]) -> None:
    """With `--unauthorized-role`, a request without the cookie is that role; a request with
    a bad cookie is still rejected."""
    srv = servers["Ed25519"]
    assert srv.graphql(QUERY.replace("id name", "id"), headers={"Cookie": "theme=dark"}) == {
        "data": {"item": [{"id": 2}]}
    }
    bad = srv.graphql(QUERY, headers={"Cookie": "svc_token=garbage"})
    assert bad["errors"][0]["extensions"]["code"] == "invalid-jwt"


def test_config_api_reports_jwt(servers: dict[str, ServerProcess]) -> None:
    r = servers["Ed25519"].client.get("/v1alpha1/config", headers=ADMIN)
    assert r.status_code == 200
    assert (r.json()["is_jwt_set"], r.json()["jwt"]) == (
        True,
        {
            "claims_namespace": NS,
            "claims_format": "json",
            "claims_map": {
                "x-svc-allowed-roles": {"path": "$.roles"},
                "x-svc-default-role": {"path": "$.role", "default": "user"},
                "x-svc-user-id": {"path": "$.uid"},
            },
        },
    )
