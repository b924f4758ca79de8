"""Webhook request and response transforms as metadata holds them: their shapes, parsed
(`parse_request_transform`, `parse_response_transform`), the Kriti helpers they are
evaluated with, and their validation at apply time (`validate_request`,
`validate_response`, `check_transforms`: every template parsed, none evaluated, as
`Hasura/RQL/DDL/Webhook/Transform/Validation.hs`). Applied by `svc.outbound.transform`.

Shapes (the reference's `Hasura/RQL/Types/Webhook/Transform*.hs`):

- request: `{version: 1 | 2 (default 1), template_engine: "Kriti" (default), method?,
  url?, query_params?, request_headers?: {add_headers?, remove_headers?}, body?}`. In
  version 1 `body` is a template string; in version 2 `{action: "transform", template}`,
  `{action: "remove"}` or `{action: "x_www_form_urlencoded", form_template: {k: tmpl}}`.
  `query_params` is an object of key → value templates (a null value: the key alone) or
  one template string giving the whole query string. `url`, the query parameters'
  keys and values, header values and form values are *unescaped* templates: the text is
  wrapped in double quotes and evaluated as a Kriti string (`wrapUnescapedTemplate`).
- response: `{version: 1 | 2, template_engine?, body?}`, `body` as above.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from svc.errors import ErrorCode, SvcError
from svc.outbound import kriti
from svc.outbound.kriti import CustomFunctionError, KritiError

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


def render_kriti(template: str, variables: Mapping[str, Any], functions: Functions) -> Any:
    """Evaluate `template`; raises `TransformError` with kriti's error (its `serialize`)."""
    try:
        return kriti.render(template, variables, functions=functions)
    except KritiError as exc:
        raise TransformError([exc.serialize()]) from None
    except RecursionError:  # a value nested deeper than Python's stack
        message = "template too deeply nested"
        raise TransformError([{"error_code": "TransformationError", "message": message}]) from None


def session_functions(session: Mapping[str, str] | None) -> dict[str, Callable[[Any], Any]]:
    """`getSessionVariable "name"`: the session variable's value (name in any case),
    null for a null name; errors "Session variable \\"x\\" not found" and "Session
    variable name should be a string" (`Data/Aeson/Kriti/Functions.hs`)."""

    def get(name: Any) -> Any:
        if name is None:
            return None
        if not isinstance(name, str):
            raise CustomFunctionError("Session variable name should be a string")
        lower = name.lower()
        for key, value in (session or {}).items():
            if key.lower() == lower:
                return value
        raise CustomFunctionError(f'Session variable "{name}" not found')

    return {"getSessionVariable": get}


def wrap(template: str) -> str:
    """An unescaped template as a Kriti string (`wrapUnescapedTemplate`)."""
    return '"' + template + '"'


def _parse_error(template: str) -> dict[str, Any] | None:
    """kriti's parse error of `template`, or None when it parses (`Kriti.parser`)."""
    try:
        kriti.parse(template)
    except KritiError as exc:
        return exc.serialize()
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
        _refuse("response", validate_response(resp), path)
    if isinstance(request, dict):
        req = parse_request_transform(request, f"{path}.request_transform")
        _refuse("request", validate_request(req), path)
    return req, resp


def _refuse(which: str, errors: list[dict[str, Any]], path: str) -> None:
    """400 `validation-failed` "<which> transform validation failed" with `errors`."""
    if errors:
        message = f"{which} transform validation failed"
        raise SvcError(ErrorCode.VALIDATION_FAILED, message, path=path, internal=errors)
