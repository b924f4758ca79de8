"""Pure transitions `(Metadata, args) -> Metadata` of table permissions and computed fields
(see `svc.metadata.apply` for the rules all transitions follow).

A permission body is converted to its typed rule (`svc.metadata.permission_model`) here,
so a value of the wrong type is 400 `parse-failed` at its path under `$.args.permission`;
what it names (columns, relationships, session variables) is resolved by the IR.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET
from msgspec.structs import replace

from svc.errors import ErrorCode, SvcError, already_exists, not_exists
from svc.metadata import session_names
from svc.metadata.apply import replace_table, tracked_entry
from svc.metadata.args import (
    AddComputedField,
    CreatePermission,
    DropComputedField,
    DropPermission,
    SetPermissionComment,
    parse_args,
)
from svc.metadata.function_model import ComputedField, ComputedFieldDefinition
from svc.metadata.model import Metadata, TableEntry
from svc.metadata.names import check_computed_field_name
from svc.metadata.permission_model import PERMISSION_TYPES, RULES, Permission
from svc.metadata.root_fields import check_root_fields


def permissions_of(entry: TableEntry, kind: str) -> tuple[Permission[Any], ...]:
    """The `<kind>_permissions` of a table entry (`kind`: insert, select, update,
    delete)."""
    found: tuple[Permission[Any], ...] = getattr(entry, f"{kind}_permissions")
    return found


def with_permissions(
    entry: TableEntry, kind: str, permissions: tuple[Permission[Any], ...]
) -> TableEntry:
    """`entry` with its `<kind>_permissions` replaced."""
    changed: TableEntry = replace(entry, **{f"{kind}_permissions": permissions})
    return changed


def without_permission(entry: TableEntry, kind: str, role: str) -> TableEntry:
    """`entry` without the `kind` permission of `role`."""
    kept = tuple(p for p in permissions_of(entry, kind) if p.role != role)
    return with_permissions(entry, kind, kept)


def create_permission(md: Metadata, args: CreatePermission, kind: str) -> Metadata:
    """Add a `kind` permission for a role: 400 `not-exists` when the table is not tracked,
    `permission-error` when the role has one (spec 7), `parse-failed` when a value of the
    body has the wrong type (a select permission's root field lists: `check_root_fields`)."""
    table, entry = tracked_entry(md, args.table)
    if any(p.role == args.role for p in permissions_of(entry, kind)):
        raise SvcError(
            ErrorCode.PERMISSION_ERROR,
            f'{kind} permission on "{table}" for role "{args.role}" already exists',
            path="$.args",
        )
    body = args.permission
    if kind == "select":  # root field lists as the reference parses them
        body = check_root_fields(body, "$.args.permission")
    rule = parse_args(RULES[kind], body, "$.args.permission")
    session_names.check_rule(rule, "$.args.permission")  # the other spelling: refused
    comment = UNSET if args.comment is None else args.comment
    item = Permission(role=args.role, permission=rule, comment=comment)
    return replace_table(
        md, table, lambda e: with_permissions(e, kind, (*permissions_of(e, kind), item))
    )


def drop_permission(md: Metadata, args: DropPermission, kind: str) -> Metadata:
    """Remove a role's `kind` permission; 400 `not-exists` when the table is not tracked,
    `permission-error` when there is none."""
    table, entry = tracked_entry(md, args.table)
    if not any(p.role == args.role for p in permissions_of(entry, kind)):
        raise SvcError(
            ErrorCode.PERMISSION_ERROR,
            f'{kind} permission on "{table}" for role "{args.role}" does not exist',
            path="$.args",
        )
    return replace_table(md, table, lambda e: without_permission(e, kind, args.role))


def set_permission_comment(md: Metadata, args: SetPermissionComment) -> Metadata:
    """Set or clear (null) the comment of a permission; 400 `parse-failed` for an unknown
    `type`, else as `drop_permission` when there is no such permission."""
    if args.type not in PERMISSION_TYPES:
        raise SvcError(
            ErrorCode.PARSE_FAILED, f"unknown permission type {args.type!r}", path="$.args.type"
        )
    drop_permission(md, DropPermission(args.table, args.role), args.type)  # checks it exists
    table, _ = tracked_entry(md, args.table)
    comment = UNSET if args.comment is None else args.comment

    def edit(entry: TableEntry) -> TableEntry:
        perms = tuple(
            replace(p, comment=comment) if p.role == args.role else p
            for p in permissions_of(entry, args.type)
        )
        return with_permissions(entry, args.type, perms)

    return replace_table(md, table, edit)


def add_computed_field(md: Metadata, args: AddComputedField) -> Metadata:
    """Add a computed field; 400 `already-exists` when the name is taken, `not-supported`
    when it is not a GraphQL name (`check_computed_field_name`), `parse-failed` when the
    definition has a value of the wrong type (at `$.args.definition…`)."""
    table, entry = tracked_entry(md, args.table)
    check_computed_field_name(args.name, table)
    if any(c.name == args.name for c in entry.computed_fields):
        raise already_exists(f'computed field "{args.name}" already exists', "$.args.name")
    definition = parse_args(ComputedFieldDefinition, args.definition, "$.args.definition")
    comment = UNSET if args.comment is None else args.comment
    item = ComputedField(name=args.name, definition=definition, comment=comment)
    return replace_table(
        md, table, lambda e: replace(e, computed_fields=(*e.computed_fields, item))
    )


def without_computed_field(entry: TableEntry, name: str) -> TableEntry:
    """`entry` without its computed field `name`."""
    return replace(entry, computed_fields=tuple(c for c in entry.computed_fields if c.name != name))


def drop_computed_field(md: Metadata, args: DropComputedField) -> Metadata:
    """Remove a computed field; 400 `not-exists` when there is none."""
    table, entry = tracked_entry(md, args.table)
    if not any(c.name == args.name for c in entry.computed_fields):
        raise not_exists(f'computed field "{args.name}" does not exist', "$.args.name")
    return replace_table(md, table, lambda e: without_computed_field(e, args.name))
