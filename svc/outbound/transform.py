"""Webhook request and response transforms (`request_transform` / `response_transform`
of actions, event triggers, cron triggers and one-off scheduled events), as Hasura v2
applies them: `Hasura/RQL/DDL/Webhook/Transform.hs` and `Transform/{Body, Headers, Method,
QueryParams, Url, Class, Request, Response, Validation}.hs`, the types in
`Hasura/RQL/Types/Webhook/Transform*.hs`, the request lenses of
`Network/HTTP/Client/Transformable.hs`.

Shapes, parsing and validation: `svc.outbound.transform_spec` (its public names are
re-exported here); URLs and query strings: `svc.outbound.transform_url`.

Applying (`apply_request`): every part is computed from the original request's context
(`$body` the original JSON body, `$session_variables`, `$base_url` the configured URL,
`$query_params` the original query as `[[key, value]]`) and the functions
`getSessionVariable` (`Data/Aeson/Kriti/Functions.hs` `sessionFunctions`); the parts
are method, url, body, query params, headers, in that order, and the first part that
fails stops with `TransformError` (its failures, each a JSON object as kriti-lang
serialises it, or `{error_code: "TransformationError", message}`). Rules followed:

- `method` replaces the method as written;
- `url` must render to an absolute URI ("Invalid URL: …"); the query string of the
  result is always the query parameters' (the transformed ones, else the original
  URL's, re-encoded by http-types' `renderQuery True`: `-_.~` and alphanumerics kept,
  everything else `%XX`); a parameter whose key or value renders to `null` is dropped;
- headers: `remove_headers` drop the named headers (any case), `add_headers` are
  appended after the rest (the reference appends; it does not replace a header of the
  same name unless it is removed too). No header is added implicitly (a form body does
  not set `Content-Type`);
- body: `transform` sends the template's JSON; `remove` sends none; a form body sends
  `k=v&…` with keys and values escaped like URI components.

`apply_response` evaluates a response transform's body with `$body` (the answer's JSON,
null when it is not JSON), `$request` (the request context, null without a request
transform) and `$response: {status}` (`Transform/Response.hs`).

`validate_request` / `validate_response` parse every template without evaluating it
(`Transform/Validation.hs`): what the metadata operations check at apply time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import quote, urlsplit

import msgspec

from svc.outbound.transform_spec import (
    BodyFn,
    Request,
    RequestTransform,
    ResponseTransform,
    TransformError,
    check_transforms,
    parse_request_transform,
    parse_response_transform,
    render_kriti,
    session_functions,
    validate_request,
    validate_response,
    wrap,
)
from svc.outbound.transform_url import (
    URI_PATTERN,
    Url,
    parse_query,
    render_query,
    split_url,
    transformation_error,
)

__all__ = [  # the names callers use, wherever they are defined
    "Context",
    "Request",
    "RequestTransform",
    "ResponseTransform",
    "TransformError",
    "apply_request",
    "apply_response",
    "body_for_display",
    "check_transforms",
    "parse_request_transform",
    "parse_response_transform",
    "transform_request",
    "validate_request",
    "validate_response",
]

Functions = Mapping[str, Callable[[Any], Any]]


# --------------------------------------------------------------------------- applying


def _scalar(value: Any) -> str:
    """`encodeScalar`: a string, number or boolean as text; else a TransformationError."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(float(value)) if isinstance(value, int) else repr(value)
    raise transformation_error("Template must produce a String, Number, or Boolean value", value)


def decode_json(body: bytes | None) -> Any:
    """A body as JSON, None when absent or not JSON (the reference's `J.decode`)."""
    if not body:
        return None
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None


@dataclass(slots=True)
class Context:
    """The variables of a request transform (`RequestTransformCtx`)."""

    body: Any
    session: Mapping[str, str] | None
    base_url: str
    query_params: list[tuple[str, str | None]]
    functions: Functions = field(default_factory=dict)

    def variables(self) -> dict[str, Any]:
        """`$body`, `$session_variables`, `$query_params`, `$base_url`."""
        return {
            "$body": self.body,
            "$session_variables": None if self.session is None else dict(self.session),
            "$query_params": [[k, v] for k, v in self.query_params],
            "$base_url": self.base_url,
        }

    def to_json(self) -> dict[str, Any]:
        """`ToJSON RequestTransformCtx`: `{body, session_variables, base_url,
        query_params}`."""
        return {
            "body": self.body,
            "session_variables": None if self.session is None else dict(self.session),
            "base_url": self.base_url,
            "query_params": [[k, v] for k, v in self.query_params],
        }


def request_context(
    request: Request, session: Mapping[str, str] | None, base_url: str | None = None
) -> Context:
    """The context a transform of `request` sees; `base_url` is the URL as configured
    (default the request's)."""
    split = urlsplit(request.url)
    return Context(
        body=decode_json(request.body),
        session=session,
        base_url=request.url if base_url is None else base_url,
        query_params=parse_query(split.query),
        functions=session_functions(session),
    )


def _unescaped(template: str, ctx: Context) -> str:
    return _scalar(render_kriti(wrap(template), ctx.variables(), ctx.functions))


def _all(templates: Sequence[Callable[[], Any]]) -> list[Any]:
    """Run every thunk, collecting all failures (`Validation`'s accumulation)."""
    out: list[Any] = []
    errors: list[dict[str, Any]] = []
    for thunk in templates:
        try:
            out.append(thunk())
        except TransformError as exc:
            errors.extend(exc.errors)
    if errors:
        raise TransformError(errors)
    return out


