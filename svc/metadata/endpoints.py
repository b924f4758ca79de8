"""RESTified endpoints in the metadata document: arguments, pure transitions
`(Metadata, args) -> Metadata`, and what the document alone can tell about endpoints: URL
rules, which stored query an endpoint runs, and which endpoints are inconsistent (Hasura's
`rest_endpoint` inconsistencies).

Stored shape: `rest_endpoints: [{name, url, methods, definition: {query: {collection_name,
query_name}}, comment}]` (`svc.metadata.collection_model`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
from graphql import (
    DocumentNode,
    GraphQLError,
    OperationDefinitionNode,
    OperationType,
    parse,
)
from msgspec.structs import replace

from svc.errors import ErrorCode, SvcError, already_exists, not_exists
from svc.metadata.collection_model import EndpointDefinition, RestEndpoint
from svc.metadata.collections import find_collection
from svc.metadata.model import JSON, Metadata, plain
from svc.metadata.plain_names import check_plain_name
from svc.metadata.query_text import operations

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
"""HTTP methods an endpoint may list (case-sensitive, as Hasura's `EndpointMethod`)."""


class CreateRestEndpoint(msgspec.Struct):
    """`create_rest_endpoint`: `{name, url, methods, definition, comment}` (spec 4.11)."""

    name: str
    url: str
    methods: list[str]
    definition: EndpointDefinition
    comment: str | None = None


class DropRestEndpoint(msgspec.Struct):
    """`drop_rest_endpoint`: `{name}` (the reference's shape); `{url}` is accepted too
    (spec 4.11 names it)."""

    name: str | None = None
    url: str | None = None


def split_url(url: str) -> list[str]:
    """Segments of a URL template (`a/:id` → `["a", ":id"]`)."""
    return url.split("/")


def url_variables(url: str) -> list[str]:
    """Names captured by a URL template, in order (`a/:id/:x` → `["id", "x"]`)."""
    return [s[1:] for s in split_url(url) if s.startswith(":")]


def find_endpoint(md: Metadata, name: str) -> RestEndpoint | None:
    """The stored REST endpoint called `name`, if any."""
    return next((e for e in md.rest_endpoints if e.name == name), None)


def _check_methods(methods: list[str]) -> None:
    if not methods:
        raise SvcError(
            ErrorCode.PARSE_FAILED, "methods must be a non-empty list", path="$.args.methods"
        )
    for i, method in enumerate(methods):
        if method not in METHODS:
            raise SvcError(
                ErrorCode.PARSE_FAILED,
                f"Method {method!r} not supported; expected one of {', '.join(METHODS)}",
                path=f"$.args.methods[{i}]",
            )
    if len(set(methods)) != len(methods):
        raise SvcError(ErrorCode.PARSE_FAILED, "duplicate methods", path="$.args.methods")


def create_rest_endpoint(md: Metadata, args: CreateRestEndpoint) -> Metadata:
    """Add a REST endpoint (spec 2.10, 4.11); its `comment` is stored null or not, as the
    reference exports it.

    Raises 400 `parse-failed` for an empty name or URL, an empty or unknown method list;
    `already-exists` when the name is taken; `invalid-configuration` (reasons joined, the
    inconsistent objects in `internal`) when the new endpoint is inconsistent: its query is
    missing, is a subscription or not a single operation, its URL has an empty segment or
    an unnamed variable, captures a variable twice, or is ambiguous with another endpoint
    for a common method (Hasura's `runCreateEndpoint` / `buildSchemaCacheFor`).
    """
    for key in ("url", "name"):
        try:
            check_plain_name(getattr(args, key), key)
        except ValueError as exc:
            message = str(exc).removeprefix(f"{key}: ")
            raise SvcError(ErrorCode.PARSE_FAILED, message, path=f"$.{key}") from None
    _check_methods(args.methods)
    if find_endpoint(md, args.name) is not None:
        raise already_exists(f"Endpoint with name: {args.name} already exists")
    endpoint = RestEndpoint(
        name=args.name,
        url=args.url,
        methods=tuple(args.methods),
        definition=args.definition,
        comment=args.comment,
    )
    out = replace(md, rest_endpoints=(*md.rest_endpoints, endpoint))
    mine = [i for i in endpoint_issues(out) if args.name in i.endpoints]
    if mine:
        raise SvcError(
            ErrorCode.INVALID_CONFIGURATION,
            ", ".join(i.reason for i in mine),
            path="$.args",
            internal=[i.internal for i in mine],
        )
    return out


def drop_rest_endpoint(md: Metadata, args: DropRestEndpoint) -> Metadata:
    """Remove a REST endpoint by `name` (or every endpoint with `url`); 400 `not-exists`."""
    if args.name is not None:
        if find_endpoint(md, args.name) is None:
            raise not_exists(f"endpoint with name: {args.name} does not exist")
        drop = {args.name}
    elif args.url is not None:
        drop = {e.name for e in md.rest_endpoints if e.url == args.url}
        if not drop:
            raise not_exists(f"endpoint with url: {args.url} does not exist")
    else:
        raise SvcError(ErrorCode.PARSE_FAILED, 'key "name" not found', path="$.args")
    return replace(md, rest_endpoints=tuple(e for e in md.rest_endpoints if e.name not in drop))


@dataclass(frozen=True)
class Resolved:
    """An endpoint whose stored query exists and is one query or mutation."""

    endpoint: RestEndpoint
    text: str
    document: DocumentNode
    operation: OperationDefinitionNode

    @property
    def name(self) -> str:
        """The endpoint's name."""
        return self.endpoint.name

    @property
    def segments(self) -> list[str]:
        """The URL template's segments."""
        return split_url(self.endpoint.url)

    @property
    def methods(self) -> frozenset[str]:
        """The configured methods."""
        return frozenset(self.endpoint.methods)


@dataclass(frozen=True)
class EndpointIssue:
    """A reason a REST endpoint cannot be served (Hasura's inconsistent object).

    `key` identifies it across rebuilds, `endpoints` names the endpoints concerned and
    `internal` is the inconsistent-object JSON (`{definition, reason, name, type}`, or
    `{reason, conflicts}` for ambiguous URLs).
    """

    key: tuple[Any, ...]
    endpoints: frozenset[str]
    reason: str
    internal: JSON = field(default_factory=dict)


def _endpoint_issue(endpoint: RestEndpoint, reason: str) -> EndpointIssue:
    internal = {
        "definition": plain(endpoint),
        "reason": reason,
        "name": f"rest_endpoint {endpoint.name}",
        "type": "rest_endpoint",
    }
    key = ("rest_endpoint", endpoint.name, reason)
    return EndpointIssue(key, frozenset({endpoint.name}), reason, internal)


def resolve_endpoint(md: Metadata, endpoint: RestEndpoint) -> Resolved | str:
    """The stored query an endpoint runs, or why it cannot run it (Hasura's
    `resolveEndpoint` reasons, prefixed `Inconsistent object: in endpoint <name>: `)."""
    prefix = f"Inconsistent object: in endpoint {endpoint.name}: "
    collection_name, query_name = endpoint.reference
    collection = find_collection(md, collection_name)
    if collection is None:
        return f'{prefix}query collection with name "{collection_name}" does not exist'
    listed = collection.query(query_name)
    if listed is None:
        return (
            f'{prefix}query with name "{query_name}" does not exist in collection'
            f' "{collection_name}"'
        )
    try:
        document = parse(listed.query)
    except GraphQLError as exc:
        return f"{prefix}query with name {query_name} is not valid GraphQL: {exc.message}"
    ops = operations(document)
    if not ops:
        return f"{prefix}query with name {query_name} has no definitions."
    if len(ops) > 1:
        return f"{prefix}query with name {query_name} has multiple definitions."
    if ops[0].operation == OperationType.SUBSCRIPTION:
        return f"{prefix}query with name {query_name} is a subscription"
    return Resolved(endpoint, listed.query, document, ops[0])


def resolved_endpoints(md: Metadata) -> tuple[list[Resolved], list[EndpointIssue]]:
    """Every endpoint that can be served, and the issues of the others (spec 2.10).

    Rules (the reference's): the stored query must resolve (see `resolve_endpoint`); no URL
    segment may be empty or a bare `:`; a variable may be captured once; two endpoints
    sharing a method must not match a common path (a `:var` segment matches any literal).
    Ambiguous endpoints stay served (a request matching several is a 500 at run time).
    """
    resolved: list[Resolved] = []
    issues: list[EndpointIssue] = []
    for endpoint in md.rest_endpoints:
        found = resolve_endpoint(md, endpoint)
        if isinstance(found, str):
            issues.append(_endpoint_issue(endpoint, found))
        else:
            resolved.append(found)
    served: list[Resolved] = []
    for r in resolved:
        url = r.endpoint.url
        if any(s in ("", ":") for s in r.segments):
            reason = f"Empty segments or unnamed variables are not allowed: {url}"
            issues.append(_endpoint_issue(r.endpoint, reason))
            continue
        names = url_variables(url)
        if len(set(names)) != len(names):
            reason = f"Duplicate variables found in endpoint path: {url}"
            issues.append(_endpoint_issue(r.endpoint, reason))
            continue
        served.append(r)
    issues.extend(_ambiguities(served))
    return served, issues


def endpoint_issues(md: Metadata) -> list[EndpointIssue]:
    """Every REST-endpoint inconsistency of `md` (see `resolved_endpoints`)."""
    return resolved_endpoints(md)[1]


def _overlap(a: Resolved, b: Resolved) -> bool:
    sa, sb = a.segments, b.segments
    if len(sa) != len(sb) or not (a.methods & b.methods):
        return False
    return all(
        x == y or x.startswith(":") or y.startswith(":") for x, y in zip(sa, sb, strict=True)
    )


def _ambiguities(served: list[Resolved]) -> list[EndpointIssue]:
    """Groups of endpoints that can match one request with one method (connected
    components of the overlap relation), each listed by name like the reference."""
    parent = list(range(len(served)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(served)):
        for j in range(i + 1, len(served)):
            if _overlap(served[i], served[j]):
                parent[root(i)] = root(j)
    groups: dict[int, list[Resolved]] = {}
    for i, r in enumerate(served):
        groups.setdefault(root(i), []).append(r)
    out: list[EndpointIssue] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda r: r.name)
        urls = ", ".join(r.endpoint.url for r in members)
        reason = f"Ambiguous URL paths: {urls}"
        conflicts = [_conflict(r) for r in members]
        names = frozenset(r.name for r in members)
        key = ("ambiguous", tuple(sorted(names)))
        out.append(EndpointIssue(key, names, reason, {"reason": reason, "conflicts": conflicts}))
    return out


def _conflict(r: Resolved) -> JSON:
    """An ambiguous endpoint as the reference lists it: its query text as `definition`,
    `comment` always present."""
    out: JSON = plain(r.endpoint)
    comment = r.endpoint.comment
    return {
        **out,
        "definition": {"query": r.text},
        "comment": None if comment is msgspec.UNSET else comment,
    }
