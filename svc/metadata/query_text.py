"""Stored GraphQL texts of query collections: parsing, the `@cached` directive, operations.

Shared by collections (a query must parse), REST endpoints (which operation an endpoint
runs) and the API layer (`svc.api.rest`, `svc.api.collections`).
"""

from __future__ import annotations

import copy

from graphql import (
    DirectiveNode,
    DocumentNode,
    GraphQLError,
    IntValueNode,
    OperationDefinitionNode,
    parse,
)

from svc.errors import ErrorCode, SvcError

CACHED_DEFAULT_TTL = 60
"""`@cached` without `ttl` (Hasura's directive default, in seconds)."""


def parse_query(text: str, path: str) -> DocumentNode:
    """Parse a stored query; raises 400 `parse-failed` at `path` when it is not GraphQL."""
    try:
        return parse(text)
    except GraphQLError as exc:
        message = f"not a valid graphql query: {exc.message}"
        raise SvcError(ErrorCode.PARSE_FAILED, message, path=path) from None


def strip_cached(document: DocumentNode) -> tuple[DocumentNode, int | None]:
    """The document without the operation-level `@cached` directive, and its `ttl`.

    Hasura's schema declares `@cached(ttl: Int = 60, refresh: Boolean = false)` on queries;
    for REST endpoints the directive is removed before validation and the ttl only
    becomes the answer's `Cache-Control: max-age` (as the reference sends it);
    `/v1/graphql` honours it (`svc.api.response_cache`).
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
