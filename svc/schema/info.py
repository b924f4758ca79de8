"""What a generated GraphQL field means, attached to it as `extensions["svc"]`."""

from __future__ import annotations

from typing import Any, NamedTuple

from svc.ir.model import Column, ComputedField, Function, Relationship, Table


class FieldInfo(NamedTuple):
    """The meaning of one GraphQL field.

    `kind` is one of: `select`, `select_by_pk`, `select_aggregate` (root fields, `table`
    set); `column` (`column` set); `object_rel`, `array_rel`, `array_agg` (`relationship`
    and the target `table` set); `agg_count`, `agg_op` (`op` set: `sum`, `avg`, …),
    `agg_column` (`column`, `op`); `agg_nodes`, `agg_aggregate`; `function`,
    `function_aggregate` (`function` and its return `table` set); `computed_scalar`,
    `computed_set` (`computed` set; `table` is the target of a `SETOF` one).

    A named tuple, not a frozen dataclass: as immutable, and several times cheaper to
    create (a schema of 1,000 tables has 50,000 of them).
    """

    kind: str
    table: Table | None = None
    column: Column | None = None
    relationship: Relationship | None = None
    op: str = ""
    function: Function | None = None
    computed: ComputedField | None = None


def info(kind: str, **kw: Any) -> dict[str, Any]:
    """The `extensions` of a generated field: `{"svc": FieldInfo(kind, …)}`."""
    return {"svc": FieldInfo(kind, **kw)}


# Fields whose meaning involves no table, column or operator share one `extensions`
# (graphql-core keeps the dict it is given; nothing changes it once the schema is built).
AGG_AGGREGATE = info("agg_aggregate")
AGG_NODES = info("agg_nodes")
AGG_COUNT = info("agg_count")
AFFECTED_ROWS = info("affected_rows")
RETURNING = info("returning")
