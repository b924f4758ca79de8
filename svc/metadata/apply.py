"""Pure metadata transitions: `(Metadata, args) -> Metadata`.

These functions check only what the document itself can tell (already tracked, no such
relationship, dependants inside metadata). Whether a table or foreign key exists in Postgres
is decided later, when the IR is built against the catalog (`svc.ir.build`).

Inputs are never mutated: each function returns a new document, which shares every part it
did not change with its input (copy on write: `derive` copies the document's lists,
`own_table` / `own_function` replace one entry by a private deep copy before it is edited).
Copying a whole document of thousands of tables would cost more than the rest of an
operation, and shared entries let `build_ir` recognise unchanged tables by identity; so
no part of a document is ever changed in place once the document is in use.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
from msgspec import UNSET as _UNSET

from svc.errors import SvcError, already_exists, not_exists
from svc.metadata.args import (
    AddComputedField,
    CreatePermission,
    CreateRelationship,
    DropComputedField,
    DropPermission,
    DropRelationship,
    FunctionPermission,
    RenameRelationship,
    SetPermissionComment,
    SetRelationshipComment,
    SetTableCustomFields,
    SetTableCustomization,
    UntrackTable,
)
from svc.metadata.model import (
    CustomRootFields,
    Metadata,
    QualifiedName,
    Relationship,
    TableConfiguration,
    TableEntry,
    convert_error,
    decode_metadata,
    encode_metadata,
    qualify,
)
from svc.metadata.names import (
    check_computed_field_name,
    check_custom_column_names,
    check_custom_root_fields,
    check_relationship_name,
    check_table_configuration,
)


def clone(md: Metadata) -> Metadata:
    """A deep copy, for edits that reach every entry (renames); prefer `derive`.

    Copied through its JSON encoding: a document holds only what JSON holds (it is stored
    and reloaded as JSON), and msgspec does that many times faster than `copy.deepcopy`.
    """
    return decode_metadata(encode_metadata(md))


def derive(md: Metadata) -> Metadata:
    """A new document with `md`'s parts: its lists are its own (entries may be added,
    removed or replaced), the entries in them are shared with `md` and must not be edited
    in place (`own_table`, `own_function`)."""
    return msgspec.structs.replace(
        md,
        tables=list(md.tables),
        functions=list(md.functions),
        remote_schemas=list(md.remote_schemas),
        query_collections=list(md.query_collections),
        allowlist=list(md.allowlist),
        actions=list(md.actions),
        custom_types=dict(md.custom_types),
        cron_triggers=list(md.cron_triggers),
        rest_endpoints=list(md.rest_endpoints),
    )


def own_table(md: Metadata, name: QualifiedName) -> TableEntry:
    """The entry of `name` in `md` (a document from `derive`), replaced first by a deep copy
    that the caller may edit. Raises `KeyError` when `name` is not tracked."""
    for i, entry in enumerate(md.tables):
        if entry.table == name:
            mine = copy.deepcopy(entry)
            md.tables[i] = mine
            return mine
    raise KeyError(name)


def own_function(md: Metadata, name: QualifiedName) -> dict[str, Any]:
    """The `functions` entry of `name` in `md` (a document from `derive`), replaced first
    by a deep copy that the caller may edit. Raises `KeyError` when it is not tracked."""
    for i, entry in enumerate(md.functions):
        if qualify(entry.get("function")) == name:
            mine: dict[str, Any] = copy.deepcopy(entry)
            md.functions[i] = mine
            return mine
    raise KeyError(name)


def track_table(
    md: Metadata, table: QualifiedName, config: TableConfiguration | None, is_enum: bool
) -> Metadata:
    """Add `table`; raises 400 `already-tracked` (spec 7) when it is tracked already, and
    400 `parse-failed` when `config` names something that is not a GraphQL name
    (`svc.metadata.names.check_table_configuration`)."""
    check_table_configuration(config, "$.args.configuration")
    if md.table(table) is not None:
        raise SvcError(
            "already-tracked", f"view/table already tracked : {table.quoted()}", path="$.args"
        )
    out = derive(md)
    out.tables.append(TableEntry(table=table, configuration=config, is_enum=is_enum))
    return out


def untrack_table(md: Metadata, args: UntrackTable) -> Metadata:
    """Remove a table; raises 400 `already-untracked` when it is not tracked.

    Relationships of other tables that pointed at it become inconsistent; the caller
    (`svc.api.metadata`) turns them into a `dependency-error`, or drops them with `cascade`.
    """
    table = qualify(args.table, "$.args.table")
    if md.table(table) is None:
        raise SvcError(
            "already-untracked", f"view/table already untracked : {table.quoted()}", path="$.args"
        )
    out = derive(md)
    out.tables = [e for e in out.tables if e.table != table]
    return out


def create_relationship(md: Metadata, args: CreateRelationship, kind: str) -> Metadata:
    """Add an object (`kind="object"`) or array relationship.

    Raises 400 `not-exists` when the table is not tracked, `already-exists` when a
    relationship of that name exists, `parse-failed` when `using` has neither or both of
    `foreign_key_constraint_on` and `manual_configuration` (spec 2.4), and
    `validation-failed` when the name is not a GraphQL name (`svc.metadata.names`).
    """
    table = qualify(args.table, "$.args.table")
    using = args.using
    has_fk = using.foreign_key_constraint_on is not _UNSET
    has_manual = using.manual_configuration is not _UNSET
    if has_fk == has_manual:
        raise SvcError(
            "parse-failed",
            "exactly one of foreign_key_constraint_on/manual_configuration is expected",
            path="$.args.using",
        )
    entry = md.table(table)
    if entry is None:
        raise not_exists(f"table {table.quoted()} does not exist", "$.args.table")
    if entry.relationship(args.name) is not None:
        raise already_exists(f'relationship "{args.name}" already exists', "$.args.name")
    check_relationship_name(args.name)
    out = derive(md)
    target = own_table(out, table)
    rel = Relationship(name=args.name, using=using, comment=args.comment)
    (target.object_relationships if kind == "object" else target.array_relationships).append(rel)
    return out


def drop_relationship(md: Metadata, args: DropRelationship) -> Metadata:
    """Remove a relationship; raises 400 `not-exists` when the table or it is missing."""
    table = qualify(args.table, "$.args.table")
    entry = md.table(table)
    if entry is None:
        raise not_exists(f"table {table.quoted()} does not exist", "$.args.table")
    if entry.relationship(args.relationship) is None:
        raise not_exists(
            f'relationship "{args.relationship}" does not exist', "$.args.relationship"
        )
    out = derive(md)
    target = own_table(out, table)
    remove_relationship(target, args.relationship)
    return out


def set_table_customization(md: Metadata, args: SetTableCustomization) -> Metadata:
    """Replace a tracked table's configuration; 400 `not-exists` when not tracked,
    `parse-failed` for a name that is not a GraphQL name (`check_table_configuration`)."""
    table = qualify(args.table, "$.args.table")
    check_table_configuration(args.configuration, "$.args.configuration")
    if md.table(table) is None:
        raise not_exists(f"table {table.quoted()} does not exist", "$.args.table")
    out = derive(md)
    entry = own_table(out, table)
    entry.configuration = args.configuration
    return out


def remove_relationship(entry: TableEntry, name: str) -> None:
    """Drop relationship `name` from `entry` in place (used on a fresh clone only)."""
    entry.object_relationships = [r for r in entry.object_relationships if r.name != name]
    entry.array_relationships = [r for r in entry.array_relationships if r.name != name]


PERMISSION_TYPES = ("insert", "select", "update", "delete")


def _permissions(entry: TableEntry, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = getattr(entry, f"{kind}_permissions")
    return found


def _tracked_entry(md: Metadata, raw: Any) -> tuple[QualifiedName, TableEntry]:
    table = qualify(raw, "$.args.table")
    entry = md.table(table)
    if entry is None:
        raise not_exists(f"table {table.quoted()} does not exist", "$.args.table")
    return table, entry


def create_permission(md: Metadata, args: CreatePermission, kind: str) -> Metadata:
    """Add a `kind` permission for a role; 400 `permission-error` when one exists (spec 7)."""
    table, entry = _tracked_entry(md, args.table)
    if any(p.get("role") == args.role for p in _permissions(entry, kind)):
        raise SvcError(
            "permission-error",
            f'{kind} permission on "{table}" for role "{args.role}" already exists',
            path="$.args",
        )
    out = derive(md)
    target = own_table(out, table)
    item: dict[str, Any] = {"role": args.role, "permission": args.permission}
    if args.comment is not None:
        item["comment"] = args.comment
    _permissions(target, kind).append(item)
    return out


def drop_permission(md: Metadata, args: DropPermission, kind: str) -> Metadata:
    """Remove a role's `kind` permission; 400 `permission-error` when there is none."""
    table, entry = _tracked_entry(md, args.table)
    if not any(p.get("role") == args.role for p in _permissions(entry, kind)):
        raise SvcError(
            "permission-error",
            f'{kind} permission on "{table}" for role "{args.role}" does not exist',
            path="$.args",
        )
    out = derive(md)
    target = own_table(out, table)
    setattr(
        target,
        f"{kind}_permissions",
        [p for p in _permissions(target, kind) if p.get("role") != args.role],
    )
    return out


