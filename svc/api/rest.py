"""RESTified endpoints at run time: `/api/rest/<template path>` (spec 4.12).

A request is matched against the endpoints of the current metadata (literal segments
equal, `:name` segments capture), its variables are collected from the URL query string,
a form-encoded or JSON body and the captured segments, and the stored query runs through
the GraphQL pipeline with the request's role and session. The answer is the query's
`data` object (the reference answers without the `data` wrapper); an error is the
`/v1/query` error body with its status.

Variable rules (the reference's `resolveVar`): a provided name the query does not declare
is 400 `bad-request` "Unexpected variable <name>"; JSON body values pass through
untouched; text values (path, query string, form body) are read by the declared type: a
list type is refused, an empty value is `true` for `Boolean` and omitted for another
nullable type, JSON `true`/`false` is a boolean for `Boolean`/`Bool`, a JSON number is a
number for `Int`, `Float`, `Number`, `Double`, `float8` and `numeric`, and anything else is
the text itself. When names repeat, later sources win: query string, body, path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

import msgspec
from graphql import ListTypeNode, NamedTypeNode, NonNullTypeNode, TypeNode, print_ast

from svc.api.graphql import GraphQLRequest, GraphQLService
from svc.api.state import State
from svc.errors import ErrorCode, SvcError
from svc.metadata.endpoints import resolved_endpoints
from svc.metadata.query_text import strip_cached

_decode = msgspec.json.decode
_INDEX = object()  # plan-cache key of a state's endpoint list
_NAME = re.compile(r"^[_A-Za-z][_0-9A-Za-z]*$")
BOOLEAN_TYPES = frozenset({"Boolean", "Bool"})
NUMBER_TYPES = frozenset({"Int", "Float", "Number", "Double", "float8", "numeric"})


@dataclass(frozen=True, slots=True)
class RestEndpoint:
    """A servable endpoint: its URL segments, methods and what its query needs.

    `query` is the text that runs (the stored text, or without `@cached` when it had one),
    `stored` the stored text (compared by the allow-list), `variables` the declared type of
    each variable, `ttl` the `@cached` ttl (sent as `Cache-Control: max-age`).
    """

    name: str
    segments: tuple[str, ...]
    methods: frozenset[str]
    query: str
    stored: str
    variables: dict[str, TypeNode]
    ttl: int | None

    def matches(self, path: list[str]) -> dict[str, str] | None:
        """The captured variables when `path` fits the template, else None."""
        if len(path) != len(self.segments):
            return None
        captured: dict[str, str] = {}
        for seg, value in zip(self.segments, path, strict=True):
            if seg.startswith(":"):
                captured[seg[1:]] = value
            elif seg != value:
                return None
        return captured


def build_endpoints(state: State) -> list[RestEndpoint]:
    """The servable endpoints of the state's metadata (inconsistent ones are left out;
    ambiguous ones stay, a request matching several is refused at run time)."""
    out: list[RestEndpoint] = []
    for r in resolved_endpoints(state.metadata)[0]:
        document, ttl = strip_cached(r.document)
        text = r.text if ttl is None else print_ast(document)
        variables = {v.variable.name.value: v.type for v in r.operation.variable_definitions or ()}
        out.append(RestEndpoint(r.name, tuple(r.segments), r.methods, text, r.text, variables, ttl))
    return out


def endpoints_of(state: State) -> list[RestEndpoint]:
    """The state's endpoints, built once per state."""
    found = state.plans.get(_INDEX)
    if not isinstance(found, list):
        found = build_endpoints(state)
        state.remember(_INDEX, found)
    return found


@dataclass(frozen=True, slots=True)
class RestRequest:
    """What the server passes on: method, the path after `/api/rest/` (still
    percent-encoded when the server had the raw path), the raw query string and body."""

    method: str
    path: str
    query_string: bytes = b""
    body: bytes = b""
    content_type: str = ""
    path_is_raw: bool = True


@dataclass(frozen=True, slots=True)
class RestResponse:
    """Status, JSON body and extra headers of a successful call."""

    body: bytes
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)


