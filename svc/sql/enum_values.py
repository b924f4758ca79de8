"""The statement that reads an enum table's values (Hasura's `is_enum`).

The reference reads `SELECT <key>, <comment or NULL> FROM <table>` when it builds the
schema (`Hasura/Backends/Postgres/DDL/Table.hs`, `fetchEnumValuesFromDb`); so does svc
(`svc.execute.enum_values`), with both columns as text.
"""

from __future__ import annotations

from svc.metadata.model import QualifiedName
from svc.sql.render import ident, qualified


def enum_rows_sql(table: QualifiedName, key: str, comment: str | None) -> str:
    """`SELECT "key"::text, "comment"::text FROM "schema"."table"` (`NULL::text` without a
    comment column)."""
    second = f"{ident(comment)}::text" if comment is not None else "NULL::text"
    return f"SELECT {ident(key)}::text, {second} FROM {qualified(table)}"
