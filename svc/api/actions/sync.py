"""One call of an action's handler through the shared outbound client (ARCHITECTURE.md
"Seams"), with the reference's request and error shapes (reference-notes-wave2 §4,
Hasura `Execute/Action.hs`).

Request: `POST <handler>` (`{{ENV}}` templates rendered now) with the body `{action:
{name}, input, session_variables, request_query}`; headers: the configured ones, then
`Content-Type: application/json` and `User-Agent: svc/<version>`, then (with
`forward_client_headers`) the client's headers; a name is sent once, the later source
winning as in the reference. A `request_transform` rewrites that request whole
(`svc.outbound.transform`: method, URL, query, headers, body; `$base_url` the rendered
handler URL); one that fails to evaluate is a 500-style `unexpected` "Request
Transformation Failed" whose `internal` is the error bundle. A `response_transform`
rewrites the answer's body before its status is read ("Response Transformation
Failed"). Waits up to the action's `timeout` (default 30 s).

Answers: 2xx → the JSON body; 4xx → `HandlerError` with the handler's `message`, its
`code` (else `unexpected`) and, when it gave `extensions`, those as the error's whole
`extensions` (the reference's `encodeGQLErr`: `ExtraExtensions v -> v`, "we ignore the
`code` key"); anything else, a body that is not
JSON, or no answer (timeout, refused) → 500-style `unexpected` errors whose `internal`
(`{error, request, response}`, admins only) shows what was sent and received.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.metadata.action_model import Action
from svc.outbound import (
    OutboundError,
    OutboundResponse,
    render_template,
    resolve_headers,
    shared_client,
    transform,
)
from svc.outbound.forwarded import pass_back
from svc.session_vars import is_session_variable
from svc.version import VERSION

# Client headers never forwarded (hop-by-hop, content negotiation, the engine's own).
NOT_FORWARDED = frozenset(
    {
        "content-length",
        "content-md5",
        "host",
        "origin",
        "referer",
        "accept",
        "accept-encoding",
        "accept-language",
        "accept-datetime",
        "cache-control",
        "connection",
        "dnt",
        "content-type",
        "transfer-encoding",
        "keep-alive",
        "upgrade",
        "user-agent",
    }
)


class HandlerError(SvcError):
    """A 4xx answer of a handler: the GraphQL error carries the handler's own code (any
    text, not only svc's `ErrorCode`s), or its `extensions` (any JSON) in their place."""

    def __init__(self, message: str, code: str, extensions: Any) -> None:
        super().__init__(ErrorCode.UNEXPECTED, message)
        self.handler_code = code
        self.extensions = extensions

    def to_graphql_error(self, *, admin: bool = True) -> dict[str, Any]:
        """`{message, extensions}`: the handler's `extensions` as given, else `{path,
        code}` (Hasura `encodeGQLErr`)."""
        if self.extensions is not None:
            return {"message": self.message, "extensions": self.extensions}
        return {
            "extensions": {"path": self.path, "code": self.handler_code},
            "message": self.message,
        }

    def to_json(self) -> dict[str, Any]:
        """The stored form of an asynchronous call's error (`{code, path, error}`)."""
        return {"code": self.handler_code, "path": self.path, "error": self.message}


@dataclass(frozen=True, slots=True)
class Call:
    """One request to a handler: the configured URL and headers, the reference's JSON
    body, and `sent`, the request after `request_transform` (None: not transformed;
    `context` is then the transform's context, the `$request` of a response
    transform)."""

    action: Action
    url: str
    headers: list[tuple[str, str]]
    body: dict[str, Any]
    sent: transform.Request | None = None
    context: transform.Context | None = None

    def request(self) -> transform.Request:
        """What is sent: the transformed request, else `POST <url>` with the JSON body."""
        if self.sent is not None:
            return self.sent
        content = msgspec.json.encode(self.body)
        return transform.Request("POST", self.url, tuple(self.headers), content)

    def internal(self, error: Any, response: Any = None) -> dict[str, Any]:
        """`extensions.internal` of a failed call (admins only)."""
        configured = [{"name": n, "value": v} for n, v in resolve_headers(self.headers_conf)]
        request = {
            "url": self.url,
            "body": self.body,
            "headers": configured,
            "transformed_request": None if self.sent is None else self._transformed(),
        }
        out: dict[str, Any] = {"error": error, "request": request}
        if response is not None:
            out["response"] = response
        return out

    def _transformed(self) -> dict[str, Any]:
        """The transformed request as the reference's `ToJSON HTTP.Request` shows it."""
        sent = self.sent
        assert sent is not None
        query = sent.url.partition("?")[2]
        timeout = self.action.definition.timeout_s
        return {
            "url": sent.url,
            "method": sent.method,
            "headers": [[k, v] for k, v in sent.headers],
            "body": None if sent.body is None else sent.body.decode("utf-8", "replace"),
            "query_string": "?" + query if query else "",
            "response_timeout": str(int(timeout * 1_000_000)),
        }

    @property
    def headers_conf(self) -> tuple[Any, ...]:
        """The action's configured headers."""
        return tuple(self.action.definition.headers or ())


