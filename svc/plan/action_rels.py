"""Relationships from action outputs to tables, planned as ONE query (issue 16).

A custom object type's relationship (`svc.ir.actions.ObjectRelationship`: `field_mapping`
object field → table column) is answered for every object of a handler's answer at once:
each (object, relationship field) becomes one root of a `QueryPlan`, the target table's
rows filtered by `column = <the object's field value>` (a typed parameter) ANDed with
the role's select filter, with the field's own arguments (`where`, `order_by`, `limit`,
…) and selection planned by the ordinary planner. `svc.sql.render.render_query` makes
the one statement `SELECT (root1) AS "r0", (root2) AS "r1", …`.

An object whose mapped field is null has no related rows: its root is `Hole.empty` and
gets no SQL (null for an object relationship, `[]` for an array).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from graphql import FieldNode, FragmentDefinitionNode, GraphQLSchema

from svc.ir.actions import ObjectRelationship
from svc.ir.model import Table
from svc.metadata.model import QualifiedName
from svc.plan.build import Planner
from svc.plan.nodes import Aggregate, And, Compare, QueryPlan, RootField, Rows, Select
from svc.schema.info import FieldInfo


@dataclass(frozen=True, slots=True)
class Hole:
    """One relationship field of one handler object: the schema `field`, its `nodes`,
    and `parent`, the handler's object (its mapped fields' values)."""

    field: Any
    nodes: list[FieldNode]
    parent: dict[str, Any]

    @property
    def relationship(self) -> ObjectRelationship:
        """The relationship the field answers."""
        rel: ObjectRelationship = self.field.extensions["action_rel"]
        return rel

    @property
    def empty(self) -> bool:
        """True when a mapped field of the object is null (no related rows)."""
        return any(self.parent.get(f) is None for f, _ in self.relationship.mapping)

    @property
    def empty_answer(self) -> Any:
        """What an empty hole answers: null (object), `[]` (array), zero aggregate."""
        info: FieldInfo = self.field.extensions["svc"]
        if info.kind == "action_agg":
            return None
        return None if self.relationship.kind == "object" else []


def plan_relations(
    schema: GraphQLSchema,
    tables: dict[QualifiedName, Table],
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
    holes: list[Hole],
    *,
    stringify: bool,
    role: str,
) -> QueryPlan:
    """The query answering every non-empty hole, root `r<i>` for `holes[i]` (empty ones
    are left out). Raises the planner's `SvcError`s (arguments it refuses)."""
    planner = Planner(schema, tables, fragments, variables, stringify=stringify, role=role)
    roots = []
    for i, hole in enumerate(holes):
        if hole.empty:
            continue
        info: FieldInfo = hole.field.extensions["svc"]
        table = info.table
        assert table is not None
        roots.append(RootField(f"r{i}", _root(planner, table, info.kind, hole)))
    return QueryPlan("query", tuple(roots))


def _root(planner: Planner, table: Table, kind: str, hole: Hole) -> Select | Aggregate:
    rel = hole.relationship
    joined = tuple(
        Compare(column, "_eq", planner._param(hole.parent[f], table, column))
        for f, column in rel.mapping
    )
    if rel.kind == "object":
        where = And((planner.permission_filter(table), *joined))
        return Select(Rows(table.name, where), planner._fields(table, hole.field, hole.nodes), True)
    args = planner._args(hole.field, hole.nodes[0])
    rows = planner._rows(table, args)
    rows = replace(rows, where=And((rows.where, *joined)))
    if kind == "action_agg":
        return Aggregate(rows, planner._agg_fields(table, hole.field, hole.nodes))
    return Select(rows, planner._fields(table, hole.field, hole.nodes))
