"""Execute a `run_sql` script and return only the last statement's result (spec 4.2).

All statements but the last run in one simple-protocol batch; the last is prepared to learn
whether it returns rows. Rows are read with `COPY (…) TO STDOUT` so every value is Postgres's
own text output, the way the reference returns them; statements COPY cannot wrap (`SHOW`,
`EXPLAIN`, …) are fetched and their values turned to text.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from svc.execute.copy_text import decode_copy_text
from svc.sql.split import first_keyword, split_statements

COPYABLE = frozenset({"SELECT", "WITH", "VALUES", "TABLE", "INSERT", "UPDATE", "DELETE"})
# The whole script is one transaction (so a failed metadata check undoes it); the script's
# own transaction brackets would end that transaction early, so they are skipped.
TRANSACTION_CONTROL = frozenset({"BEGIN", "START", "COMMIT", "END"})


class _Sink:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    async def __call__(self, chunk: bytes) -> None:
        self.chunks.append(chunk)


async def run_script(conn: asyncpg.Connection, sql: str) -> dict[str, Any]:
    """Run `sql` on `conn` (inside the caller's transaction).

    Returns `{"result_type": "CommandOk", "result": None}` or `{"result_type": "TuplesOk",
    "result": [[names…], [values as text or "NULL"…], …]}`. Raises `asyncpg.PostgresError`.
    """
    statements = [s for s in split_statements(sql) if first_keyword(s) not in TRANSACTION_CONTROL]
    if not statements:
        return {"result_type": "CommandOk", "result": None}
    *head, last = statements
    if head:
        # Statements may end in a `--` comment: the separator goes on its own line.
        await conn.execute("\n;\n".join(head))
    stmt = await conn.prepare(last)
    attrs = stmt.get_attributes()
    if not attrs:
        await conn.execute(last)
        return {"result_type": "CommandOk", "result": None}
    header = [a.name for a in attrs]
    if first_keyword(last) in COPYABLE:
        sink = _Sink()
        await conn.copy_from_query(last + "\n", output=sink)
        rows = decode_copy_text(b"".join(sink.chunks))
        body = [["NULL" if v is None else v for v in row] for row in rows]
    else:
        records = await stmt.fetch()
        body = [["NULL" if v is None else str(v) for v in r.values()] for r in records]
    return {"result_type": "TuplesOk", "result": [header, *body]}
