"""Request transforms of event deliveries (Hasura `request_transform` version 2), the
subset svc supports: a body `template` that is one Kriti path expression
(`{{ $body.a.b }}`: the value at that path of the original body), `action: remove`
(no body), `request_headers.add_headers` / `remove_headers` (any header, the client's
`User-Agent` included).
`query_params` are appended to the URL by `svc.workers.events.webhook_url`. Any other
template leaves the body unchanged."""

from __future__ import annotations

import re
from typing import Any

_PATH = re.compile(r"^\s*\{\{\s*\$body((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}\s*$")


def _at(value: Any, path: str) -> Any:
    for key in [p for p in path.split(".") if p]:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def apply_transform(
    transform: Any, body: Any, headers: list[tuple[str, str]]
) -> tuple[Any, list[tuple[str, str]], tuple[str, ...]]:
    """`(body, headers, removed header names)` after `transform` (a stored
    `request_transform` object, or UNSET/None for none)."""
    removed: tuple[str, ...] = ()
    if not isinstance(transform, dict):
        return body, headers, removed
    spec = transform.get("body")
    if isinstance(spec, dict):
        if spec.get("action") == "remove":
            body = None
        elif spec.get("action") == "transform" and isinstance(spec.get("template"), str):
            match = _PATH.match(spec["template"])
            if match is not None:
                body = _at(body, match.group(1))
    rules = transform.get("request_headers")
    if isinstance(rules, dict):
        removed = tuple(str(h).lower() for h in rules.get("remove_headers") or ())
        headers = [(k, v) for k, v in headers if k.lower() not in removed]
        headers += [(str(k), str(v)) for k, v in (rules.get("add_headers") or {}).items()]
    return body, headers, removed
