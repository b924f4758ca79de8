"""Query collections, the allow-list and RESTified endpoints in the metadata document.

Pure transitions `(Metadata, args) -> Metadata` (inputs are never mutated) plus what the
document alone can tell about endpoints: URL rules, which stored query an endpoint runs, and
which endpoints are inconsistent (Hasura's `rest_endpoint` inconsistencies). Whether a stored
query fits the GraphQL schema needs the schema and is decided in `svc.api.collections`.

Stored shapes (Hasura's v2 export, spec 2.10 and 2.13):

* `query_collections`: `[{name, definition: {queries: [{name, query}]}, comment?}]`
* `allowlist`: `[{collection, scope?: {global: false, roles: [...]}}]` (no scope = global)
* `rest_endpoints`: `[{name, url, methods, definition: {query: {collection_name,
  query_name}}, comment}]`
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import msgspec
from graphql import (
    DirectiveNode,
    DocumentNode,
    GraphQLError,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    parse,
)

from svc.errors import SvcError, already_exists, not_exists
from svc.metadata.model import JSON, Metadata

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
"""HTTP methods an endpoint may list (case-sensitive, as Hasura's `EndpointMethod`)."""

CACHED_DEFAULT_TTL = 60
"""`@cached` without `ttl` (Hasura's directive default, in seconds)."""


# --------------------------------------------------------------------------------------------
# Arguments


class ListedQuery(msgspec.Struct):
    """One named query of a collection: `{name, query}`."""

    name: str
    query: str


class CollectionDefinition(msgspec.Struct):
    """`definition` of a collection: `{queries: [ListedQuery]}`."""

    queries: list[ListedQuery] = msgspec.field(default_factory=list)


class CreateQueryCollection(msgspec.Struct):
    """`create_query_collection`: `{name, comment, definition: {queries}}`."""

    name: str
    definition: CollectionDefinition = msgspec.field(default_factory=CollectionDefinition)
    comment: str | None = None


class DropQueryCollection(msgspec.Struct):
    """`drop_query_collection`: `{collection, cascade}`."""

    collection: str
    cascade: bool = False


class AddQueryToCollection(msgspec.Struct):
    """`add_query_to_collection`: `{collection_name, query_name, query}`."""

    collection_name: str
    query_name: str
    query: str


class DropQueryFromCollection(msgspec.Struct):
    """`drop_query_from_collection`: `{collection_name, query_name}`."""

    collection_name: str
    query_name: str


class AllowlistScope(msgspec.Struct):
    """`scope` of an allow-list entry: `{global: true}` or `{global: false, roles}`."""

    is_global: bool = msgspec.field(name="global", default=True)
    roles: list[str] | None = None


class AllowlistEntry(msgspec.Struct):
    """`add_collection_to_allowlist` / `update_scope_of_collection_in_allowlist`:
    `{collection, scope}`."""

    collection: str
    scope: AllowlistScope | None = None


class DropCollectionFromAllowlist(msgspec.Struct):
    """`drop_collection_from_allowlist`: `{collection}`."""

    collection: str


class QueryReference(msgspec.Struct):
    """`definition.query` of an endpoint: which stored query it runs."""

    collection_name: str
    query_name: str


class EndpointDefinition(msgspec.Struct):
    """`definition` of an endpoint: `{query: {collection_name, query_name}}`."""

    query: QueryReference


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


# --------------------------------------------------------------------------------------------
# GraphQL text


def parse_query(text: str, path: str) -> DocumentNode:
    """Parse a stored query; raises 400 `parse-failed` at `path` when it is not GraphQL."""
    try:
        return parse(text)
    except GraphQLError as exc:
        message = f"not a valid graphql query: {exc.message}"
        raise SvcError("parse-failed", message, path=path) from None


def strip_cached(document: DocumentNode) -> tuple[DocumentNode, int | None]:
    """The document without the operation-level `@cached` directive, and its `ttl`.

    Hasura's schema declares `@cached(ttl: Int = 60, refresh: Boolean = false)` on queries;
    svc has no response cache, so the directive is removed before validation and the ttl
    only becomes the REST answer's `Cache-Control: max-age` (as the reference sends it).
    `ttl` is None when the document has no `@cached`.
    """
    ttl: int | None = None
    changed = False
    definitions = []
    for d in document.definitions:
        if isinstance(d, OperationDefinitionNode) and any(
            x.name.value == "cached" for x in d.directives or ()
        ):
            kept: list[DirectiveNode] = []
            for directive in d.directives or ():
                if directive.name.value != "cached":
                    kept.append(directive)
                    continue
                ttl = CACHED_DEFAULT_TTL
                for arg in directive.arguments or ():
                    if arg.name.value == "ttl" and isinstance(arg.value, IntValueNode):
                        ttl = int(arg.value.value)
            d = copy.copy(d)
            d.directives = tuple(kept)
            changed = True
        definitions.append(d)
    if not changed:
        return document, None
    out = copy.copy(document)
    out.definitions = tuple(definitions)
    return out, ttl


def operations(document: DocumentNode) -> list[OperationDefinitionNode]:
    """The operation definitions of a document, in order."""
    return [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]


# --------------------------------------------------------------------------------------------
# Lookups


def find_collection(md: Metadata, name: str) -> JSON | None:
    """The stored collection called `name`, if any."""
    return next((c for c in md.query_collections if c.get("name") == name), None)


def collection_queries(collection: JSON) -> list[JSON]:
    """`definition.queries` of a stored collection (`[]` when absent)."""
    queries: list[JSON] = (collection.get("definition") or {}).get("queries") or []
    return queries


def _collection(md: Metadata, name: str, path: str) -> JSON:
    found = find_collection(md, name)
    if found is None:
        raise not_exists(f'query collection with name "{name}" does not exist', path)
    return found


def find_endpoint(md: Metadata, name: str) -> JSON | None:
    """The stored REST endpoint called `name`, if any."""
    return next((e for e in md.rest_endpoints if e.get("name") == name), None)


def endpoint_reference(endpoint: JSON) -> tuple[str, str]:
    """`(collection_name, query_name)` an endpoint runs."""
    ref = (endpoint.get("definition") or {}).get("query") or {}
    return str(ref.get("collection_name")), str(ref.get("query_name"))


def allowlisted(md: Metadata, collection: str) -> bool:
    """Whether `collection` is in the allow-list."""
    return any(e.get("collection") == collection for e in md.allowlist)


def dependent_endpoints(md: Metadata, collection: str, query: str | None = None) -> list[str]:
    """Names of the endpoints that run a query of `collection` (only `query`, if given)."""
    return [
        str(e.get("name"))
        for e in md.rest_endpoints
        if endpoint_reference(e)[0] == collection
        and (query is None or endpoint_reference(e)[1] == query)
    ]


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


# --------------------------------------------------------------------------------------------
# Query collections


def _editable(md: Metadata) -> Metadata:
    """A new document whose collections, allow-list and endpoints (all that these
    operations change) are deep copies of `md`'s; every other part is shared with `md`,
    since copying the tables of a large document would cost more than the operation
    (`svc.metadata.apply` explains the sharing)."""
    return msgspec.structs.replace(
        md,
        query_collections=copy.deepcopy(md.query_collections),
        allowlist=copy.deepcopy(md.allowlist),
        rest_endpoints=copy.deepcopy(md.rest_endpoints),
    )


def create_query_collection(md: Metadata, args: CreateQueryCollection) -> Metadata:
    """Add a collection.

    Raises 400 `already-exists` (`$.args.name`) when the name is taken, `not-supported` when
    two queries share a name and `parse-failed` when a query is not GraphQL (Hasura's
    `runCreateCollection`).
    """
    if find_collection(md, args.name) is not None:
        raise already_exists(
            f'query collection with name "{args.name}" already exists', "$.args.name"
        )
    names = [q.name for q in args.definition.queries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SvcError(
            "not-supported",
            f"found duplicate query names {_quoted(duplicates)}",
            path="$.args.definition.queries",
        )
    for i, q in enumerate(args.definition.queries):
        parse_query(q.query, f"$.args.definition.queries[{i}].query")
    entry: JSON = {
        "name": args.name,
        "definition": {
            "queries": [{"name": q.name, "query": q.query} for q in args.definition.queries]
        },
    }
    if args.comment is not None:
        entry["comment"] = args.comment
    out = _editable(md)
    out.query_collections.append(entry)
    return out


def drop_query_collection(md: Metadata, args: DropQueryCollection) -> Metadata:
    """Remove a collection.

    Raises 400 `not-exists` when there is none. Without `cascade`, a collection in the
    allow-list or run by a REST endpoint is refused with 400 `dependency-error` (Hasura's
    allow-list message; spec 7's `cannot drop due to the following dependent objects` for
    endpoints); with `cascade` the allow-list entry and those endpoints go too.
    """
    _collection(md, args.collection, "$.args.collection")
    in_allowlist = allowlisted(md, args.collection)
    endpoints = dependent_endpoints(md, args.collection)
    if not args.cascade:
        if in_allowlist:
            raise SvcError(
                "dependency-error",
                f'query collection with name "{args.collection}" is present in the allowlist;'
                " cannot proceed to drop. please use cascade to confirm you wish to drop it"
                " from the allowlist as well",
                path="$.args.collection",
            )
        if endpoints:
            names = ", ".join(f"rest_endpoint {n}" for n in endpoints)
            raise SvcError(
                "dependency-error",
                f"cannot drop due to the following dependent objects : {names}",
                path="$.args",
            )
    out = _editable(md)
    out.query_collections = [c for c in out.query_collections if c.get("name") != args.collection]
    out.allowlist = [e for e in out.allowlist if e.get("collection") != args.collection]
    out.rest_endpoints = [e for e in out.rest_endpoints if e.get("name") not in endpoints]
    return out


def add_query_to_collection(md: Metadata, args: AddQueryToCollection) -> Metadata:
    """Append a query to a collection.

    Raises 400 `not-exists` (`$.args.collection_name`) when the collection is missing,
    `already-exists` when it has a query of that name, `parse-failed` when the query is not
    GraphQL (Hasura's `runAddQueryToCollection`).
    """
    collection = _collection(md, args.collection_name, "$.args.collection_name")
    if any(q.get("name") == args.query_name for q in collection_queries(collection)):
        raise already_exists(
            f'query with name "{args.query_name}" already exists in collection'
            f' "{args.collection_name}"'
        )
    parse_query(args.query, "$.args.query")
    out = _editable(md)
    target = find_collection(out, args.collection_name)
    assert target is not None
    definition = target.setdefault("definition", {})
    definition.setdefault("queries", []).append({"name": args.query_name, "query": args.query})
    return out


def drop_query_from_collection(md: Metadata, args: DropQueryFromCollection) -> Metadata:
    """Remove a query from a collection.

    Raises 400 `not-exists` when the collection is missing and 400 `not-found` when it has
    no such query (Hasura's codes). An endpoint running the query becomes inconsistent,
    which the caller refuses (`svc.api.collections`).
    """
    collection = _collection(md, args.collection_name, "$.args.collection_name")
    if not any(q.get("name") == args.query_name for q in collection_queries(collection)):
        raise SvcError(
            "not-found",
            f'query with name "{args.query_name}" not found in collection "{args.collection_name}"',
            path="$.args",
        )
    out = _editable(md)
    target = find_collection(out, args.collection_name)
    assert target is not None
    target["definition"]["queries"] = [
        q for q in collection_queries(target) if q.get("name") != args.query_name
    ]
    return out


# --------------------------------------------------------------------------------------------
# Allow-list


def _scope_json(scope: AllowlistScope | None) -> JSON | None:
    """The stored `scope` (None for global); raises 400 `parse-failed` on a bad scope."""
    if scope is None or scope.is_global:
        if scope is not None and scope.roles is not None:
            raise SvcError(
                "parse-failed", "roles are not allowed when global is true", path="$.args.scope"
            )
        return None
    if not scope.roles:
        raise SvcError("parse-failed", "roles must be a non-empty list", path="$.args.scope")
    if len(set(scope.roles)) != len(scope.roles):
        raise SvcError("parse-failed", "duplicate roles are not allowed", path="$.args.scope")
    return {"global": False, "roles": list(scope.roles)}


def add_collection_to_allowlist(md: Metadata, args: AllowlistEntry) -> tuple[Metadata, str | None]:
    """Add a collection to the allow-list: `(new document, None)`.

    Raises 400 `not-exists` (`$.args.collection`) when there is no such collection. When it
    is listed already the document is unchanged and the second item is the reference's
    message (answered with 200, as Hasura's `metadataAllowlistInsert` does).
    """
    _collection(md, args.collection, "$.args.collection")
    scope = _scope_json(args.scope)
    if allowlisted(md, args.collection):
        return md, (
            f'collection "{args.collection}" already exists in the allowlist, scope ignored;'
            " to change scope, use update_scope_of_collection_in_allowlist"
        )
    entry: JSON = {"collection": args.collection}
    if scope is not None:
        entry["scope"] = scope
    out = _editable(md)
    out.allowlist.append(entry)
    return out, None


def update_scope_of_collection_in_allowlist(md: Metadata, args: AllowlistEntry) -> Metadata:
    """Replace the scope of an allow-listed collection; 400 `not-exists` for no collection,
    400 `not-found` when it is not in the allow-list."""
    _collection(md, args.collection, "$.args.collection")
    if args.scope is None:
        raise SvcError("parse-failed", 'key "scope" not found', path="$.args")
    scope = _scope_json(args.scope)
    if not allowlisted(md, args.collection):
        raise SvcError(
            "not-found", f'collection "{args.collection}" doesn\'t exist in the allowlist'
        )
    out = _editable(md)
    for entry in out.allowlist:
        if entry.get("collection") == args.collection:
            entry.pop("scope", None)
            if scope is not None:
                entry["scope"] = scope
    return out


def drop_collection_from_allowlist(md: Metadata, args: DropCollectionFromAllowlist) -> Metadata:
    """Remove a collection from the allow-list; 400 `not-exists` for no such collection,
    400 `not-found` when it is not listed (Hasura's `dropCollectionFromAllowlist`)."""
    _collection(md, args.collection, "$.args.collection")
    if not allowlisted(md, args.collection):
        raise SvcError(
            "not-found",
            f'collection "{args.collection}" doesn\'t exist in the allowlist',
            path="$.args.collection",
        )
    out = _editable(md)
    out.allowlist = [e for e in out.allowlist if e.get("collection") != args.collection]
    return out


# --------------------------------------------------------------------------------------------
# REST endpoints


def split_url(url: str) -> list[str]:
    """Segments of a URL template (`a/:id` → `["a", ":id"]`)."""
    return url.split("/")


def url_variables(url: str) -> list[str]:
    """Names captured by a URL template, in order (`a/:id/:x` → `["id", "x"]`)."""
    return [s[1:] for s in split_url(url) if s.startswith(":")]


def endpoint_json(args: CreateRestEndpoint) -> JSON:
    """The stored form of a new endpoint (`comment` is kept, null or not, as the reference
    exports it)."""
    ref = args.definition.query
    return {
        "name": args.name,
        "url": args.url,
        "methods": list(args.methods),
        "definition": {
            "query": {"collection_name": ref.collection_name, "query_name": ref.query_name}
        },
        "comment": args.comment,
    }


def create_rest_endpoint(md: Metadata, args: CreateRestEndpoint) -> Metadata:
    """Add a REST endpoint (spec 2.10, 4.11).

    Raises 400 `parse-failed` for an empty name or URL, an empty or unknown method list;
    `already-exists` when the name is taken; `invalid-configuration` (reasons joined, the
    inconsistent objects in `internal`) when the new endpoint is inconsistent: its query is
    missing, is a subscription or not a single operation, its URL has an empty segment or
    an unnamed variable, captures a variable twice, or is ambiguous with another endpoint
    for a common method (Hasura's `runCreateEndpoint` / `buildSchemaCacheFor`).
    """
    if not args.url:
        raise SvcError("parse-failed", "empty string not allowed", path="$.url")
    if not args.name:
        raise SvcError("parse-failed", "empty string not allowed", path="$.name")
    if not args.methods:
        raise SvcError("parse-failed", "methods must be a non-empty list", path="$.args.methods")
    for i, method in enumerate(args.methods):
        if method not in METHODS:
            raise SvcError(
                "parse-failed",
                f"Method {method!r} not supported; expected one of {', '.join(METHODS)}",
                path=f"$.args.methods[{i}]",
            )
    if len(set(args.methods)) != len(args.methods):
        raise SvcError("parse-failed", "duplicate methods", path="$.args.methods")
    if find_endpoint(md, args.name) is not None:
        raise already_exists(f"Endpoint with name: {args.name} already exists")
    out = _editable(md)
    out.rest_endpoints.append(endpoint_json(args))
    mine = [i for i in endpoint_issues(out) if args.name in i.endpoints]
    if mine:
        raise SvcError(
            "invalid-configuration",
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
        drop = {str(e.get("name")) for e in md.rest_endpoints if e.get("url") == args.url}
        if not drop:
            raise not_exists(f"endpoint with url: {args.url} does not exist")
    else:
        raise SvcError("parse-failed", 'key "name" not found', path="$.args")
    out = _editable(md)
    out.rest_endpoints = [e for e in out.rest_endpoints if e.get("name") not in drop]
    return out


@dataclass(frozen=True)
class Resolved:
    """An endpoint whose stored query exists and is one query or mutation."""

    endpoint: JSON
    text: str
    document: DocumentNode
    operation: OperationDefinitionNode

    @property
    def name(self) -> str:
        """The endpoint's name."""
        return str(self.endpoint.get("name"))

    @property
    def segments(self) -> list[str]:
        """The URL template's segments."""
        return split_url(str(self.endpoint.get("url", "")))

    @property
    def methods(self) -> frozenset[str]:
        """The configured methods."""
        return frozenset(self.endpoint.get("methods") or ())


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


def _endpoint_issue(endpoint: JSON, reason: str) -> EndpointIssue:
    name = str(endpoint.get("name"))
    internal = {
        "definition": endpoint,
        "reason": reason,
        "name": f"rest_endpoint {name}",
        "type": "rest_endpoint",
    }
    return EndpointIssue(("rest_endpoint", name, reason), frozenset({name}), reason, internal)


def resolve_endpoint(md: Metadata, endpoint: JSON) -> Resolved | str:
    """The stored query an endpoint runs, or why it cannot run it (Hasura's
    `resolveEndpoint` reasons, prefixed `Inconsistent object: in endpoint <name>: `)."""
    name = endpoint.get("name")
    prefix = f"Inconsistent object: in endpoint {name}: "
    collection_name, query_name = endpoint_reference(endpoint)
    collection = find_collection(md, collection_name)
    if collection is None:
        return f'{prefix}query collection with name "{collection_name}" does not exist'
    listed = next((q for q in collection_queries(collection) if q.get("name") == query_name), None)
    if listed is None:
        return (
            f'{prefix}query with name "{query_name}" does not exist in collection'
            f' "{collection_name}"'
        )
    text = str(listed.get("query", ""))
    try:
        document = parse(text)
    except GraphQLError as exc:
        return f"{prefix}query with name {query_name} is not valid GraphQL: {exc.message}"
    ops = operations(document)
    if not ops:
        return f"{prefix}query with name {query_name} has no definitions."
    if len(ops) > 1:
        return f"{prefix}query with name {query_name} has multiple definitions."
    if ops[0].operation == OperationType.SUBSCRIPTION:
        return f"{prefix}query with name {query_name} is a subscription"
    return Resolved(endpoint, text, document, ops[0])


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
        url = str(r.endpoint.get("url", ""))
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
        urls = ", ".join(str(r.endpoint.get("url")) for r in members)
        reason = f"Ambiguous URL paths: {urls}"
        conflicts = [
            {**r.endpoint, "definition": {"query": r.text}, "comment": r.endpoint.get("comment")}
            for r in members
        ]
        names = frozenset(r.name for r in members)
        key = ("ambiguous", tuple(sorted(names)))
        out.append(EndpointIssue(key, names, reason, {"reason": reason, "conflicts": conflicts}))
    return out
