"""Resolve a table's object and array relationships against the catalog (spec 2.4).

A relationship names its target by a foreign key (on this table, or `{table, columns}` on
the target pointing here) or by a manual column mapping; the target must be tracked in
the owner's source (the `tables` given are that source's, so a target elsewhere is "not
tracked"), and the relationship names that source (`target_source`). A
relationship that does not resolve raises `SvcError` (its code and the reference's
reason), which `relationships` records as an inconsistency of the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from svc.catalog.introspect import DbColumn, DbTable
from svc.errors import ErrorCode, SvcError
from svc.ir.model import Inconsistency, Relationship, Table
from svc.metadata.model import QualifiedName, TableEntry, qualify
from svc.metadata.model import Relationship as MdRelationship
from svc.metadata.names import is_graphql_name
from svc.metadata.remote_schemas import source_definition


def relationships(
    entry: TableEntry,
    db: DbTable,
    owner: Table,
    tables: Mapping[QualifiedName, Table],
    index: dict[tuple[str, str], DbTable],
    issues: list[Inconsistency],
) -> list[Relationship]:
    """The relationships of `entry` (object ones first, document order) resolved against
    its catalog table `db`, the tracked `tables` and the catalog `index`; each that does
    not resolve (a name that is not a GraphQL name, a name taken by a column or another
    relationship, a missing column, foreign key or target) is appended to `issues` as
    `<kind>_relation` with its code and the reference's reason, and left out."""
    out: list[Relationship] = []
    for kind, rels in (
        ("object", entry.object_relationships),
        ("array", entry.array_relationships),
    ):
        for rel in rels:
            try:
                if not is_graphql_name(rel.name):  # a document stored before names were checked
                    raise SvcError(
                        ErrorCode.VALIDATION_FAILED,
                        f'cannot include "{rel.name}" in the GraphQL schema because '
                        " it is not a valid GraphQL identifier",
                    )
                if owner.column(rel.name) is not None or any(r.name == rel.name for r in out):
                    raise SvcError(
                        ErrorCode.ALREADY_EXISTS,
                        f"column/relationship {rel.name!r} of table {entry.table.quoted()} "
                        "already exists",
                    )
                if any(c.gql_name == rel.name for c in owner.columns):
                    raise SvcError(  # the reference's message (set_table_custom_fields tests)
                        ErrorCode.ALREADY_EXISTS,
                        f'custom column name "{rel.name}" of table {entry.table.quoted()} '
                        "already exists",
                    )
                out.append(_relationship(kind, rel, entry.table, db, tables, index))
            except SvcError as exc:
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
                        f'in relationship "{rel.name}": {exc.message}',
                        exc.code,
                        f"{kind}_relation {rel.name} in table {entry.table} in source default",
                        entry.table,
                        rel.name,
                    )
                )
    for raw in entry.remote_relationships:
        to_source = source_relationship(raw, entry.table, db, owner, tables, out, issues)
        if to_source is not None:
            out.append(to_source)
    return out


def source_relationship(
    raw: Any,
    owner_name: QualifiedName,
    db: DbTable,
    owner: Table,
    tables: Mapping[QualifiedName, Table],
    taken: list[Relationship],
    issues: list[Inconsistency],
) -> Relationship | None:
    """A remote relationship to a table of a source (`definition.to_source`) as a
    `Relationship` with `to_source` set, None for one to a remote schema or one that
    does not resolve (appended to `issues` as `remote_relationship`, the reference's
    `Inconsistent object: in table …: in remote relationship …`). One to another source
    is `svc.ir.source_joins`'s (None here)."""
    name = str(raw.get("name")) if isinstance(raw, dict) else ""
    try:
        d = source_definition(raw)
        if d is None:
            return None
        if not is_graphql_name(name):
            raise SvcError(
                ErrorCode.VALIDATION_FAILED, f'"{name}" is not a valid GraphQL identifier'
            )
        if owner.column(name) is not None or any(r.name == name for r in taken):
            raise SvcError(
                ErrorCode.ALREADY_EXISTS,
                f"field with name {name!r} already exists in table {owner_name.quoted()}",
            )
        if d["source"] != owner.source:
            return None  # to another source: `svc.ir.source_joins`
        target = _tracked(d["table"], tables)
        for local, far in d["field_mapping"]:
            if db_column(db, local) is None:
                raise SvcError(ErrorCode.NOT_EXISTS, f'no such column exists : "{local}"')
            if target.column(far) is None:
                raise SvcError(ErrorCode.NOT_EXISTS, f'no such column exists : "{far}"')
        mapping = d["field_mapping"]
        unique = _is_key(target, mapping)
        kind = d["relationship_type"]
        return Relationship(
            name, kind, d["table"], mapping, None, unique, False, target.source, to_source=True
        )
    except SvcError as exc:
        issues.append(
            Inconsistency(
                "remote_relationship",
                {
                    "table": msgspec.to_builtins(owner_name),
                    **(raw if isinstance(raw, dict) else {}),
                },
                f"Inconsistent object: in table {owner_name.quoted()}: in remote relationship "
                f'"{name}": {exc.message}',
                exc.code,
                f"remote_relationship {name} in table {owner_name} in source default",
                owner_name,
                name,
            )
        )
        return None


