"""Run a planned mutation operation (`svc.plan.operation.plan_operation`): every root field
in order, in one transaction.

Session variables are set transaction-locally (`svc.user`, as the reference's event
triggers read them), and so is the time limit of each statement (`statement_timeout`), in
the same statement. A failing root field rolls back all of them and the answer is a
GraphQL error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

import msgspec

from svc.api.nested_update import as_bytes, decode_exact, raw_json, run_nested_update
from svc.errors import SvcError
from svc.execute.db import Connection, Database, PostgresError
from svc.execute.errors import map_query_error
from svc.execute.params import resolve
from svc.ir.model import Table
from svc.metadata.model import QualifiedName
from svc.plan.mutation import Insert, InsertRow, MutationRoot, NestedUpdate
from svc.plan.namespaces import is_flat, nested_body
from svc.plan.nodes import Const, Param
from svc.session_vars import session_json
from svc.sql.live_watch import NOTIFY_WRITES_SQL
from svc.sql.mutation import render_answer_from_rows, render_insert_returning_row, render_write
from svc.sql.nested_update import render_insert_count
from svc.sql.render import Statement, render_root

_encode = msgspec.json.encode
# Parameters a multi-row insert statement may take (Postgres allows 65535).
MAX_PARAMS = 30_000
# The session variables and the statement time limit (milliseconds), both transaction-local,
# in one round trip.
SESSION_SQL = "SELECT set_config('svc.user', $1, true), set_config('statement_timeout', $2, true)"


class MutationRunner:
    """Executes planned mutation roots on one connection inside a transaction."""

    def __init__(
        self,
        conn: Connection,
        tables: dict[QualifiedName, Table],
        variables: dict[str, Any],
        session: dict[str, str],
        statement_timeout: str = "0",
        max_items: int = 0,
    ) -> None:
        self.conn = conn
        self.tables = tables
        self.variables = variables
        self.session = session
        self.statement_timeout = statement_timeout  # milliseconds as text, "0": none
        self.max_items = max_items  # rows a nested update's `_insert` may write; 0: any

    async def run(self, roots: Sequence[tuple[str, MutationRoot | str | None]]) -> bytes:
        """The `{"data": …}` body; raises `SvcError` (the caller's transaction rolls back)."""
        session = session_json(self.session)
        await self.conn.execute(SESSION_SQL, session, self.statement_timeout)
        values: list[bytes] = []
        for _, root in roots:
            if root is None or isinstance(root, str):  # `__typename` (of a namespace: str)
                values.append(_encode(root or "mutation_root"))
            else:
                values.append(await self._root(root))
        aliases = [alias for alias, _ in roots]
        if any(is_flat(alias) for alias in aliases):  # a source's namespace
            return nested_body(aliases, values)
        parts = [
            _encode(alias) + b":" + value for alias, value in zip(aliases, values, strict=True)
        ]
        return b'{"data":{' + b",".join(parts) + b"}}"

    async def _root(self, root: MutationRoot) -> bytes:
        if root.query is not None:
            stmt = render_root(root.query)
            text = await self._fetch(stmt)
            return b"null" if text is None else as_bytes(text)
        if root.many:
            answers = [await self._write(w, root) for w in root.writes]
            return b"[" + b",".join(answers) + b"]"
        return await self._write(root.writes[0], root)

    async def _fetch(self, stmt: Statement) -> Any:
        """The statement's value; with a permission check, raises 400 `permission-error`
        when a written row fails it (Hasura's message)."""
        if not stmt.check:
            args = resolve(stmt.params, self.variables, self.session)
            try:
                return await self.conn.fetchval(stmt.sql, *args)
            except PostgresError as exc:
                raise map_query_error(exc) from exc
        row = await self._fetch_row(stmt)
        return None if row is None else row[0]

    async def _fetch_row(self, stmt: Statement) -> Any:
        """The statement's first row (None: no row); with a permission check (its last
        column), raises 400 `permission-error` when a written row fails it."""
        args = resolve(stmt.params, self.variables, self.session)
        try:
            row = await self.conn.fetchrow(stmt.sql, *args)
        except PostgresError as exc:
            raise map_query_error(exc) from exc
        if row is not None and stmt.check and row[len(row) - 1] is False:
            raise SvcError(
                "permission-error",
                f"check constraint of an {stmt.check} permission has failed",
                path="$.selectionSet",
            )
        return row

    async def _write(self, write: Any, root: MutationRoot) -> bytes:
        if isinstance(write, NestedUpdate):  # statement by statement (`svc.api.nested_update`)
            text = await run_nested_update(self, write, root)
            return b"null" if text is None else as_bytes(text)
        if isinstance(write, Insert) and (write.nested or not write.rows):
            count, rows = await self._insert_rows(write, {})
            stmt = render_answer_from_rows(root, raw_json(b"[" + b",".join(rows) + b"]"), count)
        else:
            stmt = render_write(write, root)
        text = await self._fetch(stmt)
        return b"null" if text is None else as_bytes(text)

    async def _insert_rows(self, ins: Insert, fixed: dict[str, Any]) -> tuple[int, list[bytes]]:
        """Insert row by row: object relationships first (their keys fill the row), then the
        row, then array relationships (the row's keys fill theirs). Returns (rows written,
        the rows of `ins` as JSON texts, as Postgres wrote them)."""
        table = self.tables[ins.table]
        count = 0
        out: list[bytes] = []
        for row in ins.rows:
            values = dict(row.values)
            for nested in row.objects:
                n, children = await self._insert_rows(nested.insert, {})
                count += n
                if not children:
                    continue
                child = decode_exact(children[0])
                for near, far in nested.mapping:
                    values[near] = self._const(table, near, child.get(far))
            for column, value in fixed.items():
                values[column] = self._const(table, column, value)
            one = InsertRow(tuple(values.items()))
            stmt = render_insert_returning_row(
                Insert(ins.table, (one,), ins.on_conflict, ins.check)
            )
            text = await self._fetch(stmt)
            if text is None:
                continue  # ON CONFLICT DO NOTHING skipped it
            count += 1
            out.append(as_bytes(text))
            if row.arrays:
                written = decode_exact(text)
                for nested in row.arrays:
                    keys = {far: written.get(near) for near, far in nested.mapping}
                    count += await self._insert_many(nested.insert, [keys])
        return count, out

    async def _insert_many(self, ins: Insert, fixed: list[dict[str, Any]]) -> int:
        """Insert `ins`'s rows once per item of `fixed` (column values filling each copy);
        the rows written. Rows without relationships (and no upsert that updates, which
        may not touch a row twice in one statement) go in multi-row statements of at
        most `MAX_PARAMS` parameters; others row by row (`_insert_rows`)."""
        if not ins.rows or not fixed:
            return 0
        upsert = ins.on_conflict is not None and ins.on_conflict.update_columns
        if ins.nested or upsert:
            total = 0
            for values in fixed:
                n, _ = await self._insert_rows(ins, values)
                total += n
            return total
        table = self.tables[ins.table]
        rows: list[InsertRow] = []
        for values in fixed:
            consts = {c: self._const(table, c, v) for c, v in values.items()}
            rows.extend(InsertRow(tuple({**dict(r.values), **consts}.items())) for r in ins.rows)
        count = 0
        chunk: list[InsertRow] = []
        size = 0
        for i, row in enumerate(rows):
            chunk.append(row)
            size += len(row.values)
            if size >= MAX_PARAMS or i == len(rows) - 1:
                answer = await self._fetch_row(render_insert_count(replace(ins, rows=tuple(chunk))))
                count += int(answer[0])
                chunk, size = [], 0
        return count

    @staticmethod
    def _const(table: Table, column: str, value: Any) -> Param:
        col = table.column_map.get(column)
        if col is None:
            raise SvcError("not-exists", f'no such column exists : "{column}"')
        if isinstance(value, Decimal):  # `decode_exact`'s number: its digits as they came
            value = str(value)
        return Param(Const(value), col.pg_type)


async def execute_mutation(
    db: Database,
    tables: dict[QualifiedName, Table],
    roots: Sequence[tuple[str, MutationRoot | str | None]],
    variables: dict[str, Any],
    session: dict[str, str],
    timeout: float | None = None,
    max_items: int = 0,
) -> bytes:
    """Run `roots` in one transaction and answer the response body. `max_items` bounds
    the rows a nested update's `_insert` may write (0: none). Each statement may
    run `timeout` seconds (None: the server's `--statement-timeout`; 0: no limit); past it
    Postgres cancels it: 400 `postgres-error` "canceling statement due to statement
    timeout", and nothing is written. Other errors: the mapped `SvcError`
    (`svc.execute.errors`); 500 `postgres-error` "connection error" when Postgres cannot be
    reached."""
    limit = db.timeout_setting(timeout)
    async with db.transaction() as conn:
        body = await MutationRunner(conn, tables, variables, session, limit, max_items).run(roots)
        if db.announces_writes:  # idle live queries hear the tables written, at commit
            await conn.execute(NOTIFY_WRITES_SQL)
        return body
