"""Request and response transforms of actions (`request_transform`/`response_transform`
`{version, template_engine: Kriti, body: {action: transform | remove, template}}`): the
body sent to the handler, and the handler's answer, rewritten by a Kriti template
(`svc.outbound.kriti`) with `$body` and `$session_variables`. Only `body` is read (the
reference's `url`, `method`, `query_params` and `request_headers` are not yet: README).
"""

from __future__ import annotations

from typing import Any

from svc.errors import ErrorCode, SvcError
from svc.outbound.kriti import KritiError, render

REMOVED = object()  # `body: {action: remove}`: the request has no body


def _apply(transform: Any, body: Any, session: dict[str, str], what: str) -> Any:
    spec = transform.get("body") if isinstance(transform, dict) else None
    if not isinstance(spec, dict):
        return body
    if spec.get("action") == "remove":
        return REMOVED
    template = spec.get("template")
    if spec.get("action") != "transform" or not isinstance(template, str):
        return body
    try:
        return render(template, {"$body": body, "$session_variables": session})
    except KritiError as exc:
        message = f"{what} transform failed: {exc}"
        raise SvcError(ErrorCode.UNEXPECTED, message, status=500) from None


def request_body(transform: Any, body: Any, session: dict[str, str]) -> Any:
    """The body to send (`REMOVED` for none); raises 500 `unexpected` when the template
    cannot be evaluated."""
    return _apply(transform, body, session, "request")


def response_body(transform: Any, value: Any, session: dict[str, str]) -> Any:
    """The handler's answer as the action sees it; raises 500 `unexpected` when the
    template cannot be evaluated."""
    out = _apply(transform, value, session, "response")
    return None if out is REMOVED else out
