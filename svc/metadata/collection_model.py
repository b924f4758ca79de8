"""Query collections, allow-list entries and REST endpoints as the metadata document stores
them (Hasura v2 export, spec 2.10 and 2.13):

* `query_collections`: `[{name, definition: {queries: [{name, query}]}, comment?}]`
* `allowlist`: `[{collection, scope?: {global, roles?}}]` (no scope: global)
* `rest_endpoints`: `[{name, url, methods, definition: {query: {collection_name,
  query_name}}, comment}]`

Frozen structs; optional keys default to `UNSET` so a document exports the keys it was
given (an endpoint made by `create_rest_endpoint` always has `comment`, null or not, as
the reference exports it). Keys the reference does not know are ignored.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from svc.metadata.plain_names import check_plain_name


class ListedQuery(msgspec.Struct, frozen=True):
    """One named query of a collection: `{name, query}` (GraphQL text)."""

    name: str
    query: str

    def __post_init__(self) -> None:
        check_plain_name(self.name, "name")


class CollectionDefinition(msgspec.Struct, frozen=True):
    """`definition` of a collection: `{queries: [ListedQuery]}` (`queries` is always
    exported, `[]` included)."""

    queries: tuple[ListedQuery, ...] = ()


class QueryCollection(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of `query_collections`."""

    name: str
    definition: CollectionDefinition
    comment: str | UnsetType | None = UNSET

    def __post_init__(self) -> None:
        check_plain_name(self.name, "name")

    def query(self, name: str) -> ListedQuery | None:
        """The query called `name`, if the collection has one."""
        return next((q for q in self.definition.queries if q.name == name), None)


class AllowlistScope(msgspec.Struct, frozen=True, omit_defaults=True):
    """`scope` of an allow-list entry: `{global: true}` or `{global: false, roles}`
    (absent `global`: true, Hasura's default)."""

    is_global: bool | UnsetType = msgspec.field(name="global", default=UNSET)
    roles: tuple[str, ...] | UnsetType | None = UNSET

    @property
    def everyone(self) -> bool:
        """True when the entry applies to every role."""
        return self.is_global is not False


class AllowlistItem(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of `allowlist`: a collection whose queries are allowed."""

    collection: str
    scope: AllowlistScope | UnsetType = UNSET

    def roles(self) -> tuple[str, ...] | None:
        """The roles the entry allows; None for every role."""
        scope = self.scope
        if scope is UNSET or scope.everyone:
            return None
        return () if scope.roles is UNSET or scope.roles is None else scope.roles


class QueryReference(msgspec.Struct, frozen=True):
    """`definition.query` of an endpoint: which stored query it runs."""

    collection_name: str
    query_name: str


class EndpointDefinition(msgspec.Struct, frozen=True):
    """`definition` of an endpoint: `{query: {collection_name, query_name}}`."""

    query: QueryReference


class RestEndpoint(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of `rest_endpoints`."""

    name: str
    url: str
    methods: tuple[str, ...]
    definition: EndpointDefinition

    def __post_init__(self) -> None:
        check_plain_name(self.name, "name")
        check_plain_name(self.url, "url")

    comment: str | UnsetType | None = UNSET

    @property
    def reference(self) -> tuple[str, str]:
        """`(collection_name, query_name)` the endpoint runs."""
        ref = self.definition.query
        return ref.collection_name, ref.query_name
