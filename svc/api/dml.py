"""The legacy `/v1/query` data operations `insert`, `select` and `count`.

Setups written for the reference still use them (conformance corpus). They share the
planner and renderer with GraphQL; `where` accepts both `_eq` and `$eq` operator spellings.
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.errors import SvcError
from svc.execute.db import Connection, PostgresError
from svc.execute.errors import map_query_error
from svc.execute.params import resolve
from svc.ir.model import Ir, Table
from svc.ir.role_view import role_view
from svc.metadata.args import parse_args
from svc.metadata.model import qualify
from svc.plan.nodes import TRUE, ColumnField, Field, RelField, Rows, Select
from svc.plan.permissions import filter_exp
from svc.sql.dml import render_insert
from svc.sql.render import render_root

_decode = msgspec.json.decode


class InsertArgs(msgspec.Struct):
    """`insert`: `{table, objects}`."""

    table: Any
    objects: list[dict[str, Any]]


class SelectArgs(msgspec.Struct):
    """`select`: `{table, columns}` (a column may be `{name: <rel>, columns: [...]}`)."""

    table: Any
    columns: list[Any]


def tracked(ir: Ir, raw: Any) -> Table:
    """The tracked table named by `raw`; 400 `not-exists` at `$.args.table` otherwise."""
    name = qualify(raw, "$.args.table")
    table = ir.tables.get(name)
    if table is None:
        raise SvcError("not-exists", f'table "{name}" does not exist', path="$.args.table")
    return table


async def insert(conn: Connection, ir: Ir, args: Any) -> dict[str, Any]:
    """Insert `objects`; answers `{"affected_rows": n}`."""
    a = parse_args(InsertArgs, args)
    table = tracked(ir, a.table)
    names: list[str] = []
    for obj in a.objects:
        for key in obj:
            if key not in names:
                if table.column(key) is None:
                    raise SvcError(
                        "not-exists", f'no such column exists : "{key}"', path="$.args.objects"
                    )
                names.append(key)
    columns = tuple((n, table.column_map[n].pg_type) for n in names)
    if not a.objects:
        return {"affected_rows": 0}
    stmt = render_insert(table.name, columns, a.objects)
    try:
        status = await conn.execute(stmt.sql, *resolve(stmt.params, {}, {}))
    except PostgresError as exc:
        raise map_query_error(exc).at("$.args") from exc
    return {"affected_rows": int(status.rsplit(" ", 1)[-1])}


class _Reader:
    """Builds a legacy selection as `role` would see it (its select permissions)."""

    def __init__(self, ir: Ir, role: str) -> None:
        self.ir = ir
        self.role = role
        self.view = role_view(ir, role)

    def rows(self, table: Table) -> Rows:
        """All rows of `table`, or those the role's filter lets through (with its limit)."""
        access = self.view.table(table.name)
        if self.view.admin:
            return Rows(table.name, TRUE)
        if not access.readable:
            raise SvcError(
                "permission-denied",
                f'select on "{table.name}" for role "{self.role}" is not allowed. ',
                path="$.args",
            )
        where = filter_exp(self.ir.tables, table, access.filter)
        return Rows(table.name, where, limit_cap=access.limit)

    def allowed(self, table: Table, column: str) -> bool:
        """Whether the role may read `column` of `table`."""
        return column in self.view.table(table.name).column_names

    def fields(self, table: Table, columns: list[Any]) -> tuple[tuple[str, Field], ...]:
        """The selected columns and relationships; 400 `not-exists` / `permission-denied`."""
        out: list[tuple[str, Field]] = []
        for col in columns:
            if col == "*":
                out.extend(
                    (c.name, ColumnField(c.name))
                    for c in table.columns
                    if self.allowed(table, c.name)
                )
            elif isinstance(col, str):
                if table.column(col) is None:
                    raise SvcError(
                        "not-exists", f'no such column exists : "{col}"', path="$.args.columns"
                    )
                if not self.allowed(table, col):
                    raise SvcError(
                        "permission-denied",
                        f'role "{self.role}" does not have permission to select column "{col}"',
                        path="$.args.columns",
                    )
                out.append((col, ColumnField(col)))
            elif isinstance(col, dict) and col.get("name") in table.relationship_map:
                rel = table.relationship_map[col["name"]]
                target = self.ir.tables[rel.target]
                sub = self.fields(target, col.get("columns", ["*"]))
                sel = Select(self.rows(target), sub, single=rel.kind == "object")
                out.append((rel.name, RelField(rel.mapping, sel)))
            else:
                raise SvcError(
                    "not-exists", f"no such column exists : {col!r}", path="$.args.columns"
                )
        return tuple(out)


async def select(
    conn: Connection,
    ir: Ir,
    args: Any,
    role: str,
    session: dict[str, str] | None = None,
) -> Any:
    """Rows of a tracked table as a JSON array, as `role` may see them (Hasura's v1
    `select`: the role's filter, columns and limit apply)."""
    a = parse_args(SelectArgs, args)
    table = tracked(ir, a.table)
    reader = _Reader(ir, role)
    stmt = render_root(Select(reader.rows(table), reader.fields(table, a.columns)))
    try:
        text = await conn.fetchval(stmt.sql, *resolve(stmt.params, {}, session or {}))
    except PostgresError as exc:
        raise map_query_error(exc).at("$.args") from exc
    return _decode(text)
