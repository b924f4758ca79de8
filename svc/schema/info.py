"""What a generated GraphQL field means, attached to it as `extensions["svc"]`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import GraphQLList, GraphQLNonNull

from svc.ir.model import Column, ComputedField, Function, Relationship, Table


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """The meaning of one GraphQL field.

    `kind` is one of: `select`, `select_by_pk`, `select_aggregate` (root fields, `table`
    set); `column` (`column` set); `object_rel`, `array_rel`, `array_agg` (`relationship`
    and the target `table` set); `agg_count`, `agg_op` (`op` set: `sum`, `avg`, …),
    `agg_column` (`column`, `op`); `agg_nodes`, `agg_aggregate`; `function`,
    `function_aggregate` (`function` and its return `table` set); `computed_scalar`,
    `computed_set` (`computed` set; `table` is the target of a `SETOF` one).
    """

    kind: str
    table: Table | None = None
    column: Column | None = None
    relationship: Relationship | None = None
    op: str = ""
    function: Function | None = None
    computed: ComputedField | None = None


def nn(t: Any) -> GraphQLNonNull[Any]:
    """`T!`."""
    return GraphQLNonNull(t)


def list_nn(t: Any) -> GraphQLList[Any]:
    """`[T!]`."""
    return GraphQLList(GraphQLNonNull(t))


def info(kind: str, **kw: Any) -> dict[str, Any]:
    """The `extensions` of a generated field: `{"svc": FieldInfo(kind, …)}`."""
    return {"svc": FieldInfo(kind, **kw)}
