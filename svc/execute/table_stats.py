"""Postgres's own size statistics of a source's tables, for the answer-size estimate
(`svc.plan.answer_size`): each table's row count (`pg_class.reltuples`, or the live row
count the statistics collector keeps when the table was never analysed) and each column's
distinct values (`pg_stats.n_distinct`, negative meaning a fraction of the rows).

Read once per database when first needed, then again in the background at most every
`REFRESH_SECONDS` while requests use the last reading (a request never waits on it
after the first).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from svc.metadata.model import QualifiedName

REFRESH_SECONDS = 60.0

ROWS_SQL = """
SELECT n.nspname, c.relname,
       GREATEST(CASE WHEN c.reltuples >= 0 THEN c.reltuples END, s.n_live_tup::real)
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_stat_user_tables s ON s.relid = c.oid
WHERE c.relkind IN ('r', 'p', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%'
"""

DISTINCT_SQL = """
SELECT schemaname, tablename, attname, n_distinct
FROM pg_catalog.pg_stats
WHERE schemaname NOT IN ('pg_catalog', 'information_schema')
"""


@dataclass(frozen=True, slots=True)
class TableStats:
    """One reading: rows by `(schema, table)`, distinct counts by `(schema, table,
    column)` (already made counts: a fraction times the rows)."""

    row_counts: dict[tuple[str, str], float] = field(default_factory=dict)
    distinct_counts: dict[tuple[str, str, str], float] = field(default_factory=dict)

    def rows(self, table: QualifiedName) -> float | None:
        """The table's estimated rows, None when Postgres has none."""
        return self.row_counts.get((table.schema, table.name))

    def distinct(self, table: QualifiedName, column: str) -> float | None:
        """Distinct values of `column` of `table`, None when unknown."""
        return self.distinct_counts.get((table.schema, table.name, column))


def from_rows(rows: list[Any], distinct: list[Any]) -> TableStats:
    """A reading from the rows of `ROWS_SQL` and `DISTINCT_SQL`."""
    counts = {(r[0], r[1]): float(r[2]) for r in rows if r[2] is not None}
    out: dict[tuple[str, str, str], float] = {}
    for schema, table, column, n in distinct:
        if n is None:
            continue
        value = float(n)
        if value < 0:
            value = -value * counts.get((schema, table), 0.0)
        if value > 0:
            out[(schema, table, column)] = value
    return TableStats(counts, out)


class StatsCache:
    """The last reading of one database (`current`), refreshed in the background."""

    def __init__(self) -> None:
        self.reading: TableStats | None = None
        self.read_at = 0.0
        self._refresh: asyncio.Task[None] | None = None

    async def current(self, db: Any) -> TableStats:
        """The last reading of `db` (a `svc.execute.db.Database`): read now the first
        time, then refreshed in the background when older than `REFRESH_SECONDS`. A
        reading that fails leaves the last one (or an empty one: every table unknown)."""
        if self.reading is None:
            await self._read(db)
        elif time.monotonic() - self.read_at > REFRESH_SECONDS and self._refresh is None:
            self._refresh = asyncio.get_running_loop().create_task(self._read(db))
        return self.reading or TableStats()

    async def _read(self, db: Any) -> None:
        try:
            async with db.pool.acquire() as conn:
                rows = await conn.fetch(ROWS_SQL)
                distinct = await conn.fetch(DISTINCT_SQL)
            self.reading = from_rows(list(rows), list(distinct))
        except Exception:
            self.reading = self.reading or TableStats()
        finally:
            self.read_at = time.monotonic()
            self._refresh = None
