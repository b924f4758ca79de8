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
from svc.ir.permissions import FilterResolver, TableShape
from svc.ir.role_view import role_view
from svc.metadata.args import parse_args
from svc.metadata.model import qualify
from svc.plan.nodes import (
    TRUE,
    And,
    BoolExp,
    ColumnField,
    Const,
    Field,
    OrderKey,
    Param,
    RelField,
    Rows,
    Select,
)
from svc.plan.permissions import filter_exp
from svc.sql.dml import render_insert
from svc.sql.render import render_root

_decode = msgspec.json.decode


class InsertArgs(msgspec.Struct):
    """`insert`: `{table, objects}`."""

    table: Any
    objects: list[dict[str, Any]]


class SelectArgs(msgspec.Struct, forbid_unknown_fields=True):
    """`select`: `{table, columns, where, order_by, limit, offset}` (a column may be
    `{name: <rel>, columns: [...]}`; Hasura v1 `SelectQuery`). An unknown key is refused
    (400 `parse-failed`): the reference ignores it, and a dropped `where` answers rows the
    caller did not ask for."""

    table: Any
    columns: list[Any]
    where: dict[str, Any] = msgspec.field(default_factory=dict)
    order_by: Any = None
    limit: int | None = None
    offset: int | None = None


def table_shapes(ir: Ir) -> dict[Any, TableShape]:
    """What a filter may name of each tracked table (`FilterResolver`)."""
    return {
        name: TableShape(
            frozenset(c.name for c in t.columns),
            {r.name: r.target for r in t.relationships if not r.to_source},
            {c.name: c.returns_table for c in t.computed_fields},
            {c.name: c.type_name for c in t.columns},
        )
        for name, t in ir.tables.items()
    }


def where_exp(ir: Ir, table: Table, where: dict[str, Any]) -> BoolExp:
    """A legacy `where` (Hasura's boolean expression: implicit `_eq`, `$op` spellings)
    resolved as a permission filter is; 400 `not-exists` / `parse-failed` at
    `$.args.where`."""
    try:
        normal = FilterResolver(table_shapes(ir)).resolve(table.name, where)
    except SvcError as exc:
        raise exc.at("$.args.where") from None
    return filter_exp(ir.tables, table, normal)


def order_keys(table: Table, order_by: Any) -> tuple[OrderKey, ...]:
    """A legacy `order_by`: one item or a list, each `"+col"`, `"-col"`, `"col"` (ascending)
    or `{column, type: asc|desc, nulls: first|last}` (Hasura v1 `OrderByItem`; nulls as
    Postgres orders them unless given). 400 `parse-failed` / `not-exists` at
    `$.args.order_by[i]`."""
    items = order_by if isinstance(order_by, list) else [] if order_by is None else [order_by]
    out = []
    for i, item in enumerate(items):
        path = f"$.args.order_by[{i}]"
        column, descending, nulls = _order_item(item, path)
        if table.column(column) is None:
            raise SvcError("not-exists", f'no such column exists : "{column}"', path=path)
        first = descending if nulls is None else nulls == "first"
        out.append(OrderKey((), column, descending, first))
    return tuple(out)


def _order_item(item: Any, path: str) -> tuple[str, bool, str | None]:
    """`(column, descending, nulls)` of one legacy order item."""
    if isinstance(item, str):
        return item.lstrip("+-"), item.startswith("-"), None
    if not (isinstance(item, dict) and isinstance(item.get("column"), str)):
        raise SvcError("parse-failed", "expected a column name or {column, type}", path=path)
    kind, nulls = item.get("type", "asc"), item.get("nulls")
    if kind not in ("asc", "desc") or nulls not in (None, "first", "last"):
        raise SvcError("parse-failed", "expected type asc|desc, nulls first|last", path=path)
    return item["column"], kind == "desc", nulls


def _window(value: int | None, name: str) -> Param | None:
    if value is None:
        return None
    if value < 0:
        raise SvcError("parse-failed", f"expected a non-negative {name}", path=f"$.args.{name}")
    return Param(Const(value), "integer")


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
    allowed = reader.rows(table)
    where = where_exp(ir, table, a.where) if a.where else TRUE
    combined = allowed.where if where == TRUE else And((where, allowed.where))
    rows = Rows(
        table.name,
        combined,
        order_keys(table, a.order_by),
        _window(a.limit, "limit"),
        _window(a.offset, "offset"),
        limit_cap=allowed.limit_cap,
    )
    stmt = render_root(Select(rows, reader.fields(table, a.columns)))
    try:
        text = await conn.fetchval(stmt.sql, *resolve(stmt.params, {}, session or {}))
    except PostgresError as exc:
        raise map_query_error(exc).at("$.args") from exc
    return _decode(text)