def match(
    endpoints: list[RestEndpoint], method: str, path: list[str]
) -> tuple[RestEndpoint, dict[str, str]]:
    """The endpoint for `method` and `path`, and its captured segments.

    Raises 404 `not-found` "Endpoint not found" when no template fits the path, 405
    `method-not-allowed` "Allowed methods: …" when templates fit but not for this method,
    500 `unexpected` "Multiple endpoints match request" when several fit (spec 4.12 rules
    5, 6; the reference's messages).
    """
    fits = [(e, c) for e in endpoints if (c := e.matches(path)) is not None]
    if not fits:
        raise SvcError(ErrorCode.NOT_FOUND, "Endpoint not found", status=404)
    chosen = [(e, c) for e, c in fits if method in e.methods]
    if not chosen:
        allowed = sorted({m for e, _ in fits for m in e.methods})
        raise SvcError(
            ErrorCode.METHOD_NOT_ALLOWED, f"Allowed methods: {', '.join(allowed)}", status=405
        )
    if len(chosen) > 1:
        raise SvcError(ErrorCode.UNEXPECTED, "Multiple endpoints match request", status=500)
    return chosen[0]


def _text_value(name: str, declared: TypeNode, text: str) -> tuple[bool, Any]:
    """`(present, value)` of a text argument read by its declared type (module rules)."""
    nullable = not isinstance(declared, NonNullTypeNode)
    inner = declared.type if isinstance(declared, NonNullTypeNode) else declared
    if isinstance(inner, ListTypeNode):
        raise SvcError(
            ErrorCode.BAD_REQUEST,
            "List variables are not currently supported in URL or Query parameters. "
            f'(Variable {name}, with value "{text}")',
        )
    assert isinstance(inner, NamedTypeNode)
    type_name = inner.name.value
    if type_name == "Boolean" and text == "":
        return True, True
    if nullable and text == "":
        return False, None
    try:
        parsed = _decode(text.encode())
    except msgspec.DecodeError:
        return True, text
    if isinstance(parsed, bool):
        return True, parsed if type_name in BOOLEAN_TYPES else text
    if isinstance(parsed, int | float):
        return True, parsed if type_name in NUMBER_TYPES else text
    return True, text


def variables_of(
    endpoint: RestEndpoint, request: RestRequest, captured: dict[str, str]
) -> dict[str, Any]:
    """The GraphQL variables of a call (module rules); raises 400 `bad-request`."""
    provided: dict[str, tuple[bool, Any]] = {}  # name -> (is text, value)
    for k, v in parse_qsl(request.query_string.decode("latin-1"), keep_blank_values=True):
        provided[k] = (True, v)
    if request.body:
        if request.content_type.split(";")[0].strip().lower() == (
            "application/x-www-form-urlencoded"
        ):
            for k, v in parse_qsl(request.body.decode("utf-8", "replace"), keep_blank_values=True):
                provided[k] = (True, v)
        else:
            try:
                body = _decode(request.body)
            except msgspec.DecodeError:
                body = None
            if isinstance(body, dict):
                for k, v in body.items():
                    provided[str(k)] = (False, v)
    for k, v in captured.items():
        provided[k] = (True, v)
    out: dict[str, Any] = {}
    for name, (is_text, value) in provided.items():
        if not _NAME.match(name):
            continue
        declared = endpoint.variables.get(name)
        if declared is None:
            raise SvcError(ErrorCode.BAD_REQUEST, f"Unexpected variable {name}")
        if not is_text:
            out[name] = value
            continue
        present, resolved = _text_value(name, declared, value)
        if present:
            out[name] = resolved
    return out


def _segments(request: RestRequest) -> list[str]:
    parts = request.path.split("/")
    return [unquote(p) for p in parts] if request.path_is_raw else parts


async def run_rest(
    service: GraphQLService, state: State, request: RestRequest, role: str, session: dict[str, str]
) -> RestResponse:
    """Answer one REST call (see the module docstring); raises `SvcError` with the status
    the server answers (404, 405, 500, or the GraphQL error's, 400 for validation)."""
    endpoint, captured = match(endpoints_of(state), request.method, _segments(request))
    variables = variables_of(endpoint, request, captured)
    req = GraphQLRequest(query=endpoint.query, variables=variables)
    body = await service.run(state, role, session, req, allow_text=endpoint.stored)
    if body.startswith(b'{"data":') and body.endswith(b"}"):
        body = body[len(b'{"data":') : -1]
    else:
        decoded = _decode(body)
        body = msgspec.json.encode(decoded.get("data") if isinstance(decoded, dict) else decoded)
    headers: list[tuple[str, str]] = []
    if endpoint.ttl is not None:
        headers.append(("cache-control", f"max-age={endpoint.ttl}"))
    return RestResponse(body, 200, headers)
