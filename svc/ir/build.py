"""Build the IR from a metadata document and an introspected catalog.

Collects every inconsistency instead of stopping at the first (design brief 2): the caller
decides whether a new one refuses a metadata write (`svc.api.metadata`) or is reported by
`get_inconsistent_metadata`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import msgspec

from svc.catalog.introspect import DbCatalog, DbColumn, DbTable
from svc.ir.functions import FunctionError, resolve_computed_field, resolve_function
from svc.ir.model import (
    SCALAR_NAMES,
    Column,
    ComputedField,
    Function,
    Inconsistency,
    Ir,
    Relationship,
    RootFields,
    Table,
)
from svc.ir.permissions import (
    FilterResolver,
    PermissionError_,
    TableShape,
    delete_permission,
    insert_permission,
    select_permission,
    update_permission,
)
from svc.metadata.model import Metadata, QualifiedName, TableEntry, qualify
from svc.metadata.model import Relationship as MdRelationship

GRAPHQL_NAME = re.compile(r"^[_A-Za-z][_0-9A-Za-z]*$")


def scalar_name(col: DbColumn) -> str:
    """GraphQL scalar of a column type (Hasura's names: `Int`, `bigint`, `String`, …)."""
    return SCALAR_NAMES.get(col.type_name, col.type_name)


def build_ir(md: Metadata, catalog: DbCatalog) -> Ir:
    """Resolve `md` against `catalog`; never raises for bad metadata, records it instead."""
    index = catalog.table_index()
    issues: list[Inconsistency] = []
    resolved: dict[QualifiedName, tuple[TableEntry, DbTable]] = {}
    for entry in md.tables:
        db = index.get((entry.table.schema, entry.table.name))
        if db is None:
            issues.append(
                Inconsistency(
                    "table",
                    msgspec.to_builtins(entry.table),
                    f"no such table/view exists in postgres : {entry.table.quoted()}",
                    "not-exists",
                    str(entry.table),
                    entry.table,
                )
            )
            continue
        resolved[entry.table] = (entry, db)
    tables: dict[QualifiedName, Table] = {}
    for name, (entry, db) in resolved.items():
        table = _table(entry, db, issues)
        if table is not None:
            tables[name] = table
    for name, table in list(tables.items()):
        entry, db = resolved[name]
        rels = _relationships(entry, db, tables, index, issues)
        if rels:
            tables[name] = _rebuilt(table, relationships=tuple(rels))
    fn_index = catalog.function_index()
    tracked = set(tables)
    for name, table in list(tables.items()):
        computed = _computed_fields(resolved[name][0], table, fn_index, tracked, issues)
        if computed:
            tables[name] = _rebuilt(table, computed_fields=computed)
    resolver = FilterResolver(
        {
            n: TableShape(
                frozenset(c.name for c in t.columns),
                {r.name: r.target for r in t.relationships},
                {c.name: c.returns_table for c in t.computed_fields},
            )
            for n, t in tables.items()
        }
    )
    for name, table in list(tables.items()):
        perms = {
            f"{kind}_permissions": _permissions(kind, resolved[name][0], table, resolver, issues)
            for kind in PERMISSION_KINDS
        }
        tables[name] = _rebuilt(table, **perms)
    functions = _functions(md, fn_index, tracked, issues)
    return Ir(tables=tables, inconsistencies=tuple(issues), functions=functions)


def _rebuilt(table: Table, **changes: Any) -> Table:
    """`table` with `changes`; the lookup maps are rebuilt by `Table.__post_init__`."""
    return replace(table, column_map={}, relationship_map={}, computed_field_map={}, **changes)


PERMISSION_KINDS = {
    "select": select_permission,
    "insert": insert_permission,
    "update": update_permission,
    "delete": delete_permission,
}


def _permissions(
    kind: str,
    entry: TableEntry,
    table: Table,
    resolver: FilterResolver,
    issues: list[Inconsistency],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    all_columns = tuple(c.name for c in table.columns)
    make = PERMISSION_KINDS[kind]
    for item in getattr(entry, f"{kind}_permissions"):
        role = str(item.get("role"))
        try:
            out[role] = make(role, item.get("permission") or {}, all_columns, table.name, resolver)
        except PermissionError_ as exc:
            issues.append(
                Inconsistency(
                    f"{kind}_permission",
                    {"table": msgspec.to_builtins(table.name), **item},
                    f"Inconsistent object: in table {table.name.quoted()}: in permission for "
                    f'role "{role}": {exc}',
                    "validation-failed",
                    f"{kind}_permission {role} in table {table.name} in source default",
                    table.name,
                    f"{role}.{kind}",
                )
            )
    return out


def _computed_fields(
    entry: TableEntry,
    table: Table,
    index: dict[tuple[str, str], list[Any]],
    tracked: set[QualifiedName],
    issues: list[Inconsistency],
) -> tuple[ComputedField, ...]:
    out: list[ComputedField] = []
    for item in entry.computed_fields:
        name = str(item.get("name"))
        try:
            if table.column(name) is not None or name in table.relationship_map:
                raise FunctionError(
                    f'column/relationship "{name}" already exists', "already-exists"
                )
            out.append(resolve_computed_field(item, table.name, index, tracked))
        except FunctionError as exc:
            issues.append(
                Inconsistency(
                    "computed_field",
                    {"table": msgspec.to_builtins(table.name), **item},
                    f"Inconsistent object: in table {table.name.quoted()}: in computed field "
                    f'"{name}": {exc.reason}',
                    exc.code,
                    f"computed_field {name} in table {table.name} in source default",
                    table.name,
                    name,
                )
            )
    return tuple(out)


def _functions(
    md: Metadata,
    index: dict[tuple[str, str], list[Any]],
    tracked: set[QualifiedName],
    issues: list[Inconsistency],
) -> dict[QualifiedName, Function]:
    out: dict[QualifiedName, Function] = {}
    for entry in md.functions:
        name = qualify(entry.get("function"))
        try:
            out[name] = resolve_function(entry, index, tracked)
        except FunctionError as exc:
            issues.append(
                Inconsistency(
                    "function",
                    entry,
                    f"Inconsistent object: in function {name.quoted()}: {exc.reason}",
                    exc.code,
                    f"function {name} in source default",
                )
            )
    return out


def _table(entry: TableEntry, db: DbTable, issues: list[Inconsistency]) -> Table | None:
    config = entry.configuration
    custom_columns: dict[str, str] = {}
    if config is not None:
        custom_columns.update(config.custom_column_names)
        for col_name, col_conf in config.column_config.items():
            if isinstance(col_conf.get("custom_name"), str):
                custom_columns[col_name] = col_conf["custom_name"]
    gql_name = (config.custom_name if config else None) or default_gql_name(entry.table)
    if not GRAPHQL_NAME.match(gql_name):
        gql_name = ""  # tracked, but absent from GraphQL until given a custom_name (Hasura)
    columns = tuple(
        Column(
            name=c.name,
            gql_name=custom_columns.get(c.name, c.name),
            pg_type=_cast_type(c),
            type_name=c.type_name,
            scalar=scalar_name(c),
            nullable=c.nullable,
            has_default=c.has_default,
            is_array=c.type_category == "A",
            comment=c.comment,
        )
        for c in db.columns
        if GRAPHQL_NAME.match(custom_columns.get(c.name, c.name))
    )
    pk = next((k.columns for k in db.constraints if k.kind == "p"), ())
    uniques = tuple((k.name, k.columns) for k in db.constraints)
    return Table(
        name=entry.table,
        gql_name=gql_name,
        kind=db.kind,
        columns=columns,
        primary_key=pk,
        unique_constraints=uniques,
        relationships=(),
        root_fields=_root_fields(gql_name, config.custom_root_fields if config else None),
        comment=(config.comment if config and config.comment else None) or db.comment,
        updatable=db.updatable if db.kind in ("v", "f") else (28 if db.kind in ("r", "p") else 0),
    )


# Casting to these without a length would truncate: `::character` is `char(1)`.
_UNBOUNDED = {"bpchar": "bpchar", "bit": "varbit"}


def _cast_type(col: DbColumn) -> str:
    """The type values are cast to: Postgres's spelling, except the length-bounded ones."""
    return _UNBOUNDED.get(col.type_name, col.type)


def default_gql_name(name: QualifiedName) -> str:
    """`author` for `public.author`, `s_author` for `s.author` (Hasura's scheme)."""
    return name.name if name.schema == "public" else f"{name.schema}_{name.name}"


def _root_fields(base: str, custom: Any) -> RootFields:
    def pick(key: str, default: str) -> str:
        value = getattr(custom, key, None) if custom is not None else None
        return value if isinstance(value, str) and value else default

    return RootFields(
        select=pick("select", base),
        select_by_pk=pick("select_by_pk", f"{base}_by_pk"),
        select_aggregate=pick("select_aggregate", f"{base}_aggregate"),
        insert=pick("insert", f"insert_{base}"),
        insert_one=pick("insert_one", f"insert_{base}_one"),
        update=pick("update", f"update_{base}"),
        update_by_pk=pick("update_by_pk", f"update_{base}_by_pk"),
        update_many=pick("update_many", f"update_{base}_many"),
        delete=pick("delete", f"delete_{base}"),
        delete_by_pk=pick("delete_by_pk", f"delete_{base}_by_pk"),
    )


class _RelError(Exception):
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def _relationships(
    entry: TableEntry,
    db: DbTable,
    tables: dict[QualifiedName, Table],
    index: dict[tuple[str, str], DbTable],
    issues: list[Inconsistency],
) -> list[Relationship]:
    out: list[Relationship] = []
    owner = tables[entry.table]
    for kind, rels in (
        ("object", entry.object_relationships),
        ("array", entry.array_relationships),
    ):
        for rel in rels:
            try:
                if owner.column(rel.name) is not None or any(r.name == rel.name for r in out):
                    raise _RelError(
                        "already-exists",
                        f"column/relationship {rel.name!r} of table {entry.table.quoted()} "
                        "already exists",
                    )
                out.append(_relationship(kind, rel, entry.table, db, tables, index))
            except _RelError as exc:
                definition = {
                    "name": rel.name,
                    "using": msgspec.to_builtins(rel.using),
                    "source": "default",
                    "comment": rel.comment,
                    "table": msgspec.to_builtins(entry.table),
                }
                issues.append(
                    Inconsistency(
                        f"{kind}_relation",
                        definition,
                        f"Inconsistent object: in table {entry.table.quoted()}: "
                        f'in relationship "{rel.name}": {exc.reason}',
                        exc.code,
                        f"{kind}_relation {rel.name} in table {entry.table} in source default",
                        entry.table,
                        rel.name,
                    )
                )
    return out


def _columns(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _RelError("invalid-configuration", "expected a column name or a list of column names")


def _relationship(
    kind: str,
    rel: MdRelationship,
    owner: QualifiedName,
    db: DbTable,
    tables: dict[QualifiedName, Table],
    index: dict[tuple[str, str], DbTable],
) -> Relationship:
    using = rel.using
    manual: Any = using.manual_configuration
    if manual is not msgspec.UNSET:
        target = qualify(manual.remote_table)
        remote = _tracked(target, tables)
        for local, far in manual.column_mapping.items():
            if db_column(db, local) is None:
                raise _RelError("not-exists", f'no such column exists : "{local}"')
            if remote.column(far) is None:
                raise _RelError("not-exists", f'no such column exists : "{far}"')
        mapping = tuple(manual.column_mapping.items())
        return Relationship(rel.name, kind, target, mapping, rel.comment, _is_key(remote, mapping))
    fk_on = using.foreign_key_constraint_on
    if isinstance(fk_on, dict):
        # {table, column(s)}: the foreign key lives on the remote table and points here.
        target = qualify(fk_on.get("table"))
        remote_cols = _columns(fk_on.get("columns", fk_on.get("column")))
        _tracked(target, tables)
        remote_db = index.get((target.schema, target.name))
        assert remote_db is not None
        for col in remote_cols:
            if db_column(remote_db, col) is None:
                raise _RelError("not-exists", f'no such column exists : "{col}"')
        fks = [
            fk
            for fk in remote_db.foreign_keys
            if set(fk.columns) == set(remote_cols)
            and (fk.ref_schema, fk.ref_table) == (owner.schema, owner.name)
        ]
        fk = _one(fks)
        order = {c: i for i, c in enumerate(fk.columns)}
        pairs = tuple(
            sorted(zip(fk.ref_columns, fk.columns, strict=True), key=lambda p: order[p[1]])
        )
        unique = _is_key(tables[target], pairs)
        return Relationship(rel.name, kind, target, pairs, rel.comment, unique)
    if kind == "array":
        raise _RelError(
            "parse-failed", "foreign_key_constraint_on of an array relationship needs a table"
        )
    cols = _columns(fk_on)
    for col in cols:
        if db_column(db, col) is None:
            raise _RelError("not-exists", f'no such column exists : "{col}"')
    fk = _one([f for f in db.foreign_keys if set(f.columns) == set(cols)])
    target = QualifiedName(name=fk.ref_table, schema=fk.ref_schema)
    _tracked(target, tables)
    pairs = tuple(zip(fk.columns, fk.ref_columns, strict=True))
    return Relationship(rel.name, kind, target, pairs, rel.comment, True)


def _is_key(remote: Table, mapping: tuple[tuple[str, str], ...]) -> bool:
    """True when the remote columns of `mapping` cover a primary key or unique constraint."""
    remote_cols = {far for _, far in mapping}
    keys = [remote.primary_key, *(cols for _, cols in remote.unique_constraints)]
    return any(key and set(key) <= remote_cols for key in keys)


def _one(fks: list[Any]) -> Any:
    if not fks:
        raise _RelError(
            "invalid-configuration", "no foreign constraint exists on the given column(s)"
        )
    if len(fks) > 1:
        raise _RelError(
            "invalid-configuration",
            "more than one foreign key constraint exists on the given column(s)",
        )
    return fks[0]


def _tracked(name: QualifiedName, tables: dict[QualifiedName, Table]) -> Table:
    table = tables.get(name)
    if table is None:
        raise _RelError("not-exists", f"table {name.quoted()} is not tracked")
    return table


def db_column(db: DbTable, name: str) -> DbColumn | None:
    """The catalog column `name` of `db`, if any."""
    return next((c for c in db.columns if c.name == name), None)
