"""The legacy `/v1/query` data operations `update`, `delete` and `count`, and the
session for `insert` (Hasura v1 `RQL/DML`): the reference's event-trigger tests change
rows with them, with session headers that the captured events must carry.

Every write first sets the transaction-local `svc.user` to the request's session
variables (`{"x-svc-role": "admin"}` for an admin request without headers), as GraphQL
mutations do (`svc.api.mutation`), so capture triggers record them. `where` is Hasura's
boolean expression (implicit `_eq`, `$op` spellings), resolved against the tracked
tables as a permission filter is.
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.api import dml
from svc.api.op_registry import SYNC_ONLY, Operation
from svc.errors import ErrorCode, SvcError
from svc.execute.db import PostgresError
from svc.execute.errors import map_query_error
from svc.execute.params import resolve
from svc.ir.model import Table
from svc.metadata.args import parse_args
from svc.session_vars import role_session, session_json
from svc.sql.legacy_writes import render_count, render_delete, render_update
from svc.sql.render import Statement

SESSION_SQL = "SELECT set_config('svc.user', $1, true)"


class UpdateArgs(msgspec.Struct, rename={"set_": "$set", "inc": "$inc"}):
    """`update`: `{table, where, $set, $inc}`."""

    table: Any
    where: dict[str, Any] = msgspec.field(default_factory=dict)
    set_: dict[str, Any] = msgspec.field(default_factory=dict)
    inc: dict[str, Any] = msgspec.field(default_factory=dict)


class WhereArgs(msgspec.Struct):
    """`delete` / `count`: `{table, where}`."""

    table: Any
    where: dict[str, Any] = msgspec.field(default_factory=dict)


where_exp = dml.where_exp


async def set_session(ctx: Any) -> None:
    """Set `svc.user` for the rest of the request's transaction."""
    session = ctx.session or role_session(ctx.role)
    await ctx.conn.execute(SESSION_SQL, session_json(session))


def _typed(table: Table, values: dict[str, Any], path: str) -> tuple[tuple[str, str, object], ...]:
    out = []
    for name, value in values.items():
        column = table.column(name)
        if column is None:
            raise SvcError(ErrorCode.NOT_EXISTS, f'no such column exists : "{name}"', path=path)
        out.append((name, column.pg_type, value))
    return tuple(out)


async def _affected(ctx: Any, stmt: Statement) -> dict[str, Any]:
    try:
        status = await ctx.conn.execute(stmt.sql, *resolve(stmt.params, {}, {}))
    except PostgresError as exc:
        raise map_query_error(exc).at("$.args") from exc
    return {"affected_rows": int(status.rsplit(" ", 1)[-1])}


async def legacy_update(ctx: Any, body: Any) -> Any:
    """`update` → `{"affected_rows": n}`; 400 `not-exists` for an unknown table/column."""
    a = parse_args(UpdateArgs, body.args)
    table = dml.tracked(ctx.ir, a.table)
    sets = _typed(table, a.set_, "$.args.$set")
    incs = _typed(table, a.inc, "$.args.$inc")
    if not sets and not incs:
        return {"affected_rows": 0}
    await set_session(ctx)
    stmt = render_update(table.name, sets, incs, where_exp(ctx.ir, table, a.where))
    return await _affected(ctx, stmt)


async def legacy_delete(ctx: Any, body: Any) -> Any:
    """`delete` → `{"affected_rows": n}`."""
    a = parse_args(WhereArgs, body.args)
    table = dml.tracked(ctx.ir, a.table)
    await set_session(ctx)
    return await _affected(ctx, render_delete(table.name, where_exp(ctx.ir, table, a.where)))


async def legacy_count(ctx: Any, body: Any) -> Any:
    """`count` → `{"count": n}` (admin: every row the filter selects)."""
    a = parse_args(WhereArgs, body.args)
    table = dml.tracked(ctx.ir, a.table)
    stmt = render_count(table.name, where_exp(ctx.ir, table, a.where))
    try:
        n = await ctx.conn.fetchval(stmt.sql, *resolve(stmt.params, {}, {}))
    except PostgresError as exc:
        raise map_query_error(exc).at("$.args") from exc
    return {"count": int(n)}


async def legacy_insert(ctx: Any, body: Any) -> Any:
    """`insert` with the session set first (`dml.insert` does the rest)."""
    await set_session(ctx)
    return await dml.insert(ctx.conn, ctx.ir, body.args)


def _op(name: str, kind: Any, handler: Any) -> Operation:
    return Operation(name=name, handler=handler, args=kind, read_only=False, checks=SYNC_ONLY)


OPERATIONS = [
    _op("update", UpdateArgs, legacy_update),
    _op("delete", WhereArgs, legacy_delete),
    _op("count", WhereArgs, legacy_count),
    _op("insert", None, legacy_insert),
]
"""The legacy data writes of `/v1/query` (no `pg_` spelling; `select` is
`svc.api.metadata`'s)."""
