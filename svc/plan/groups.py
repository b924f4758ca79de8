"""Plan a grouped aggregate, `x_groups` (root) or `<array rel>_groups` (svc's own; the
schema is `svc.schema.groups`, the SQL `svc.sql.groups`).

    x_groups(group_by: [x_select_column!]!, where, having, order_by, limit, offset)
      : [x_group!]!    x_group { keys { <grouped columns> } aggregate { count sum {…} … } }

is the rows of `x` the role may select that pass `where`, partitioned by the `group_by`
columns (`GROUP BY`; `group_by: []` is one group of every row), one answer per group that
passes `having` (comparisons on the group's aggregates), ordered by `order_by` (keys,
aggregates) and then by the keys, windowed by `limit`/`offset`.

Permissions are the role's select permission, as for `x_aggregate` (the schema offers the
field only with `allow_aggregations`): its filter is ANDed into `where`; only its columns
are keys or aggregate inputs (the schema's enums and fields); an inherited role reads a
column it shows in some rows only through `Planner.redact` everywhere (a key, an
aggregate input, a `having` or `order_by` aggregate). The permission's row `limit` is
applied as the reference applies it to `x_aggregate` when `aggregate` is selected
(`svc.plan.build.aggregate_of`): the aggregates are computed over every permitted row,
and the limit caps the list answered (there the `nodes`, here the groups).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphql import FieldNode, get_named_type

from svc.errors import validation_failed
from svc.ir.model import Column, Table
from svc.ir.operators import GEO_TYPES
from svc.plan.nodes import (
    TRUE,
    AggAggregate,
    Aggregate,
    And,
    BoolExp,
    Compared,
    Not,
    Or,
    OrderKey,
    Param,
    Rows,
    Typename,
)
from svc.schema.groups import COUNT_TYPE, FLOAT_OPS, UNGROUPABLE_TYPES

if TYPE_CHECKING:
    from svc.plan.build import Planner

ORDER_DIRECTIONS = {
    "asc": (False, False),
    "asc_nulls_last": (False, False),
    "asc_nulls_first": (False, True),
    "desc": (True, True),
    "desc_nulls_first": (True, True),
    "desc_nulls_last": (True, False),
}


@dataclass(frozen=True, slots=True)
class GroupKey:
    """One grouping key: `column` of the grouped table (redacted for an inherited role),
    answered as text when numbers are stringified (`as_text`) or as GeoJSON (`geojson`)."""

    column: Compared
    as_text: bool = False
    geojson: bool = False


@dataclass(frozen=True, slots=True)
class Measure:
    """An aggregate of a group that `having` or `order_by` reads: `op` (`count`: rows;
    else `sum`, `avg`, `max`, … of `column`). The renderer exposes measure `i` as the
    group's column `"_m<i>"`."""

    op: str
    column: Compared | None = None


@dataclass(frozen=True, slots=True)
class GroupKeys:
    """The `keys { … }` object of a group: `(alias, index of the key in Groups.keys)` or
    `(alias, Typename)` for `__typename`."""

    items: tuple[tuple[str, int | Typename], ...]


GroupItem = GroupKeys | AggAggregate | Typename


@dataclass(frozen=True, slots=True)
class Groups(Aggregate):
    """A grouped aggregate over `rows` (an `Aggregate`, so every pass over root and
    relationship selections carries it; `fields` stays empty).

    `keys`: the `GROUP BY` expressions (key `i` is the group's column `"_k<i>"`);
    `items`: each group's answer (`keys`, `aggregate`, `__typename`); `measures`: the
    aggregates `having` and `order_by` read (`"_m<i>"`); `having`: a boolean expression
    over the group's columns; `order_by`: keys whose leaves are those column names;
    `limit`/`offset`: the request's window over groups; `cap`: the permission's row limit,
    capping the number of groups (see the module docstring). All but `rows` default only
    for the dataclass order of fields."""

    keys: tuple[GroupKey, ...] = ()
    items: tuple[tuple[str, GroupItem], ...] = ()
    measures: tuple[Measure, ...] = ()
    having: BoolExp = TRUE
    order_by: tuple[OrderKey, ...] = ()
    limit: Param | None = None
    offset: Param | None = None
    cap: int | None = None


def key_column(index: int) -> str:
    """The name of key `index` in a group's row."""
    return f"_k{index}"


def measure_column(index: int) -> str:
    """The name of measure `index` in a group's row."""
    return f"_m{index}"


