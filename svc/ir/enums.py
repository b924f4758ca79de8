"""Enum tables (Hasura's `is_enum`): which tables may be one, their values, and which
columns take their enum type.

A table tracked with `is_enum: true` becomes the GraphQL enum `<table>_enum` (its
`custom_name` when customised) whose values are its primary key's texts, described by
its comment column. Rules and messages follow the reference,
`server/src-lib/Hasura/RQL/DDL/Schema/Enum.hs` and its successor
`Hasura/Backends/Postgres/DDL/Table.hs` (`fetchAndValidateEnumValues`):

- the primary key is one column of type `text`;
- besides it there is at most one column, of type `text` (the comment column);
- the table has at least one row, and every key is a GraphQL name other than `true`,
  `false` and `null`.

A table that breaks a rule is an inconsistent `table` object (it leaves the schema, and
what depends on it with it), reason `the table "x" cannot be used as an enum because …`
(one reason) or `… for the following reasons:` and a `  • ` line per reason (the
reference's `makeReasonMessage`). The rows are read with the catalog
(`svc.execute.enum_values`), so this module only judges what was read.

A column references an enum (`enum_references`) when a foreign key of that one column
points at an enum table's one-column primary key (`resolveEnumReferences`).
"""

from __future__ import annotations

import re
from dataclasses import replace

import msgspec

from svc.catalog.introspect import DbColumn, DbTable
from svc.errors import ErrorCode
from svc.ir.model import EnumValue, Inconsistency, Ir, Table
from svc.metadata.model import QualifiedName

# The reference's `G.mkName` (no reserved `__` rule) and its three excluded words.
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*\Z")
_NOT_VALUES = frozenset({"true", "false", "null"})

# How the reference prints a Postgres type (`PGScalarType`'s text) where `typname`
# differs; any other type prints as its `typname`.
_TYPE_TEXT = {
    "int2": "smallint",
    "int4": "integer",
    "int8": "bigint",
    "float4": "real",
    "bool": "boolean",
}


def is_enum_value_name(text: str) -> bool:
    """Whether `text` can be a GraphQL enum value (the reference's `mkValidEnumValueName`)."""
    return _NAME.match(text) is not None and text not in _NOT_VALUES


def _type_text(column: DbColumn) -> str:
    return _TYPE_TEXT.get(column.type_name, column.type_name)


def _is_text(column: DbColumn) -> bool:
    return column.type_name == "text" and column.type_category != "A"


def key_columns(db: DbTable) -> tuple[DbColumn | None, DbColumn | None]:
    """`(primary key column, comment column)` the values are read from: the key when it is
    one `text` column (else None: nothing is read), the comment column when exactly one
    other column exists and it is `text`."""
    pk = next((k.columns for k in db.constraints if k.kind == "p"), ())
    if len(pk) != 1:
        return None, None
    key = next((c for c in db.columns if c.name == pk[0]), None)
    if key is None or not _is_text(key):
        return None, None
    others = [c for c in db.columns if c.name != key.name]
    comment = others[0] if len(others) == 1 and _is_text(others[0]) else None
    return key, comment


def problems(db: DbTable) -> list[str]:
    """Why `db` cannot be an enum table, in the reference's order (key, columns, rows);
    empty when it can. Rows not read yet (`enum_rows` None) are not judged."""
    out: list[str] = []
    pk = next((k.columns for k in db.constraints if k.kind == "p"), ())
    key: DbColumn | None = None
    if not pk:
        out.append("the table must have a primary key")
    elif len(pk) > 1:
        out.append(
            f"the table\u2019s primary key must not span multiple columns ({', '.join(sorted(pk))})"
        )
    else:
        column = next((c for c in db.columns if c.name == pk[0]), None)
        if column is not None and _is_text(column):
            key = column
        elif column is not None:
            out.append(
                f'the table\u2019s primary key ("{column.name}") must have type "text", not type '
                f'"{_type_text(column)}"'
            )
    others = [c for c in db.columns if key is None or c.name != key.name]
    if len(others) == 1 and not _is_text(others[0]):
        out.append(
            f'the table\u2019s comment column ("{others[0].name}") must have type "text", not '
            f'type "{_type_text(others[0])}"'
        )
    elif len(others) > 1:
        out.append(
            "the table must have exactly one primary key and optionally one comment "
            f"column, not {len(others)} columns ({', '.join(sorted(c.name for c in others))})"
        )
    rows = db.enum_rows
    if key is None or rows is None:
        return out
    if rows.error is not None:
        return [*out, f"postgres error: {rows.error}"]
    if not rows.rows:
        out.append("the table must have at least one row")
    bad = sorted(text for text, _ in rows.rows if not is_enum_value_name(text))
    if len(bad) == 1:
        out.append(f'the value "{bad[0]}" is not a valid GraphQL enum value name')
    elif len(bad) == 2:
        out.append(f'the values "{bad[0]}" and "{bad[1]}" are not valid GraphQL enum value names')
    elif bad:
        out.append(
            f'the values {", ".join(bad[:-1])}, and "{bad[-1]}" are not valid GraphQL enum '
            "value names"
        )
    return out