def _columns(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise SvcError(
        ErrorCode.INVALID_CONFIGURATION, "expected a column name or a list of column names"
    )


def _relationship(
    kind: str,
    rel: MdRelationship,
    owner: QualifiedName,
    db: DbTable,
    tables: Mapping[QualifiedName, Table],
    index: dict[tuple[str, str], DbTable],
) -> Relationship:
    using = rel.using
    manual: Any = using.manual_configuration
    if manual is not msgspec.UNSET:
        target = qualify(manual.remote_table)
        remote = _tracked(target, tables)
        for local, far in manual.column_mapping.items():
            if db_column(db, local) is None:
                raise SvcError(ErrorCode.NOT_EXISTS, f'no such column exists : "{local}"')
            if remote.column(far) is None:
                raise SvcError(ErrorCode.NOT_EXISTS, f'no such column exists : "{far}"')
        mapping = tuple(manual.column_mapping.items())
        unique = _is_key(remote, mapping)
        return Relationship(
            rel.name, kind, target, mapping, rel.comment, unique, target_source=remote.source
        )
    fk_on = using.foreign_key_constraint_on
    if isinstance(fk_on, dict):
        # {table, column(s)}: the foreign key lives on the remote table and points here.
        target = qualify(fk_on.get("table"))
        remote_cols = _columns(fk_on.get("columns", fk_on.get("column")))
        remote = _tracked(target, tables)
        remote_db = index.get((target.schema, target.name))
        assert remote_db is not None
        for col in remote_cols:
            if db_column(remote_db, col) is None:
                raise SvcError(ErrorCode.NOT_EXISTS, f'no such column exists : "{col}"')
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
        unique = _is_key(remote, pairs)
        return Relationship(
            rel.name, kind, target, pairs, rel.comment, unique, target_source=remote.source
        )
    if kind == "array":
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            "foreign_key_constraint_on of an array relationship needs a table",
        )
    cols = _columns(fk_on)
    for col in cols:
        if db_column(db, col) is None:
            raise SvcError(ErrorCode.NOT_EXISTS, f'no such column exists : "{col}"')
    fk = _one([f for f in db.foreign_keys if set(f.columns) == set(cols)])
    target = QualifiedName(name=fk.ref_table, schema=fk.ref_schema)
    remote = _tracked(target, tables)
    pairs = tuple(zip(fk.columns, fk.ref_columns, strict=True))
    required = all(not c.nullable for c in (db_column(db, col) for col in cols) if c)
    return Relationship(rel.name, kind, target, pairs, rel.comment, True, required, remote.source)


def _is_key(remote: Table, mapping: tuple[tuple[str, str], ...]) -> bool:
    """True when the remote columns of `mapping` cover a primary key or unique constraint."""
    remote_cols = {far for _, far in mapping}
    keys = [remote.primary_key, *(cols for _, cols in remote.unique_constraints)]
    return any(key and set(key) <= remote_cols for key in keys)


def _one(fks: list[Any]) -> Any:
    if not fks:
        raise SvcError(
            ErrorCode.INVALID_CONFIGURATION, "no foreign constraint exists on the given column(s)"
        )
    if len(fks) > 1:
        raise SvcError(
            ErrorCode.INVALID_CONFIGURATION,
            "more than one foreign key constraint exists on the given column(s)",
        )
    return fks[0]


def _tracked(name: QualifiedName, tables: Mapping[QualifiedName, Table]) -> Table:
    table = tables.get(name)
    if table is None:
        raise SvcError(ErrorCode.NOT_EXISTS, f"table {name.quoted()} is not tracked")
    return table


def db_column(db: DbTable, name: str) -> DbColumn | None:
    """The catalog column `name` of `db`, if any."""
    return next((c for c in db.columns if c.name == name), None)
