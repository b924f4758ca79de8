"""Webhook request and response transforms (`request_transform` / `response_transform`
of actions, event triggers, cron triggers and one-off scheduled events), as Hasura v2
applies them: `Hasura/RQL/DDL/Webhook/Transform.hs` and `Transform/{Body, Headers, Method,
QueryParams, Url, Class, Request, Response, Validation}.hs`, the types in
`Hasura/RQL/Types/Webhook/Transform*.hs`, the request lenses of
`Network/HTTP/Client/Transformable.hs`.

Shapes (`parse_request_transform`, `parse_response_transform`):

- request: `{version: 1 | 2 (default 1), template_engine: "Kriti" (default), method?,
  url?, query_params?, request_headers?: {add_headers?, remove_headers?}, body?}`. In
  version 1 `body` is a template string; in version 2 `{action: "transform", template}`,
  `{action: "remove"}` or `{action: "x_www_form_urlencoded", form_template: {k: tmpl}}`.
  `query_params` is an object of key → value templates (a null value: the key alone) or
  one template string giving the whole query string. `url`, the query parameters'
  keys and values, header values and form values are *unescaped* templates: the text is
  wrapped in double quotes and evaluated as a Kriti string (`wrapUnescapedTemplate`).
- response: `{version: 1 | 2, template_engine?, body?}`, `body` as above.

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

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal
from urllib.parse import quote, unquote_to_bytes, urlsplit

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.outbound import kriti
from svc.outbound.kriti import KritiError

Functions = Mapping[str, Callable[[Any], Any]]
BodyAction = Literal["transform", "remove", "x_www_form_urlencoded"]


# --------------------------------------------------------------------------- model


@dataclass(frozen=True, slots=True)
class BodyFn:
    """A body transform: `action` and its `template` (transform) or `form` (ordered
    key → unescaped template)."""

    action: BodyAction
    template: str | None = None
    form: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class RequestTransform:
    """A parsed `request_transform`. `query_params`: None (unchanged), a tuple of
    `(key template, value template | None)`, or one template string (the query string).
    `add_headers`/`remove_headers` apply only when `has_headers`."""

    version: int = 1
    method: str | None = None
    url: str | None = None
    body: BodyFn | None = None
    query_params: tuple[tuple[str, str | None], ...] | str | None = None
    add_headers: tuple[tuple[str, str], ...] = ()
    remove_headers: tuple[str, ...] = ()
    has_headers: bool = False


@dataclass(frozen=True, slots=True)
class ResponseTransform:
    """A parsed `response_transform` (only the body is transformed, as the reference)."""

    version: int = 1
    body: BodyFn | None = None


@dataclass(frozen=True, slots=True)
class Request:
    """An outgoing HTTP request: `body` None for none (bytes otherwise, JSON for an
    untransformed body)."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None

    def header(self, name: str) -> str | None:
        """The first value of header `name` (any case), or None."""
        lower = name.lower()
        return next((v for k, v in self.headers if k.lower() == lower), None)