def reasons_message(reasons: list[str]) -> str:
    """The reference's `makeReasonMessage`: `because <one>`, or a bullet list."""
    if len(reasons) == 1:
        return f"because {reasons[0]}"
    return "for the following reasons:\n" + "".join(f"  • {r}\n" for r in reasons)


def enum_issue(name: QualifiedName, db: DbTable) -> Inconsistency | None:
    """The inconsistent `table` object of an `is_enum` table that cannot be one, or None.
    Its error code is 400 `invalid-configuration` (what a metadata write that makes it
    answers, with the object under `internal`)."""
    reasons = problems(db)
    if not reasons:
        return None
    return Inconsistency(
        "table",
        msgspec.to_builtins(name),
        f'Inconsistent object: the table "{name}" cannot be used as an enum '
        + reasons_message(reasons),
        ErrorCode.INVALID_CONFIGURATION,
        f"table {name} in source default",
        name,
    )


def left_out_enums(issues: list[Inconsistency]) -> frozenset[QualifiedName]:
    """The `is_enum` tables `enum_issue` left out of a build (`issues` so far)."""
    return frozenset(
        i.table
        for i in issues
        if i.table is not None and i.type == "table" and " cannot be used as an enum " in i.reason
    )


def onto_left_out(
    issues: tuple[Inconsistency, ...], dropped: frozenset[QualifiedName]
) -> tuple[Inconsistency, ...]:
    """Relationship issues whose target is a left-out enum table, with the reference's
    reason for an object whose dependency is inconsistent: `table "x" is not tracked`,
    without the relationship's context (its `resolveDependencies`; the file
    `v1/set_table_is_enum/relationship_with_inconsistent_enum_table.yaml`)."""
    out = []
    for issue in issues:
        for name in dropped:
            if issue.reason.endswith(f": table {name.quoted()} is not tracked"):
                reason = f"Inconsistent object: table {name.quoted()} is not tracked"
                issue = replace(issue, reason=reason)
                break
        out.append(issue)
    return tuple(out)


def enum_values(db: DbTable) -> tuple[EnumValue, ...] | None:
    """The values of a valid enum table whose rows were read (None when not read)."""
    if db.enum_rows is None:
        return None
    return tuple(EnumValue(text, comment) for text, comment in db.enum_rows.rows)


def enum_type_name(table: Table) -> str:
    """`<table>_enum`: the table's GraphQL name (its `custom_name` when set, else the
    default `schema_table` form) plus `_enum` (the reference's `mkEnumTableTypeName`)."""
    return table.type_name("_enum")


_DERIVED = "svc.ir.enums"


def enum_references(ir: Ir) -> dict[QualifiedName, dict[str, Table]]:
    """Per table, each column that references an enum table, with that table (computed
    once per IR, `Ir.derived`). A column referencing two enum tables (the reference makes
    its table inconsistent) keeps its scalar type here."""
    found: dict[QualifiedName, dict[str, Table]] | None = ir.derived.get(_DERIVED)
    if found is not None:
        return found
    found = {}
    enums = {n: t for n, t in ir.tables.items() if t.enum_values and t.gql_name}
    if enums:
        for name, table in ir.tables.items():
            refs: dict[str, list[Table]] = {}
            for local, target, column in table.foreign_keys:
                enum = enums.get(target)
                if enum is not None and enum.primary_key == (column,):
                    refs.setdefault(local, []).append(enum)
            columns = {c: ts[0] for c, ts in refs.items() if len(ts) == 1}
            if columns:
                found[name] = columns
    ir.derived[_DERIVED] = found
    return found
