"""Plan a streaming subscription root field `x_stream` (reference:
`Hasura.GraphQL.Schema.SubscriptionStream`, docs "Streaming subscriptions").

`x_stream(batch_size, cursor: [{initial_value: {col: v}, ordering}], where)` is the rows
of `x` that pass `where` and the role's filter, whose cursor column lies after the cursor
(`>` ascending, `<` descending, so a row equal to the cursor is not sent again), ordered
by that column, at most `batch_size` (and the permission's limit) of them. The cursor is
not a value of the plan: the comparison reads `CursorRef(column)`, which the multiplexed
statement takes from each cohort's variables (`svc.sql.stream`), so one plan serves every
position; `StreamCursor.initial` is where a new subscriber starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svc.errors import validation_failed
from svc.ir.model import Table
from svc.plan.nodes import (
    TRUE,
    And,
    Compare,
    Const,
    CursorRef,
    Field,
    OrderKey,
    Param,
    Rows,
    Select,
    VarRef,
)

if TYPE_CHECKING:
    from svc.plan.build import Planner

#: The reference's error for a cursor that is not exactly one column.
ONE_COLUMN = "one streaming column field is expected"


@dataclass(frozen=True, slots=True)
class StreamCursor:
    """The cursor of a stream: its `column` (name) of `pg_type`, its direction, and
    `initial`, the parameter of the value a new subscriber starts after."""

    column: str
    pg_type: str
    descending: bool
    initial: Param


@dataclass(frozen=True, slots=True)
class StreamSelect(Select):
    """A `Select` of one batch after the cursor (`cursor` is always set; the default only
    satisfies the dataclass order of fields)."""

    cursor: StreamCursor | None = None


def plan_stream(
    planner: Planner, table: Table, args: dict[str, Any], fields: tuple[tuple[str, Field], ...]
) -> StreamSelect:
    """The plan of `x_stream` with its arguments `args` (as the planner read them) and its
    planned `fields`. Raises `SvcError` `validation-failed`: "one streaming column field is
    expected" (no cursor, several cursors or several columns), a null initial value, a
    negative `batch_size` literal ("unexpected negative value for batch_size")."""
    cursor = _cursor(planner, table, args.get("cursor"))
    # an inherited role's redacted cursor column: rows it shows as null are skipped, as
    # the reference's `ColumnRedactionSpec` streams
    read = planner.redact(table, cursor.column)
    after = Compare(
        read,
        "_lt" if cursor.descending else "_gt",
        Param(CursorRef(cursor.column), cursor.pg_type),
    )
    where = planner._restricted(table, planner.bool_exp(table, args.get("where")))
    where = after if where == TRUE else And((where, after))
    desc = cursor.descending
    rows = Rows(
        table.name,
        where,
        (OrderKey((), read, desc, desc),),
        planner._window(args.get("batch_size"), "batch_size"),
        limit_cap=planner.view.table(table.name).limit,
    )
    return StreamSelect(rows, fields, cursor=cursor)


def _cursor(planner: Planner, table: Table, value: Any) -> StreamCursor:
    concrete = planner.reader.concrete
    items = concrete(value)
    if isinstance(items, dict):
        items = [items]
    items = [concrete(i) for i in items or () if i is not None]
    if len(items) != 1:
        raise validation_failed(ONE_COLUMN)
    initial = concrete(items[0].get("initial_value")) or {}
    if len(initial) != 1:
        raise validation_failed(ONE_COLUMN)
    ((gql_name, start),) = initial.items()
    column = next(c for c in table.columns if c.gql_name == gql_name)
    if start is None:
        raise validation_failed(f'the initial value of the cursor "{gql_name}" cannot be null')
    source = start if isinstance(start, VarRef) else Const(start)
    ordering: str = concrete(items[0].get("ordering")) or "ASC"
    return StreamCursor(
        column.name, column.pg_type, ordering == "DESC", Param(source, column.pg_type)
    )
