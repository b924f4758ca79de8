"""The allow-list in the metadata document: arguments and pure transitions
`(Metadata, args) -> Metadata`.

Stored shape: `allowlist: [{collection, scope?: {global: false, roles: [...]}}]` (no scope:
every role; `svc.metadata.collection_model`). Which queries a role may then run is decided
by `svc.api.allowlist`.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET
from msgspec.structs import replace

from svc.errors import ErrorCode, SvcError
from svc.metadata.collection_model import AllowlistItem, AllowlistScope
from svc.metadata.collections import allowlisted, collection
from svc.metadata.model import Metadata


class AllowlistEntry(msgspec.Struct):
    """`add_collection_to_allowlist` / `update_scope_of_collection_in_allowlist`:
    `{collection, scope}`."""

    collection: str
    scope: AllowlistScope | None = None


class DropCollectionFromAllowlist(msgspec.Struct):
    """`drop_collection_from_allowlist`: `{collection}`."""

    collection: str


def stored_scope(scope: AllowlistScope | None) -> AllowlistScope | None:
    """The `scope` to store (None for every role); raises 400 `parse-failed` at
    `$.args.scope` for roles with a global scope, no roles, or a role given twice."""
    roles = None if scope is None or scope.roles is UNSET else scope.roles
    if scope is None or scope.everyone:
        if roles is not None:
            raise SvcError(
                ErrorCode.PARSE_FAILED,
                "roles are not allowed when global is true",
                path="$.args.scope",
            )
        return None
    if not roles:
        raise SvcError(
            ErrorCode.PARSE_FAILED, "roles must be a non-empty list", path="$.args.scope"
        )
    if len(set(roles)) != len(roles):
        raise SvcError(
            ErrorCode.PARSE_FAILED, "duplicate roles are not allowed", path="$.args.scope"
        )
    return AllowlistScope(is_global=False, roles=tuple(roles))


def _item(name: str, scope: AllowlistScope | None) -> AllowlistItem:
    return AllowlistItem(collection=name, scope=UNSET if scope is None else scope)


def add_collection_to_allowlist(md: Metadata, args: AllowlistEntry) -> tuple[Metadata, str | None]:
    """Add a collection to the allow-list: `(new document, None)`.

    Raises 400 `not-exists` (`$.args.collection`) when there is no such collection. When it
    is listed already the document is unchanged and the second item is the reference's
    message (answered with 200, as Hasura's `metadataAllowlistInsert` does).
    """
    collection(md, args.collection, "$.args.collection")
    scope = stored_scope(args.scope)
    if allowlisted(md, args.collection):
        return md, (
            f'collection "{args.collection}" already exists in the allowlist, scope ignored;'
            " to change scope, use update_scope_of_collection_in_allowlist"
        )
    return replace(md, allowlist=(*md.allowlist, _item(args.collection, scope))), None


def update_scope_of_collection_in_allowlist(md: Metadata, args: AllowlistEntry) -> Metadata:
    """Replace the scope of an allow-listed collection; 400 `not-exists` for no collection,
    400 `not-found` when it is not in the allow-list."""
    collection(md, args.collection, "$.args.collection")
    if args.scope is None:
        raise SvcError(ErrorCode.PARSE_FAILED, 'key "scope" not found', path="$.args")
    scope = stored_scope(args.scope)
    if not allowlisted(md, args.collection):
        raise SvcError(
            ErrorCode.NOT_FOUND, f'collection "{args.collection}" doesn\'t exist in the allowlist'
        )
    items = tuple(
        _item(e.collection, scope) if e.collection == args.collection else e for e in md.allowlist
    )
    return replace(md, allowlist=items)


def drop_collection_from_allowlist(md: Metadata, args: DropCollectionFromAllowlist) -> Metadata:
    """Remove a collection from the allow-list; 400 `not-exists` for no such collection,
    400 `not-found` when it is not listed (Hasura's `dropCollectionFromAllowlist`)."""
    collection(md, args.collection, "$.args.collection")
    if not allowlisted(md, args.collection):
        raise SvcError(
            ErrorCode.NOT_FOUND,
            f'collection "{args.collection}" doesn\'t exist in the allowlist',
            path="$.args.collection",
        )
    return replace(md, allowlist=tuple(e for e in md.allowlist if e.collection != args.collection))
