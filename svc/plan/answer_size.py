"""How many rows a planned query would answer, estimated before it runs (no I/O).

A query's depth and node count do not bound its answer: a selection alternating an
array relationship and its way back (`posts → author → posts → …`) multiplies the rows
at every level, and one such query over 62 posts grew Postgres by 4 GB. So before a
role other than admin runs a query, its answer is estimated from the planner's own
numbers (`SizeStats`: each table's row count and each column's distinct values, as
Postgres's statistics give them) and refused above `SVC_GRAPHQL_MAX_ANSWER_ROWS`
(`svc.api.answer_limits`).

The estimate of a selection is its rows per parent times one plus what each row's
relationships add: a root reads `min(limit, rows of the table)`; an object relationship
one row; an array relationship `min(limit, rows of the target / distinct values of the
target's join column)` per parent row (Postgres's own estimate of an equality join); an
aggregate one object plus its `nodes`; a Relay connection (`Connection`, a root or an
array relationship's `<rel>_connection`) one object plus its rows as a select of them,
under `first`/`last` and the permission's limit, with its edges' node fields; grouped
aggregates (`svc.plan.groups`) a group per
row at most, under their limits (a column without statistics has as many distinct
values as Postgres's planner would assume). Filters are not counted (an estimate from above:
a filter can only remove rows), nor a permission's filter; limits are (a literal, a
variable's value, a permission's row limit). A table without statistics counts as its
rows known so far, or 1,000.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from svc.metadata.model import QualifiedName
from svc.plan.groups import Groups
from svc.plan.nodes import (
    AggNodes,
    Aggregate,
    Connection,
    Const,
    EdgeNode,
    Edges,
    Param,
    QueryPlan,
    RelField,
    Rows,
    Select,
    VarRef,
)

UNKNOWN_ROWS = 1000.0  # a table Postgres has no count of yet
# Distinct values assumed for a column without statistics (a table autovacuum has not
# analysed: under 50 rows changed), as Postgres's planner assumes them
# (`selfuncs.c` `get_variable_numdistinct`: `DEFAULT_NUM_DISTINCT`, at most the rows).
DEFAULT_NUM_DISTINCT = 200.0


class SizeStats(Protocol):
    """Row counts and distinct counts of the source's tables (`svc.execute.table_stats`)."""

    def rows(self, table: QualifiedName) -> float | None:
        """The table's estimated row count, None when unknown."""

    def distinct(self, table: QualifiedName, column: str) -> float | None:
        """Distinct values of `column` (a positive count), None when unknown."""


def estimate_rows(plan: QueryPlan, stats: SizeStats, variables: Mapping[str, Any]) -> float:
    """The estimated number of rows (objects of every list and object field) `plan`
    answers with `variables` (coerced)."""
    total = 0.0
    for root in plan.roots:
        if isinstance(root.select, Select | Aggregate | Connection):
            per = _cap(root.select, _table_rows(stats, root.select.rows.table), variables)
            total += _rows(root.select, per, stats, variables)
    return total


def _rows(
    sel: Select | Aggregate | Connection,
    per_parent: float,
    stats: SizeStats,
    variables: Mapping[str, Any],
) -> float:
    """Rows answered for one parent: `per_parent` rows of `sel`, each with what its
    relationships add (a Relay `Connection` as a `Select` of its rows: each edge's
    `node` fields, plus the connection object)."""
    fields: tuple[tuple[str, Any], ...]
    if isinstance(sel, Connection):
        fields = tuple(
            item
            for _, part in sel.fields
            if isinstance(part, Edges)
            for _, edge in part.items
            if isinstance(edge, EdgeNode)
            for item in edge.fields
        )
        return 1.0 + per_parent * (1.0 + _nested(fields, stats, variables))
    if isinstance(sel, Groups):  # a group per row at most (one without keys), each an object
        groups = per_parent if sel.keys else 1.0
        for bound in (_limit(replace(sel.rows, limit=sel.limit), variables), sel.cap):
            if bound is not None:
                groups = min(groups, float(bound))
        return groups
    if isinstance(sel, Aggregate):
        nodes = [f for _, f in sel.fields if isinstance(f, AggNodes)]
        fields = tuple(item for n in nodes for item in n.fields)
        extra = 1.0  # the aggregate object
        if not nodes:
            return extra
    else:
        fields, extra = sel.fields, 0.0
    return extra + per_parent * (1.0 + _nested(fields, stats, variables))


def _nested(
    fields: tuple[tuple[str, Any], ...], stats: SizeStats, variables: Mapping[str, Any]
) -> float:
    """Rows the relationships among `fields` add to one row."""
    each = 0.0
    for _, field in fields:
        if isinstance(field, RelField):
            each += _rows(field.select, _fan_out(field, stats, variables), stats, variables)
    return each


def _fan_out(field: RelField, stats: SizeStats, variables: Mapping[str, Any]) -> float:
    """Rows of a relationship per parent row."""
    sel = field.select
    if field.unique or (isinstance(sel, Select) and sel.single):
        return 1.0
    table = sel.rows.table
    rows = _table_rows(stats, table)
    if sel.rows.function is None and field.mapping:
        distinct = stats.distinct(table, field.mapping[0][1])
        if distinct is None or distinct <= 0:  # never analysed: Postgres's own default
            distinct = min(DEFAULT_NUM_DISTINCT, rows)
        rows = max(1.0, rows / distinct)
    return _cap(sel, rows, variables)


def _cap(sel: Select | Aggregate | Connection, rows: float, variables: Mapping[str, Any]) -> float:
    """`rows` under the selection's limits (the request's, the permission's)."""
    if isinstance(sel, Select) and sel.single:
        return min(rows, 1.0)
    found = _limit(sel.rows, variables)
    cap = sel.nodes_limit if isinstance(sel, Aggregate) else None
    if isinstance(sel, Connection):  # the slice: `first` or `last`
        found = _value(sel.first, variables)
        cap = _value(sel.last, variables)
    for bound in (found, sel.rows.limit_cap, cap):
        if bound is not None:
            rows = min(rows, float(bound))
    return rows


def _limit(rows: Rows, variables: Mapping[str, Any]) -> int | None:
    return _value(rows.limit, variables)


def _value(param: Any, variables: Mapping[str, Any]) -> int | None:
    """The integer a limit parameter has with `variables`, None when none is given."""
    if not isinstance(param, Param):
        return None
    value = param.source.value if isinstance(param.source, Const) else None
    if isinstance(param.source, VarRef):
        value = variables.get(param.source.name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _table_rows(stats: SizeStats, table: QualifiedName) -> float:
    found = stats.rows(table)
    return UNKNOWN_ROWS if found is None or found < 0 else max(found, 1.0)
