"""Pure metadata transitions: `(Metadata, args) -> Metadata`; tables and relationships here,
permissions and computed fields in `apply_permissions`, tracked functions in
`apply_functions`, dropping what an inconsistency names in `drop`, collections, the
allow-list and REST endpoints in `collections`, `allowlist` and `endpoints`.

These functions check only what the document itself can tell (already tracked, no such
relationship, dependants inside metadata). Whether a table or foreign key exists in Postgres
is decided later, when the IR is built against the catalog (`svc.ir.build`).

Documents are frozen (`svc.metadata.model`): each transition returns a new document made
with `msgspec.structs.replace`, which shares every part it did not change with its input.
Copying a whole document of thousands of tables would cost more than the rest of an
operation, and shared entries let `build_ir` recognise unchanged tables by identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET
from msgspec.structs import replace

from svc.errors import ErrorCode, SvcError, already_exists, not_exists
from svc.metadata.args import (
    CreateRelationship,
    DropRelationship,
    RenameRelationship,
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
    qualify,
)
from svc.metadata.names import (
    check_custom_column_names,
    check_custom_root_fields,
    check_relationship_name,
    check_table_configuration,
)


def replace_table(
    md: Metadata, name: QualifiedName, edit: Callable[[TableEntry], TableEntry]
) -> Metadata:
    """`md` with the (first) entry of table `name` replaced by `edit(entry)`; every other
    entry is shared. Raises `KeyError` when `name` is not tracked."""
    for i, entry in enumerate(md.tables):
        if entry.table == name:
            tables = (*md.tables[:i], edit(entry), *md.tables[i + 1 :])
            return replace(md, tables=tables)
    raise KeyError(name)


def tracked_entry(md: Metadata, raw: Any) -> tuple[QualifiedName, TableEntry]:
    """The name and entry of the table `raw` (`$.args.table`); 400 `parse-failed` for a bad
    name, `not-exists` when it is not tracked."""
    table = qualify(raw, "$.args.table")
    entry = md.table(table)
    if entry is None:
        raise not_exists(f"table {table.quoted()} does not exist", "$.args.table")
    return table, entry


def track_table(
    md: Metadata, table: QualifiedName, config: TableConfiguration | None, is_enum: bool
) -> Metadata:
    """Add `table`; raises 400 `already-tracked` (spec 7) when it is tracked already, and
    400 `parse-failed` when `config` names something that is not a GraphQL name
    (`svc.metadata.names.check_table_configuration`)."""
    check_table_configuration(config, "$.args.configuration")
    if md.table(table) is not None:
        raise SvcError(
            ErrorCode.ALREADY_TRACKED,
            f"view/table already tracked : {table.quoted()}",
            path="$.args",
        )
    entry = TableEntry(table=table, configuration=config, is_enum=is_enum)
    return replace(md, tables=(*md.tables, entry))


def untrack_table(md: Metadata, args: UntrackTable) -> Metadata:
    """Remove a table; raises 400 `already-untracked` when it is not tracked.

    Relationships of other tables that pointed at it become inconsistent; the caller
    (`svc.api.metadata`) turns them into a `dependency-error`, or drops them with `cascade`.
    """
    table = qualify(args.table, "$.args.table")
    if md.table(table) is None:
        raise SvcError(
            ErrorCode.ALREADY_UNTRACKED,
            f"view/table already untracked : {table.quoted()}",
            path="$.args",
        )
    return replace(md, tables=tuple(e for e in md.tables if e.table != table))


def create_relationship(md: Metadata, args: CreateRelationship, kind: str) -> Metadata:
    """Add an object (`kind="object"`) or array relationship.

    Raises 400 `not-exists` when the table is not tracked, `already-exists` when a
    relationship of that name exists, `parse-failed` when `using` has neither or both of
    `foreign_key_constraint_on` and `manual_configuration` (spec 2.4), and
    `validation-failed` when the name is not a GraphQL name (`svc.metadata.names`).
    """
    table = qualify(args.table, "$.args.table")
    using = args.using
    has_fk = using.foreign_key_constraint_on is not UNSET
    has_manual = using.manual_configuration is not UNSET
    if has_fk == has_manual:
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            "exactly one of foreign_key_constraint_on/manual_configuration is expected",
            path="$.args.using",
        )
    entry = md.table(table)
    if entry is None:
        raise not_exists(f"table {table.quoted()} does not exist", "$.args.table")
    if entry.relationship(args.name) is not None:
        raise already_exists(f'relationship "{args.name}" already exists', "$.args.name")
    check_relationship_name(args.name)
    rel = Relationship(name=args.name, using=using, comment=args.comment)

    def add(e: TableEntry) -> TableEntry:
        if kind == "object":
            return replace(e, object_relationships=(*e.object_relationships, rel))
        return replace(e, array_relationships=(*e.array_relationships, rel))

    return replace_table(md, table, add)


def without_relationship(entry: TableEntry, name: str) -> TableEntry:
    """`entry` without its relationship `name` (either kind)."""
    return replace(
        entry,
        object_relationships=tuple(r for r in entry.object_relationships if r.name != name),
        array_relationships=tuple(r for r in entry.array_relationships if r.name != name),
    )


def _edit_relationship(
    entry: TableEntry, name: str, edit: Callable[[Relationship], Relationship]
) -> TableEntry:
    """`entry` with its relationship `name` replaced by `edit(relationship)`."""
    return replace(
        entry,
        object_relationships=tuple(
            edit(r) if r.name == name else r for r in entry.object_relationships
        ),
        array_relationships=tuple(
            edit(r) if r.name == name else r for r in entry.array_relationships
        ),
    )


def drop_relationship(md: Metadata, args: DropRelationship) -> Metadata:
    """Remove a relationship; raises 400 `not-exists` when the table or it is missing."""
    table, entry = tracked_entry(md, args.table)
    if entry.relationship(args.relationship) is None:
        raise not_exists(
            f'relationship "{args.relationship}" does not exist', "$.args.relationship"
        )
    return replace_table(md, table, lambda e: without_relationship(e, args.relationship))


def rename_relationship(md: Metadata, args: RenameRelationship) -> Metadata:
    """Rename a relationship; 400 `not-exists` / `already-exists` as for create/drop,
    `validation-failed` when the new name is not a GraphQL name."""
    table, entry = tracked_entry(md, args.table)
    if entry.relationship(args.name) is None:
        raise not_exists(f'relationship "{args.name}" does not exist', "$.args.name")
    if entry.relationship(args.new_name) is not None:
        raise already_exists(f'relationship "{args.new_name}" already exists', "$.args")
    check_relationship_name(args.new_name)
    return replace_table(
        md,
        table,
        lambda e: _edit_relationship(e, args.name, lambda r: replace(r, name=args.new_name)),
    )


def set_relationship_comment(md: Metadata, args: SetRelationshipComment) -> Metadata:
    """Set or clear a relationship's comment; 400 `not-exists` when there is none."""
    table, entry = tracked_entry(md, args.table)
    if entry.relationship(args.name) is None:
        raise not_exists(f'relationship "{args.name}" does not exist', "$.args.name")
    return replace_table(
        md,
        table,
        lambda e: _edit_relationship(e, args.name, lambda r: replace(r, comment=args.comment)),
    )