class _GroupsPlanner:
    """Plans one `x_groups` field (see `plan_groups`)."""

    def __init__(self, planner: Planner, table: Table, path: str) -> None:
        self.p = planner
        self.table = table
        self.path = path
        self.concrete = planner.reader.concrete
        self.measures: dict[Measure, int] = {}
        self.by_gql = {c.gql_name: c for c in table.columns}

    def measure(self, op: str, column: Column | None) -> str:
        read = None if column is None else self.p.redact(self.table, column.name)
        m = Measure(op, read)
        index = self.measures.setdefault(m, len(self.measures))
        return measure_column(index)

    # -- keys -----------------------------------------------------------------------------
    def keys(self, value: Any) -> tuple[list[Column], dict[str, int]]:
        names = [str(self.concrete(v)) for v in self.concrete(value) or ()]
        columns: list[Column] = []
        index: dict[str, int] = {}
        for i, name in enumerate(names):
            column = self.table.column_map[name]
            if column.type_name in UNGROUPABLE_TYPES:
                raise validation_failed(
                    f'column "{column.gql_name}" of type "{column.type_name}" cannot be a '
                    "grouping key: Postgres has no equality for it",
                    f"{self.path}.args.group_by[{i}]",
                )
            if name not in index:
                index[name] = len(columns)
                columns.append(column)
        return columns, index

    # -- having -------------------------------------------------------------------------
    def having(self, value: Any, path: str) -> BoolExp:
        value = self.concrete(value)
        if not value:
            return TRUE
        items: list[BoolExp] = []
        for key, sub in value.items():
            sub = self.concrete(sub)
            if key == "_and":
                subs = [self.having(v, f"{path}._and[{i}]") for i, v in enumerate(sub or ())]
                items.append(And(tuple(subs)))
            elif key == "_or":
                subs = [self.having(v, f"{path}._or[{i}]") for i, v in enumerate(sub or ())]
                items.append(Or(tuple(subs)))
            elif key == "_not":
                if sub is not None:
                    items.append(Not(self.having(sub, f"{path}._not")))
            elif key == "count":
                items.extend(self.p._column_ops(self.measure("count", None), COUNT_TYPE, sub))
            else:
                for gql_name, ops in (sub or {}).items():
                    column = self.by_gql[gql_name]
                    read = self.measure(key, column)
                    items.extend(self.p._column_ops(read, _result_type(key, column), ops))
        return items[0] if len(items) == 1 else And(tuple(items))

    # -- order --------------------------------------------------------------------------
    def order(self, value: Any, index: dict[str, int]) -> list[OrderKey]:
        value = self.concrete(value)
        if value is None:
            return []
        if isinstance(value, dict):
            value = [value]
        out: list[OrderKey] = []
        for i, item in enumerate(value):
            for key, sub in (self.concrete(item) or {}).items():
                sub = self.concrete(sub)
                if sub is None:
                    continue
                if key == "keys":
                    out.extend(self._key_order(sub, index, f"{self.path}.args.order_by[{i}]"))
                else:
                    out.extend(self._aggregate_order(sub))
        return out

    def _key_order(self, sub: dict[str, Any], index: dict[str, int], path: str) -> list[OrderKey]:
        out: list[OrderKey] = []
        for gql_name, direction in sub.items():
            direction = self.concrete(direction)
            if direction is None:
                continue
            column = self.by_gql[gql_name]
            if column.name not in index:
                raise validation_failed(
                    f'cannot order groups by "{gql_name}": it is not in "group_by"',
                    f"{path}.keys.{gql_name}",
                )
            out.append(_order_key(key_column(index[column.name]), direction))
        return out

    def _aggregate_order(self, sub: dict[str, Any]) -> list[OrderKey]:
        out: list[OrderKey] = []
        for op, cols in sub.items():
            cols = self.concrete(cols)
            if cols is None:
                continue
            if op == "count":
                out.append(_order_key(self.measure("count", None), cols))
                continue
            for gql_name, direction in cols.items():
                direction = self.concrete(direction)
                if direction is not None:
                    out.append(_order_key(self.measure(op, self.by_gql[gql_name]), direction))
        return out

    # -- the answer of each group -------------------------------------------------------
    def items(
        self, field: Any, nodes: list[FieldNode], keys: list[Column], index: dict[str, int]
    ) -> tuple[tuple[str, GroupItem], ...]:
        p = self.p
        group_type = get_named_type(field.type)
        out: list[tuple[str, GroupItem]] = []
        for alias, sub_nodes in p._sub(field, nodes).items():
            name = sub_nodes[0].name.value
            if name == "__typename":
                out.append((alias, Typename(group_type.name)))
                continue
            sub_field = group_type.fields[name]
            if name == "aggregate":
                out.append((alias, p._aggregate(self.table, sub_field, sub_nodes)))
                continue
            out.append((alias, self._keys_object(sub_field, sub_nodes, index, alias)))
        return tuple(out)

    def _keys_object(
        self, field: Any, nodes: list[FieldNode], index: dict[str, int], alias: str
    ) -> GroupKeys:
        keys_type = get_named_type(field.type)
        out: list[tuple[str, int | Typename]] = []
        for key_alias, key_nodes in self.p._sub(field, nodes).items():
            name = key_nodes[0].name.value
            if name == "__typename":
                out.append((key_alias, Typename(keys_type.name)))
                continue
            column: Column = keys_type.fields[name].extensions["svc"].column
            if column.name not in index:
                raise validation_failed(
                    f'"{name}" is not a grouping key: add it to "group_by" to select it',
                    f"{self.path}.selectionSet.{alias}.selectionSet.{key_alias}",
                )
            out.append((key_alias, index[column.name]))
        return GroupKeys(tuple(out))