def form_encode(pairs: Sequence[tuple[str, str]]) -> bytes:
    """`foldFormEncoded`: `k=v&…`, keys and values escaped as URI components."""
    return "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs).encode()


def _body(fn: BodyFn, ctx: Context) -> bytes:
    if fn.action == "remove":
        return b""
    if fn.action == "transform":
        value = render_kriti(fn.template or "", ctx.variables(), ctx.functions)
        return msgspec.json.encode(value)
    keys = [k for k, _ in fn.form]
    values = _all([partial(_unescaped, t, ctx) for _, t in fn.form])
    return form_encode(list(zip(keys, values, strict=True)))


def _query(rt: RequestTransform, ctx: Context) -> list[tuple[str, str | None]]:
    if isinstance(rt.query_params, str):
        return parse_query(_unescaped(rt.query_params, ctx))
    pairs: list[tuple[str, str | None]] = []
    thunks: list[Callable[[], Any]] = []
    for k, v in rt.query_params or ():

        def one(k: str = k, v: str | None = v) -> tuple[str, str | None]:
            key = _unescaped(k, ctx)
            value = None if v is None else _unescaped(v, ctx)
            return key, value

        thunks.append(one)
    for key, value in _all(thunks):
        if key != "null" and value != "null":
            pairs.append((key, value))
    return pairs


def apply_request(rt: RequestTransform, request: Request, ctx: Context) -> Request:
    """`request` after `rt` (see the module's text); raises `TransformError`."""
    method = rt.method if rt.method is not None else request.method
    original = split_url(request.url, default_path="/")
    target = original
    if rt.url is not None:
        rendered = render_kriti(wrap(rt.url), ctx.variables(), ctx.functions)
        if not isinstance(rendered, str):
            raise transformation_error(
                f"URL Transforms must produce a JSON String: {_show(rendered)}"
            )
        if URI_PATTERN.match(rendered) is None:
            raise transformation_error(f"Invalid URL: {rendered}")
        target = split_url(rendered, default_path="") or original
    body = request.body
    if rt.body is not None:
        body = _body(rt.body, ctx)
    if rt.query_params is not None:
        query = render_query(_query(rt, ctx))
    else:
        query = render_query(ctx.query_params)
    headers = list(request.headers)
    if rt.has_headers:
        gone = {h.lower() for h in rt.remove_headers}
        headers = [(k, v) for k, v in headers if k.lower() not in gone]
        names = [k for k, _ in rt.add_headers]
        values = _all([partial(_unescaped, t, ctx) for _, t in rt.add_headers])
        headers += list(zip(names, values, strict=True))
    if target is None:
        url = request.url
    else:
        url = Url(target.secure, target.host, target.port, target.path, query).text()
    return Request(method, url, tuple(headers), body)


def _show(value: Any) -> str:
    """Roughly Haskell's `show` of an Aeson value (the reference's message text)."""
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return f"Bool {value}"
    if isinstance(value, int | float):
        return f"Number {float(value)}"
    if isinstance(value, list):
        return "Array " + msgspec.json.encode(value).decode()
    return "Object " + msgspec.json.encode(value).decode()


def transform_request(
    rt: RequestTransform,
    request: Request,
    session: Mapping[str, str] | None,
    base_url: str | None = None,
) -> tuple[Request, Context]:
    """`(transformed request, its context)` — the context is the `$request` of a
    response transform; raises `TransformError`."""
    ctx = request_context(request, session, base_url)
    return apply_request(rt, request, ctx), ctx


def response_request_json(ctx: Context | None) -> Any:
    """`$request` of a response transform: the reference's `RequestContext` JSON (the
    request context under each part's name), null without a request transform."""
    if ctx is None:
        return None
    one = ctx.to_json()
    return {k: one for k in ("method", "url", "body", "query_params", "request_headers")}


def apply_response(
    rt: ResponseTransform,
    body: bytes,
    status: int,
    request: Context | None,
    session: Mapping[str, str] | None,
) -> Any:
    """The answer's JSON after `rt` (`applyResponseTransform`): `remove` gives null, a
    form gives its encoded text as a string, no body transform the answer as JSON (null
    when it is not JSON). Raises `TransformError`."""
    value = decode_json(body)
    if rt.body is None:
        return value
    if rt.body.action == "remove":
        return None
    variables = {
        "$body": value,
        "$request": response_request_json(request),
        "$response": {"status": status},
    }
    functions = session_functions(session)
    if rt.body.action == "transform":
        return render_kriti(rt.body.template or "", variables, functions)
    keys = [k for k, _ in rt.body.form]
    values = _all([partial(_form_value, t, variables, functions) for _, t in rt.body.form])
    return form_encode(list(zip(keys, values, strict=True))).decode()


def _form_value(template: str, variables: Mapping[str, Any], functions: Functions) -> str:
    return _scalar(render_kriti(wrap(template), variables, functions))


def body_for_display(body: bytes | None) -> Any:
    """`decodeBody` of `test_webhook_transform`: the body as JSON, else as a JSON string
    of its text (a form body), else null."""
    if body is None:
        return None
    value = decode_json(body)
    if value is not None or body.strip() == b"null":
        return value
    try:
        decoded = msgspec.json.decode(b'"' + body + b'"')
    except msgspec.DecodeError:
        return None
    return decoded