def set_table_customization(md: Metadata, args: SetTableCustomization) -> Metadata:
    """Replace a tracked table's configuration; 400 `not-exists` when not tracked,
    `parse-failed` for a name that is not a GraphQL name (`check_table_configuration`)."""
    table = qualify(args.table, "$.args.table")
    check_table_configuration(args.configuration, "$.args.configuration")
    if md.table(table) is None:
        raise not_exists(f"table {table.quoted()} does not exist", "$.args.table")
    return replace_table(md, table, lambda e: replace(e, configuration=args.configuration))


def set_table_custom_fields(md: Metadata, args: SetTableCustomFields) -> Metadata:
    """The deprecated `set_table_custom_fields`: replace the custom root fields and column
    names, keeping the rest of the configuration. Raises 400 `parse-failed` for a name that
    is not a GraphQL name and for duplicate root fields (`svc.metadata.names`)."""
    table, _ = tracked_entry(md, args.table)
    try:
        roots = msgspec.convert(args.custom_root_fields, CustomRootFields)
    except msgspec.ValidationError as exc:
        raise convert_error(exc, "$.args.custom_root_fields") from None
    check_custom_root_fields(roots, "$.args.custom_root_fields")
    check_custom_column_names(args.custom_column_names, "$.args.custom_column_names")

    def edit(entry: TableEntry) -> TableEntry:
        config = replace(
            entry.configuration or TableConfiguration(),
            custom_root_fields=roots,
            custom_column_names=dict(args.custom_column_names),
        )
        return replace(entry, configuration=config)

    return replace_table(md, table, edit)
