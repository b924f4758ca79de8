"""Label values of `/v1/metrics` (`svc.server.metrics`), read from a request without
parsing it: the endpoint, the GraphQL operation type and the error code answered."""

from __future__ import annotations

import re

ENDPOINTS = frozenset(
    {
        "/",
        "/console",
        "/healthz",
        "/v1/graphql",
        "/v1alpha1/graphql",
        "/v1beta1/relay",
        "/v1/graphql/explain",
        "/v1/query",
        "/v2/query",
        "/v1/metadata",
        "/v1/version",
        "/v1alpha1/config",
        "/v1alpha1/pg_dump",
        "/v1/metrics",
    }
)
GRAPHQL_ENDPOINTS = ("/v1/graphql", "/v1alpha1/graphql", "/v1beta1/relay")
_ERROR_CODE = re.compile(rb'"code"\s*:\s*"([A-Za-z0-9_-]{1,64})"')
_FIRST_WORD = re.compile(r"[A-Za-z_{]\w*|\{")
_ANY_OPERATION = re.compile(r"\b(mutation|subscription)\b")
_PLAIN_START = re.compile(
    rb'[ \t\r\n]*:[ \t\r\n]*"[ ,]*(\{|query|mutation|subscription)(?![A-Za-z0-9_])'
)


def endpoint_label(path: str) -> str:
    """The `endpoint` label of a request path: a known route, `/api/rest` for every
    RESTified endpoint, `/console` for its assets, else `other` (bounded label values)."""
    path = path.rstrip("/") or "/"
    if path in ENDPOINTS:
        return path
    if path.startswith("/api/rest/"):
        return "/api/rest"
    if path.startswith("/console/"):
        return "/console"
    return "other"


def operation_type(body: bytes) -> str:
    """The operation type of a GraphQL request body, read from the start of its `query`
    text without parsing it: `batch` (a JSON array), `mutation`, `subscription`, else
    `query` (also for a body that is not a GraphQL request: the label only). A document
    that starts with a fragment counts as the first operation keyword found in it."""
    if body.lstrip()[:1] == b"[":
        return "batch"
    at = body.find(b'"query"')
    if at < 0:
        return "query"
    quick = _PLAIN_START.match(body, at + 7)
    if quick is not None:  # the usual document: no comment, escape or fragment first
        word = quick.group(1)
        return word.decode() if word in (b"mutation", b"subscription") else "query"
    text = body[at + 7 : at + 7 + 2048].decode("utf-8", "replace")
    text = text.lstrip(" \t\r\n:").lstrip('"')
    text = text.replace("\\n", "\n").replace("\\r", "\n").replace("\\t", " ")
    while True:  # skip blanks, commas and `#` comments before the first word
        text = text.lstrip(" \n,\ufeff")
        if not text.startswith("#"):
            break
        text = text.partition("\n")[2]
    found = _FIRST_WORD.match(text)
    word = found.group(0) if found else ""
    if word in ("mutation", "subscription"):
        return word
    if word == "fragment":
        other = _ANY_OPERATION.search(text)
        return other.group(1) if other else "query"
    return "query"


def error_code(payload: bytes) -> str | None:
    """The first error code of a GraphQL answer that starts with `{"errors"` (answered
    with HTTP 200), else None."""
    if not payload.startswith(b'{"errors"'):
        return None
    found = _ERROR_CODE.search(payload, 0, 4096)
    return found.group(1).decode() if found else "unknown"
