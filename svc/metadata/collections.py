"""Query collections in the metadata document: arguments, lookups and pure transitions
`(Metadata, args) -> Metadata` (inputs are never changed; frozen documents share every
part a transition does not replace).

Stored shape: `query_collections: [{name, definition: {queries: [{name, query}]},
comment?}]` (`svc.metadata.collection_model`). The allow-list and REST endpoints that name
collections are in `svc.metadata.allowlist` and `svc.metadata.endpoints`; whether a stored
query fits the GraphQL schema needs the schema and is decided in `svc.api.collections`.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET
from msgspec.structs import replace

from svc.errors import ErrorCode, SvcError, already_exists, not_exists
from svc.metadata.collection_model import CollectionDefinition, ListedQuery, QueryCollection
from svc.metadata.model import Metadata
from svc.metadata.plain_names import check_plain_name
from svc.metadata.query_text import parse_query

# --------------------------------------------------------------------------------------------
# Arguments


class CreateQueryCollection(msgspec.Struct):
    """`create_query_collection`: `{name, comment, definition: {queries}}`."""

    name: str
    definition: CollectionDefinition = CollectionDefinition()
    comment: str | None = None

    def __post_init__(self) -> None:
        check_plain_name(self.name, "name")


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


# --------------------------------------------------------------------------------------------
# Lookups


def find_collection(md: Metadata, name: str) -> QueryCollection | None:
    """The stored collection called `name`, if any."""
    return next((c for c in md.query_collections if c.name == name), None)


def collection(md: Metadata, name: str, path: str) -> QueryCollection:
    """The stored collection called `name`; 400 `not-exists` at `path` when there is none."""
    found = find_collection(md, name)
    if found is None:
        raise not_exists(f'query collection with name "{name}" does not exist', path)
    return found


def allowlisted(md: Metadata, name: str) -> bool:
    """Whether collection `name` is in the allow-list."""
    return any(e.collection == name for e in md.allowlist)


def dependent_endpoints(md: Metadata, name: str, query: str | None = None) -> list[str]:
    """Names of the endpoints that run a query of collection `name` (only `query`, if
    given)."""
    return [
        e.name
        for e in md.rest_endpoints
        if e.reference[0] == name and (query is None or e.reference[1] == query)
    ]


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _with_collection(md: Metadata, name: str, queries: tuple[ListedQuery, ...]) -> Metadata:
    """`md` with the queries of collection `name` replaced."""
    collections = tuple(
        replace(c, definition=CollectionDefinition(queries=queries)) if c.name == name else c
        for c in md.query_collections
    )
    return replace(md, query_collections=collections)


# --------------------------------------------------------------------------------------------
# Transitions


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
            ErrorCode.NOT_SUPPORTED,
            f"found duplicate query names {_quoted(duplicates)}",
            path="$.args.definition.queries",
        )
    for i, q in enumerate(args.definition.queries):
        parse_query(q.query, f"$.args.definition.queries[{i}].query")
    comment = UNSET if args.comment is None else args.comment
    entry = QueryCollection(name=args.name, definition=args.definition, comment=comment)
    return replace(md, query_collections=(*md.query_collections, entry))


def drop_query_collection(md: Metadata, args: DropQueryCollection) -> Metadata:
    """Remove a collection.

    Raises 400 `not-exists` when there is none. Without `cascade`, a collection in the
    allow-list or run by a REST endpoint is refused with 400 `dependency-error` (Hasura's
    allow-list message; spec 7's `cannot drop due to the following dependent objects` for
    endpoints); with `cascade` the allow-list entry and those endpoints go too.
    """
    collection(md, args.collection, "$.args.collection")
    in_allowlist = allowlisted(md, args.collection)
    endpoints = dependent_endpoints(md, args.collection)
    if not args.cascade:
        if in_allowlist:
            raise SvcError(
                ErrorCode.DEPENDENCY_ERROR,
                f'query collection with name "{args.collection}" is present in the allowlist;'
                " cannot proceed to drop. please use cascade to confirm you wish to drop it"
                " from the allowlist as well",
                path="$.args.collection",
            )
        if endpoints:
            names = ", ".join(f"rest_endpoint {n}" for n in endpoints)
            raise SvcError(
                ErrorCode.DEPENDENCY_ERROR,
                f"cannot drop due to the following dependent objects : {names}",
                path="$.args",
            )
    return replace(
        md,
        query_collections=tuple(c for c in md.query_collections if c.name != args.collection),
        allowlist=tuple(e for e in md.allowlist if e.collection != args.collection),
        rest_endpoints=tuple(e for e in md.rest_endpoints if e.name not in endpoints),
    )


def add_query_to_collection(md: Metadata, args: AddQueryToCollection) -> Metadata:
    """Append a query to a collection.

    Raises 400 `not-exists` (`$.args.collection_name`) when the collection is missing,
    `already-exists` when it has a query of that name, `parse-failed` when the query is not
    GraphQL (Hasura's `runAddQueryToCollection`).
    """
    found = collection(md, args.collection_name, "$.args.collection_name")
    if found.query(args.query_name) is not None:
        raise already_exists(
            f'query with name "{args.query_name}" already exists in collection'
            f' "{args.collection_name}"'
        )
    parse_query(args.query, "$.args.query")
    added = ListedQuery(name=args.query_name, query=args.query)
    return _with_collection(md, found.name, (*found.definition.queries, added))


def drop_query_from_collection(md: Metadata, args: DropQueryFromCollection) -> Metadata:
    """Remove a query from a collection.

    Raises 400 `not-exists` when the collection is missing and 400 `not-found` when it has
    no such query (Hasura's codes). An endpoint running the query becomes inconsistent,
    which the caller refuses (`svc.api.collections`).
    """
    found = collection(md, args.collection_name, "$.args.collection_name")
    if found.query(args.query_name) is None:
        raise SvcError(
            ErrorCode.NOT_FOUND,
            f'query with name "{args.query_name}" not found in collection "{args.collection_name}"',
            path="$.args",
        )
    kept = tuple(q for q in found.definition.queries if q.name != args.query_name)
    return _with_collection(md, found.name, kept)
