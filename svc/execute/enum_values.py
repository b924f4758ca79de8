"""Reading enum tables' values (Hasura's `is_enum`) into the catalog.

Enum values are part of the schema, so they are read when a schema is built from the
database (start, `reload_metadata`, a metadata change, a `run_sql` that changed the
catalog), never per request: a `run_sql` that only writes rows leaves the served values
as they were until the next of those (as the reference, whose `buildTableCache` reads
them with the table's other catalog information). Every reader of the database's shape
goes through `Database.introspect(conn, metadata)`, which calls `read_enum_rows`: the
server and `svc compile` see the same values.
"""

from __future__ import annotations

import asyncpg
import msgspec

from svc.catalog.introspect import DbCatalog, DbEnumRows, DbTable
from svc.ir.enums import key_columns
from svc.metadata.model import Metadata, QualifiedName
from svc.sql.enum_values import enum_rows_sql


async def read_enum_rows(
    conn: asyncpg.Connection, md: Metadata, catalog: DbCatalog, *, keep: bool = False
) -> DbCatalog:
    """`catalog` with `enum_rows` on every table `md` tracks with `is_enum` whose primary
    key is one `text` column (`svc.ir.enums.key_columns`), read now through `conn`; each
    table's read runs in a savepoint, so a Postgres error (a table the role may not read)
    is recorded in `DbEnumRows.error` and leaves the transaction usable. `keep`: tables
    that already hold rows keep them (only tables that just became enums are read). The
    same catalog object when nothing was read or nothing changed."""
    wanted = {(e.table.schema, e.table.name) for e in md.tables if e.is_enum}
    if not wanted and all(t.enum_rows is None for t in catalog.tables):
        return catalog
    tables: list[DbTable] = []
    changed = False
    for table in catalog.tables:
        new = table
        if (table.schema, table.name) not in wanted:
            if table.enum_rows is not None:
                new = msgspec.structs.replace(table, enum_rows=None)
        elif not (keep and table.enum_rows is not None):
            rows = await _read(conn, table)
            if rows != table.enum_rows:
                new = msgspec.structs.replace(table, enum_rows=rows)
        changed = changed or new is not table
        tables.append(new)
    return msgspec.structs.replace(catalog, tables=tuple(tables)) if changed else catalog


async def _read(conn: asyncpg.Connection, table: DbTable) -> DbEnumRows | None:
    key, comment = key_columns(table)
    if key is None:
        return None  # cannot be an enum: `svc.ir.enums.problems` says why
    sql = enum_rows_sql(
        QualifiedName(table.name, table.schema), key.name, comment.name if comment else None
    )
    try:
        async with conn.transaction():
            records = await conn.fetch(sql)
    except asyncpg.PostgresError as exc:
        return DbEnumRows(error=str(exc))
    return DbEnumRows(rows=tuple((r[0], r[1]) for r in records))