def forwarded(client: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The client headers a handler gets with `forward_client_headers`: all but the
    hop-by-hop and content ones and `x-svc-*` (credentials and session variables: the
    session is in the body), plus `X-Forwarded-Host` and `X-Forwarded-User-Agent`."""
    out = [
        (n, v) for n, v in client if n.lower() not in NOT_FORWARDED and not is_session_variable(n)
    ]
    given = {n.lower(): v for n, v in client}
    if "host" in given:
        out.append(("X-Forwarded-Host", given["host"]))
    if "user-agent" in given:
        out.append(("X-Forwarded-User-Agent", given["user-agent"]))
    return out


def make_call(
    action: Action,
    input_: Any,
    session: dict[str, str],
    query: str | None,
    client: list[tuple[str, str]] | None = None,
) -> Call:
    """The request for `action` with arguments `input_`; raises 400 `unexpected` /
    `not-found` for a missing environment variable of the URL or a header."""
    d = action.definition
    sent: dict[str, tuple[str, str]] = {}
    for name, value in resolve_headers(d.headers or ()):
        sent[name.lower()] = (name, value)
    sent["content-type"] = ("Content-Type", "application/json")
    sent["user-agent"] = ("User-Agent", f"svc/{VERSION}")
    if d.forward_client_headers and client:
        for name, value in forwarded(client):
            sent[name.lower()] = (name, value)
    body = {
        "action": {"name": action.name},
        "input": input_,
        "session_variables": session,
        "request_query": query,
    }
    url = render_template(d.handler)
    call = Call(action, url, list(sent.values()), body)
    if not isinstance(d.request_transform, dict):
        return call
    rt = transform.parse_request_transform(d.request_transform)
    try:
        out, ctx = transform.transform_request(rt, call.request(), session, base_url=url)
    except transform.TransformError as exc:
        # Execute/Action.hs: throw500WithDetail "Request Transformation Failed" bundle
        raise SvcError(
            ErrorCode.UNEXPECTED, "Request Transformation Failed", internal=exc.errors
        ) from None
    return Call(action, url, call.headers, body, out, ctx)


def _headers(response: OutboundResponse) -> list[dict[str, str]]:
    # The client lower-cases names; the reference shows them as sent (`Content-Type`).
    def title(name: str) -> str:
        return "-".join(part.capitalize() for part in name.split("-"))

    return [{"name": title(k), "value": v} for k, v in response.headers]


def _response(response: OutboundResponse, body: Any) -> dict[str, Any]:
    return {"status": response.status, "body": body, "headers": _headers(response)}


def unexpected(call: Call, message: str, internal: Any) -> SvcError:
    """500-style `unexpected` error of a call, `internal` shown to admins."""
    return SvcError(ErrorCode.UNEXPECTED, message, internal=internal)


async def send(call: Call) -> tuple[Any, OutboundResponse]:
    """POST the call and decode the answer: `(JSON value, response)` for a 2xx answer;
    raises `HandlerError` (4xx) or `unexpected` errors (see the module's text)."""
    sent = call.request()
    try:
        response = await shared_client().request(
            sent.method,
            sent.url,
            headers=sent.headers,
            content=sent.body,
            timeout=call.action.definition.timeout_s,
            without=_removed(call),
        )
    except OutboundError as exc:
        detail = "Response timeout" if exc.kind == "timeout" else exc.detail
        internal = call.internal({"type": "http_exception", "message": detail})
        raise unexpected(call, "http exception when calling webhook", internal) from None
    d = call.action.definition
    if isinstance(d.response_transform, dict):
        # Execute/Action.hs: the answer's body is transformed before its status is read
        body = _transformed_answer(call, response)
        response = OutboundResponse(response.status, response.headers, body, response.elapsed)
    try:
        value = response.json()
    except (msgspec.DecodeError, UnicodeDecodeError):
        text = response.body[:1000].decode("utf-8", "replace")
        internal = call.internal("invalid json", _response(response, text))
        raise unexpected(call, "not a valid json response from webhook", internal) from None
    if 200 <= response.status < 300:
        for name, cookie in response.headers:
            if name == "set-cookie":  # the reference passes the handler's cookies on
                pass_back("Set-Cookie", cookie)
        return value, response
    if 400 <= response.status < 500:
        raise _handler_error(call, response, value)
    internal = call.internal("internal error", _response(response, value))
    raise unexpected(call, "internal error", internal)


def _removed(call: Call) -> tuple[str, ...]:
    """Headers the transform removed that the client would add itself (`User-Agent`)."""
    rules = call.action.definition.request_transform
    if call.sent is None or not isinstance(rules, dict):
        return ()
    headers = rules.get("request_headers")
    removed = headers.get("remove_headers") if isinstance(headers, dict) else None
    names = {str(h).lower() for h in removed or ()}
    return tuple(n for n in names if call.sent.header(n) is None)


def _transformed_answer(call: Call, response: OutboundResponse) -> bytes:
    """The handler's answer after `response_transform`, as JSON bytes; 500-style
    `unexpected` "Response Transformation Failed" (internal: the error bundle) when it
    cannot be evaluated."""
    rt = transform.parse_response_transform(call.action.definition.response_transform)
    session = call.body["session_variables"]
    try:
        value = transform.apply_response(rt, response.body, response.status, call.context, session)
    except transform.TransformError as exc:
        raise SvcError(
            ErrorCode.UNEXPECTED, "Response Transformation Failed", internal=exc.errors
        ) from None
    return msgspec.json.encode(value)


def _handler_error(call: Call, response: OutboundResponse, value: Any) -> SvcError:
    """The GraphQL error of a 4xx answer `{message, code?, extensions?}`."""
    if not isinstance(value, dict) or not isinstance(value.get("message"), str):
        internal = call.internal("unexpected response", _response(response, value))
        return unexpected(call, "unexpected response", internal)
    code = value.get("code")
    if code is not None and not isinstance(code, str):  # aeson refuses it: not the shape
        internal = call.internal("unexpected response", _response(response, value))
        return unexpected(call, "unexpected response", internal)
    return HandlerError(value["message"], code or "unexpected", value.get("extensions"))