class TransformError(Exception):
    """A transform failed when applied: `errors` is the reference's error bundle (a list
    of JSON objects: kriti-lang's serialised errors or `TransformationError`s)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(str(e.get("message", e)) for e in errors))
        self.errors = errors


def _parse_failed(message: str, path: str) -> SvcError:
    return SvcError(ErrorCode.PARSE_FAILED, message, path=path)


def _version(value: Any, path: str) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int):
        raise _parse_failed("parsing Int failed", f"{path}.version")
    if value not in (1, 2):
        raise _parse_failed(f"expected 1 or 2, encountered {value}", f"{path}.version")
    return value


def _engine(value: Any, path: str) -> None:
    if value is not None and value != "Kriti":
        raise _parse_failed(
            'parsing TemplatingEngine failed, expected one of the tags ["Kriti"], '
            f"but found tag {value!r}",
            f"{path}.template_engine",
        )


def _text(value: Any, path: str, what: str = "Template") -> str:
    if not isinstance(value, str):
        raise _parse_failed(f"parsing {what} failed, expected String", path)
    return value


def _body_fn(value: Any, version: int, path: str) -> BodyFn | None:
    if value is None:
        return None
    if version == 1:
        return BodyFn("transform", _text(value, path))
    if not isinstance(value, dict):
        raise _parse_failed("parsing BodyTransformFn failed, expected Object", path)
    action = value.get("action")
    if action is None:
        raise _parse_failed('key "action" not found', path)
    if action == "remove":
        return BodyFn("remove")
    if action == "transform":
        if "template" not in value:
            raise _parse_failed('key "template" not found', path)
        return BodyFn("transform", _text(value["template"], f"{path}.template"))
    if action == "x_www_form_urlencoded":
        form = value.get("form_template")
        if not isinstance(form, dict):
            raise _parse_failed('key "form_template" not found', path)
        pairs = tuple((k, _text(v, f"{path}.form_template.{k}")) for k, v in form.items())
        return BodyFn("x_www_form_urlencoded", form=pairs)
    raise _parse_failed("invalid transform action", path)


def parse_request_transform(value: Any, path: str = "$") -> RequestTransform:
    """`value` (a stored or given `request_transform` object) as a `RequestTransform`;
    raises 400 `parse-failed` at the key's path for a malformed one (the reference's
    `FromJSON RequestTransform`)."""
    if not isinstance(value, dict):
        raise _parse_failed("parsing RequestTransform failed, expected Object", path)
    version = _version(value.get("version"), path)
    _engine(value.get("template_engine"), path)
    method = value.get("method")
    if method is not None:
        method = _text(method, f"{path}.method", "Method")
    url = value.get("url")
    if url is not None:
        url = _text(url, f"{path}.url")
    params = value.get("query_params")
    query: tuple[tuple[str, str | None], ...] | str | None
    if params is None:
        query = None
    elif isinstance(params, str):
        query = params
    elif isinstance(params, dict):
        items = []
        for k, v in params.items():
            if v is not None:
                v = _text(v, f"{path}.query_params.{k}")
            items.append((k, v))
        query = tuple(items)
    else:
        raise _parse_failed("Invalid query parameter", f"{path}.query_params")
    rules = value.get("request_headers")
    add: tuple[tuple[str, str], ...] = ()
    remove: tuple[str, ...] = ()
    if rules is not None:
        if not isinstance(rules, dict):
            raise _parse_failed(
                "parsing AddReplaceRemoveFields failed, expected Object", f"{path}.request_headers"
            )
        added = rules.get("add_headers") or {}
        if not isinstance(added, dict):
            raise _parse_failed("expected Object", f"{path}.request_headers.add_headers")
        add = tuple(
            (k, _text(v, f"{path}.request_headers.add_headers.{k}")) for k, v in added.items()
        )
        removed = rules.get("remove_headers") or []
        if not isinstance(removed, list):
            raise _parse_failed("expected Array", f"{path}.request_headers.remove_headers")
        remove = tuple(
            _text(h, f"{path}.request_headers.remove_headers[{i}]", "HeaderKey")
            for i, h in enumerate(removed)
        )
    return RequestTransform(
        version=version,
        method=method,
        url=url,
        body=_body_fn(value.get("body"), version, f"{path}.body"),
        query_params=query,
        add_headers=add,
        remove_headers=remove,
        has_headers=rules is not None,
    )


def parse_response_transform(value: Any, path: str = "$") -> ResponseTransform:
    """`value` (a `response_transform` object) as a `ResponseTransform`; 400
    `parse-failed` for a malformed one (`FromJSON MetadataResponseTransform`)."""
    if not isinstance(value, dict):
        raise _parse_failed("parsing MetadataResponseTransform failed, expected Object", path)
    version = _version(value.get("version"), path)
    _engine(value.get("template_engine"), path)
    return ResponseTransform(version, _body_fn(value.get("body"), version, f"{path}.body"))


# --------------------------------------------------------------------------- Kriti


def _takes_functions() -> bool:
    try:
        return "functions" in inspect.signature(kriti.render).parameters
    except (TypeError, ValueError):
        return False


_RENDER: Callable[..., Any] = kriti.render
_WITH_FUNCTIONS = _takes_functions()


def _error_json(exc: KritiError) -> dict[str, Any]:
    """kriti-lang's serialised error (`{error_code, message, source_position}`)."""
    serialize = getattr(exc, "serialize", None)
    if callable(serialize):
        out = serialize()
        if isinstance(out, dict):
            return out
    code = getattr(exc, "error_code", None)
    message = getattr(exc, "message", None)
    return {
        "error_code": code if isinstance(code, str) else "TransformationError",
        "message": message if isinstance(message, str) else str(exc),
    }


