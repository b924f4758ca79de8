"""Relationships from action outputs to tables, planned as ONE query.

A custom object type's relationship (`svc.ir.actions.ObjectRelationship`: `field_mapping`
object field → table column) is answered for every object of a handler's answer at once.
Holes (one relationship field of one handler object) that share their field and
selection form a group:

- a group whose relationship maps one column, and that is an object relationship or an
  array relationship without `limit`, `offset` or `distinct_on`, is ONE root: the target's
  rows whose column is `= ANY(<every object's value>)` (a typed list parameter), ANDed
  with the role's select filter and the field's own `where`/`order_by`, each row carrying
  its join value under `KEY`; `distribute` hands the rows back to their objects;
- any other hole is a root of its own, filtered by `column = <value>` per mapped field.

The ordinary planner plans every selection, `svc.sql.render.render_query` makes the one
statement `SELECT (root1) AS "r0", (root2) AS "r1", …`. An object whose mapped field is
null has no related rows and no SQL: null (object), `[]` (array).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from graphql import FieldNode, FragmentDefinitionNode, GraphQLSchema

from svc.ir.actions import ObjectRelationship
from svc.ir.model import Table
from svc.metadata.model import QualifiedName
from svc.plan.build import Planner
from svc.plan.nodes import Aggregate, And, ColumnField, Compare, QueryPlan, RootField, Rows, Select
from svc.schema.info import FieldInfo, FieldKind

KEY = "__svc_key"  # the join value each grouped row carries (removed before answering)
WINDOW_ARGS = ("limit", "offset", "distinct_on")


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
    def kind(self) -> FieldKind:
        """`action_rel` or `action_agg` (`<name>_aggregate`)."""
        info: FieldInfo = self.field.extensions["svc"]
        return info.kind

    @property
    def empty(self) -> bool:
        """True when a mapped field of the object is null (no related rows)."""
        return any(self.parent.get(f) is None for f, _ in self.relationship.mapping)

    @property
    def empty_answer(self) -> Any:
        """What an empty hole answers: null (object, aggregate), `[]` (array)."""
        if self.kind == FieldKind.ACTION_AGG:
            return None
        return None if self.relationship.kind == "object" else []


@dataclass(slots=True)
class Group:
    """Holes answered by one root (`r<index>`): `holes` are indexes into the list given
    to `plan_relations`; `grouped` when the root's rows carry `KEY` to be distributed."""

    holes: list[int] = field(default_factory=list)
    grouped: bool = False


def plan_relations(
    schema: GraphQLSchema,
    tables: dict[QualifiedName, Table],
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
    holes: list[Hole],
    *,
    stringify: bool,
    role: str,
) -> tuple[QueryPlan, list[Group]]:
    """The query answering every non-empty hole and its groups (root `r<i>` answers
    `groups[i]`). Raises the planner's `SvcError`s (arguments it refuses)."""
    planner = Planner(schema, tables, fragments, variables, stringify=stringify, role=role)
    groups: list[Group] = []
    by_selection: dict[Any, Group] = {}
    for i, hole in enumerate(holes):
        if hole.empty:
            continue
        if _groupable(planner, hole):
            key = (id(hole.field), tuple(id(n) for n in hole.nodes))
            found = by_selection.get(key)
            if found is None:
                found = by_selection[key] = Group(grouped=True)
                groups.append(found)
            found.holes.append(i)
        else:
            groups.append(Group([i]))
    roots = []
    for g, group in enumerate(groups):
        first = holes[group.holes[0]]
        info: FieldInfo = first.field.extensions["svc"]
        assert info.table is not None
        select: Select | Aggregate
        if group.grouped:
            select = _grouped(planner, info.table, first, [holes[i].parent for i in group.holes])
        else:
            select = _single(planner, info.table, first)
        roots.append(RootField(f"r{g}", select))
    return QueryPlan("query", tuple(roots)), groups


def _groupable(planner: Planner, hole: Hole) -> bool:
    rel = hole.relationship
    if len(rel.mapping) != 1 or hole.kind == FieldKind.ACTION_AGG:
        return False
    if rel.kind == "object":
        return True
    node = hole.nodes[0]
    args = hole.field.args  # a renamed argument's generated name is its `out_name`
    return not any(
        (getattr(args.get(a.name.value), "out_name", None) or a.name.value) in WINDOW_ARGS
        for a in node.arguments or ()
    )


def _grouped(planner: Planner, table: Table, first: Hole, parents: list[dict[str, Any]]) -> Select:
    """Rows of every parent at once, each with its join value under `KEY`."""
    ((field_name, column),) = first.relationship.mapping
    values = list({str(v): v for p in parents for v in (p[field_name],)}.values())
    match = Compare(column, "_in", planner._param(values, table, column, is_list=True))
    fields = planner._fields(table, first.field, first.nodes)
    keyed = ((KEY, ColumnField(column)), *fields)
    if first.relationship.kind == "object":
        rows = Rows(table.name, And((planner.permission_filter(table), match)))
    else:
        rows = planner._rows(table, planner._args(first.field, first.nodes[0]))
        rows = replace(rows, where=And((rows.where, match)))
    return Select(rows, keyed)


def _single(planner: Planner, table: Table, hole: Hole) -> Select | Aggregate:
    rel = hole.relationship
    joined = tuple(
        Compare(column, "_eq", planner._param(hole.parent[f], table, column))
        for f, column in rel.mapping
    )
    if rel.kind == "object" and hole.kind != FieldKind.ACTION_AGG:
        where = And((planner.permission_filter(table), *joined))
        return Select(Rows(table.name, where), planner._fields(table, hole.field, hole.nodes), True)
    args = planner._args(hole.field, hole.nodes[0])
    rows = planner._rows(table, args)
    rows = replace(rows, where=And((rows.where, *joined)))
    if hole.kind == FieldKind.ACTION_AGG:
        return Aggregate(rows, planner._agg_fields(table, hole.field, hole.nodes))
    return Select(rows, planner._fields(table, hole.field, hole.nodes))


def distribute(holes: list[Hole], group: Group, answer: Any) -> Iterable[tuple[int, Any]]:
    """`(hole index, its answer)` for each hole of `group` from the root's decoded
    `answer` (a grouped root's rows carry `KEY`; others answer their one hole)."""
    if not group.grouped:
        yield group.holes[0], answer
        return
    by_key: dict[str, list[Any]] = {}
    for row in answer or ():
        by_key.setdefault(str(row.pop(KEY)), []).append(row)
    for i in group.holes:
        hole = holes[i]
        ((field_name, _),) = hole.relationship.mapping
        rows = by_key.get(str(hole.parent[field_name]), [])
        if hole.relationship.kind == "object":
            yield i, rows[0] if rows else None
        else:
            yield i, [dict(r) for r in rows]