def set_permission_comment(md: Metadata, args: SetPermissionComment) -> Metadata:
    """Set or clear (null) the comment of a permission."""
    if args.type not in PERMISSION_TYPES:
        raise SvcError("parse-failed", f"unknown permission type {args.type!r}", path="$.args.type")
    drop_permission(md, DropPermission(args.table, args.role), args.type)  # checks it exists
    table = qualify(args.table)
    out = derive(md)
    target = own_table(out, table)
    for p in _permissions(target, args.type):
        if p.get("role") == args.role:
            if args.comment is None:
                p.pop("comment", None)
            else:
                p["comment"] = args.comment
    return out


def rename_relationship(md: Metadata, args: RenameRelationship) -> Metadata:
    """Rename a relationship; 400 `not-exists` / `already-exists` as for create/drop,
    `validation-failed` when the new name is not a GraphQL name."""
    table, entry = _tracked_entry(md, args.table)
    if entry.relationship(args.name) is None:
        raise not_exists(f'relationship "{args.name}" does not exist', "$.args.name")
    if entry.relationship(args.new_name) is not None:
        raise already_exists(f'relationship "{args.new_name}" already exists', "$.args")
    check_relationship_name(args.new_name)
    out = derive(md)
    target = own_table(out, table)
    for rel in (*target.object_relationships, *target.array_relationships):
        if rel.name == args.name:
            rel.name = args.new_name
    return out