def _render(template: str, variables: Mapping[str, Any], functions: Functions) -> Any:
    """Evaluate `template`; raises `TransformError` with kriti's error."""
    try:
        if _WITH_FUNCTIONS:
            return _RENDER(template, variables, functions=functions)
        return _RENDER(template, variables)
    except KritiError as exc:
        raise TransformError([_error_json(exc)]) from None
    except RecursionError:
        message = "template too deeply nested"
        raise TransformError([{"error_code": "TransformationError", "message": message}]) from None


def _function_error(message: str) -> Exception:
    """The error a custom function raises (kriti's `CustomFunctionError`)."""
    kind: Any = getattr(kriti, "CustomFunctionError", ValueError)
    error: Exception = kind(message)
    return error


def session_functions(session: Mapping[str, str] | None) -> dict[str, Callable[[Any], Any]]:
    """`getSessionVariable "name"`: the session variable's value (name in any case),
    null for a null name; errors "Session variable \\"x\\" not found" and "Session
    variable name should be a string" (`Data/Aeson/Kriti/Functions.hs`)."""

    def get(name: Any) -> Any:
        if name is None:
            return None
        if not isinstance(name, str):
            raise _function_error("Session variable name should be a string")
        lower = name.lower()
        for key, value in (session or {}).items():
            if key.lower() == lower:
                return value
        raise _function_error(f'Session variable "{name}" not found')

    return {"getSessionVariable": get}


def wrap(template: str) -> str:
    """An unescaped template as a Kriti string (`wrapUnescapedTemplate`)."""
    return '"' + template + '"'


def _parse_error(template: str) -> dict[str, Any] | None:
    """kriti's parse error of `template`, or None when it parses (`Kriti.parser`)."""
    parse = getattr(kriti, "parse", None)
    if callable(parse):
        try:
            parse(template)
        except KritiError as exc:
            return _error_json(exc)
        return None
    try:
        _render(template, {}, session_functions({}))
    except TransformError as exc:
        error = exc.errors[0]
        if error.get("error_code") == "Parse Error":
            return error
    return None


def _body_templates(body: BodyFn | None) -> list[str]:
    if body is None or body.action == "remove":
        return []
    if body.action == "transform":
        return [body.template or ""]
    return [wrap(t) for _, t in body.form]


def validate_request(rt: RequestTransform) -> list[dict[str, Any]]:
    """The parse errors of every template of `rt` (empty: valid), in the reference's field
    order (method, url, body, query params, headers)."""
    templates: list[str] = []
    if rt.url is not None:
        templates.append(wrap(rt.url))
    templates += _body_templates(rt.body)
    if isinstance(rt.query_params, str):
        templates.append(wrap(rt.query_params))
    elif rt.query_params is not None:
        for k, v in rt.query_params:
            templates.append(wrap(k))
            if v is not None:
                templates.append(wrap(v))
    templates += [wrap(v) for _, v in rt.add_headers]
    return [e for e in map(_parse_error, templates) if e is not None]


def validate_response(rt: ResponseTransform) -> list[dict[str, Any]]:
    """The parse errors of a response transform's body templates."""
    return [e for e in map(_parse_error, _body_templates(rt.body)) if e is not None]


def check_transforms(
    request: Any, response: Any, path: str = "$.args"
) -> tuple[RequestTransform | None, ResponseTransform | None]:
    """Parse and validate a `request_transform` and `response_transform` given to a
    metadata operation (each None/UNSET: absent), as the reference's
    `validateTransforms` does before `create_action`, `update_action`,
    `pg_create_event_trigger`, `create_cron_trigger` and `test_webhook_transform`: the
    response transform first. Raises 400 `parse-failed` for a malformed one, 400
    `validation-failed` "response transform validation failed" / "request transform
    validation failed" at `$.args` with the parse errors as `internal`."""
    req = resp = None
    if isinstance(response, dict):
        resp = parse_response_transform(response, f"{path}.response_transform")
        errors = validate_response(resp)
        if errors:
            raise SvcError(
                ErrorCode.VALIDATION_FAILED,
                "response transform validation failed",
                path=path,
                internal=errors,
            )
    if isinstance(request, dict):
        req = parse_request_transform(request, f"{path}.request_transform")
        errors = validate_request(req)
        if errors:
            raise SvcError(
                ErrorCode.VALIDATION_FAILED,
                "request transform validation failed",
                path=path,
                internal=errors,
            )
    return req, resp