def plan_groups(
    planner: Planner, table: Table, field: Any, nodes: list[FieldNode], args: dict[str, Any]
) -> Groups:
    """The plan of a groups field of `table` (its definition `field`, the request's
    `nodes`, its arguments `args` as the planner read them). Raises `SvcError`
    `validation-failed` (an entry of a GraphQL answer's `errors`, at the JSON path of the
    offending argument or selection): a key of a type without equality (`json`, `point`,
    …), a `keys` field or a key `order_by` naming a column not in `group_by`, a negative
    literal `limit`/`offset`."""
    alias = nodes[0].alias.value if nodes[0].alias else nodes[0].name.value
    g = _GroupsPlanner(planner, table, f"$.selectionSet.{alias}")
    columns, index = g.keys(args.get("group_by"))
    stringify = planner.stringify
    keys = tuple(
        GroupKey(planner.redact(table, c.name), stringify and c.stringifiable, _geo(c))
        for c in columns
    )
    having = g.having(args.get("having"), f"{g.path}.args.having")
    order = g.order(args.get("order_by"), index)
    # then by every key, so groups come in one order whatever the plan (keys are unique)
    ordered = {k.leaf for k in order}
    order += [
        _order_key(key_column(i), "asc") for i in range(len(keys)) if key_column(i) not in ordered
    ]
    where = planner._restricted(table, planner.bool_exp(table, args.get("where")))
    return Groups(
        Rows(table.name, where),
        (),
        None,
        keys,
        g.items(field, nodes, columns, index),
        tuple(g.measures),
        having,
        tuple(order),
        planner._window(args.get("limit"), "limit"),
        planner._window(args.get("offset"), "offset"),
        planner.view.table(table.name).limit,
    )


#: Postgres' result type of `sum` per argument type (the `sum` aggregates of
#: `pg_aggregate`: the small integers' sum is `bigint`, a `bigint`'s `numeric`, the others
#: their own type); a `having` operand of `sum(column)` is cast to it, so it compares with
#: the sum itself (`money > money`: there is no `money > numeric`).
SUM_TYPES = {
    "int2": "bigint",
    "int4": "bigint",
    "int8": "numeric",
    "float4": "real",
    "float8": "double precision",
    "numeric": "numeric",
    "money": "money",
    "interval": "interval",
}


def _result_type(op: str, column: Column) -> str:
    """The Postgres type a `having` operand of `op(column)` is cast to: `float8` for the
    Float-valued statistics (`avg`, `stddev`, …: Postgres answers `numeric` or `double
    precision`, both compare with a `float8`), `sum`'s own result type (`SUM_TYPES`;
    `numeric` for another type), the column's own type for `max`/`min`."""
    if op in FLOAT_OPS:
        return "float8"
    if op == "sum":
        return SUM_TYPES.get(column.type_name, "numeric")
    return column.pg_type


def _geo(column: Column) -> bool:
    return column.type_name in GEO_TYPES


def _order_key(column: str, direction: Any) -> OrderKey:
    descending, nulls_first = ORDER_DIRECTIONS[direction or "asc"]
    return OrderKey((), column, descending, nulls_first)