def add_computed_field(md: Metadata, args: AddComputedField) -> Metadata:
    """Add a computed field; 400 `already-exists` when the name is taken, `not-supported`
    when it is not a GraphQL name (`check_computed_field_name`)."""
    table, entry = _tracked_entry(md, args.table)
    check_computed_field_name(args.name, table)
    if any(c.get("name") == args.name for c in entry.computed_fields):
        raise already_exists(f'computed field "{args.name}" already exists', "$.args.name")
    out = derive(md)
    target = own_table(out, table)
    item: dict[str, Any] = {"name": args.name, "definition": args.definition}
    if args.comment is not None:
        item["comment"] = args.comment
    target.computed_fields.append(item)
    return out


def drop_computed_field(md: Metadata, args: DropComputedField) -> Metadata:
    """Remove a computed field; 400 `not-exists` when there is none."""
    table, entry = _tracked_entry(md, args.table)
    if not any(c.get("name") == args.name for c in entry.computed_fields):
        raise not_exists(f'computed field "{args.name}" does not exist', "$.args.name")
    out = derive(md)
    target = own_table(out, table)
    target.computed_fields = [c for c in target.computed_fields if c.get("name") != args.name]
    return out


def set_relationship_comment(md: Metadata, args: SetRelationshipComment) -> Metadata:
    """Set or clear a relationship's comment; 400 `not-exists` when there is none."""
    table, entry = _tracked_entry(md, args.table)
    if entry.relationship(args.name) is None:
        raise not_exists(f'relationship "{args.name}" does not exist', "$.args.name")
    out = derive(md)
    target = own_table(out, table)
    rel = target.relationship(args.name)
    assert rel is not None
    rel.comment = args.comment
    return out


def set_table_custom_fields(md: Metadata, args: SetTableCustomFields) -> Metadata:
    """The deprecated `set_table_custom_fields`: replace the custom root fields and column
    names, keeping the rest of the configuration. Raises 400 `parse-failed` for a name that
    is not a GraphQL name and for duplicate root fields (`svc.metadata.names`)."""
    table, _ = _tracked_entry(md, args.table)
    try:
        roots = msgspec.convert(args.custom_root_fields, CustomRootFields)
    except msgspec.ValidationError as exc:
        raise convert_error(exc, "$.args.custom_root_fields") from None
    check_custom_root_fields(roots, "$.args.custom_root_fields")
    check_custom_column_names(args.custom_column_names, "$.args.custom_column_names")
    out = derive(md)
    entry = own_table(out, table)
    config = entry.configuration or TableConfiguration()
    config.custom_root_fields = roots
    config.custom_column_names = dict(args.custom_column_names)
    entry.configuration = config
    return out


def _function_entry(md: Metadata, raw: Any) -> dict[str, Any]:
    """The entry of function `raw` in `md` (a document from `derive`), made private to it
    (`own_function`); 400 `not-exists` when the function is not tracked."""
    name = qualify(raw, "$.args.function")
    try:
        return own_function(md, name)
    except KeyError:
        raise not_exists(f"function {name.quoted()} is not tracked", "$.args.function") from None


def create_function_permission(md: Metadata, args: FunctionPermission) -> Metadata:
    """Let `role` call a tracked function (spec 4.6 rule 5); 400 `already-exists` when it
    may already. Whether the role may select the function's table is checked by the IR."""
    out = derive(md)
    entry = _function_entry(out, args.function)
    perms = entry.setdefault("permissions", [])
    if any(p.get("role") == args.role for p in perms):
        raise already_exists(
            f'permission of role "{args.role}" already exists for function', "$.args"
        )
    perms.append({"role": args.role})
    return out


def drop_function_permission(md: Metadata, args: FunctionPermission) -> Metadata:
    """Remove a role's function permission; 400 `not-exists` when there is none."""
    out = derive(md)
    entry = _function_entry(out, args.function)
    perms = [p for p in entry.get("permissions", []) if p.get("role") != args.role]
    if len(perms) == len(entry.get("permissions", [])):
        raise not_exists(f'permission of role "{args.role}" does not exist', "$.args")
    if perms:
        entry["permissions"] = perms
    else:
        entry.pop("permissions", None)
    return out