# --------------------------------------------------------------------------- URLs

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")


def _transformation_error(message: str, value: Any = None) -> TransformError:
    error: dict[str, Any] = {"error_code": "TransformationError", "message": message}
    if value is not None:
        error["value"] = value
    return TransformError([error])


def query_encode(text: str) -> str:
    """http-types' `urlEncode True`: alphanumerics and `-_.~` kept, the rest `%XX`."""
    return quote(text, safe="")


def _url_decode(text: str) -> str:
    return unquote_to_bytes(text.replace("+", " ")).decode("utf-8", "replace")


def parse_query(text: str) -> list[tuple[str, str | None]]:
    """http-types' `parseQuery`: a leading `?` dropped, pairs split at `&` or `;`, `+`
    and `%XX` decoded; a key without `=` has no value."""
    text = text.removeprefix("?")
    out: list[tuple[str, str | None]] = []
    while text:
        m = re.search("[&;]", text)
        piece, text = (text, "") if m is None else (text[: m.start()], text[m.end() :])
        key, eq, value = piece.partition("=")
        out.append((_url_decode(key), _url_decode(value) if eq else None))
    return out


def render_query(params: Sequence[tuple[str, str | None]]) -> str:
    """http-types' `renderQuery True`: `?k=v&k2` (empty for no parameters)."""
    if not params:
        return ""
    parts = [
        query_encode(k) if v is None else f"{query_encode(k)}={query_encode(v)}" for k, v in params
    ]
    return "?" + "&".join(parts)


@dataclass(frozen=True, slots=True)
class _Url:
    secure: bool
    host: str
    port: int
    path: str
    query: str

    def text(self) -> str:
        default = 443 if self.secure else 80
        port = "" if self.port == default else f":{self.port}"
        return f"{'https' if self.secure else 'http'}://{self.host}{port}{self.path}{self.query}"


def _split(url: str, *, default_path: str) -> _Url | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.netloc:
        return None
    secure = parts.scheme.lower() == "https"
    host = parts.netloc.rsplit("@", 1)[-1]
    if parts.port is not None or host.endswith(":"):
        host = host.rsplit(":", 1)[0]
    userinfo = parts.netloc[: -len(parts.netloc.rsplit("@", 1)[-1])]
    query = "?" + parts.query if parts.query else ""
    return _Url(
        secure,
        userinfo + host,
        port if port is not None else (443 if secure else 80),
        parts.path or default_path,
        query,
    )


# --------------------------------------------------------------------------- applying


def _scalar(value: Any) -> str:
    """`encodeScalar`: a string, number or boolean as text; else a TransformationError."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(float(value)) if isinstance(value, int) else repr(value)
    raise _transformation_error("Template must produce a String, Number, or Boolean value", value)


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
    return _scalar(_render(wrap(template), ctx.variables(), ctx.functions))


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
        value = _render(fn.template or "", ctx.variables(), ctx.functions)
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
    original = _split(request.url, default_path="/")
    target = original
    if rt.url is not None:
        rendered = _render(wrap(rt.url), ctx.variables(), ctx.functions)
        if not isinstance(rendered, str):
            raise _transformation_error(
                f"URL Transforms must produce a JSON String: {_show(rendered)}"
            )
        if _URI.match(rendered) is None:
            raise _transformation_error(f"Invalid URL: {rendered}")
        target = _split(rendered, default_path="") or original
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
        url = _Url(target.secure, target.host, target.port, target.path, query).text()
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
        return _render(rt.body.template or "", variables, functions)
    keys = [k for k, _ in rt.body.form]
    values = _all([partial(_form_value, t, variables, functions) for _, t in rt.body.form])
    return form_encode(list(zip(keys, values, strict=True))).decode()


def _form_value(template: str, variables: Mapping[str, Any], functions: Functions) -> str:
    return _scalar(_render(wrap(template), variables, functions))


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
