"""Plan nested updates: `update_x`/`update_x_by_pk` with a `_nested` argument
(`svc.schema.nested_updates`, README "Nested updates").

A nested update is a tree: the update of the root rows, then, per relationship named in
`_nested`, writes to the related rows of *the rows that update matched*: for an array
relationship a delete (`_delete`), updates in order (`_update`, each a `where` and
operators, itself a tree through `_nested`) and an insert (`_insert`, the nested insert
input); for an object relationship one update of the related row. Every write carries the
role's own rule for its table, planned by `MutationPlanner` exactly as a root field's:
update columns, presets, filter (ANDed into the `WHERE`) and check (on each written row);
insert presets and check; delete filter. The relationship join itself is added when the
rows are known (`svc.sql.nested_update`).

Rows matched by a level that sets nothing (only `_nested` given) are read and locked, not
written: no preset is applied to them, no event fires, they are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from svc.ir.model import Table
from svc.metadata.model import QualifiedName
from svc.plan.mutation import UPDATE_OPS, Delete, Insert, Update
from svc.plan.nodes import TRUE, BoolExp

if TYPE_CHECKING:
    from svc.plan.mutation import MutationPlanner

NESTED_ARG = "_nested"


@dataclass(frozen=True, slots=True)
class RelWrites:
    """Writes through relationship `name` of the rows its parent level matched, in the
    order they run: `delete`, then `updates`, then `insert`. `mapping` pairs (parent
    column, related column); `kind` is `object` or `array`."""

    name: str
    kind: str
    target: QualifiedName
    mapping: tuple[tuple[str, str], ...]
    delete: Delete | None = None
    updates: tuple[NestedUpdate, ...] = ()
    insert: Insert | None = None


@dataclass(frozen=True, slots=True)
class NestedUpdate:
    """An update (no `sets`: the rows are only read, locked) and the writes through the
    relationships of the rows it matched."""

    update: Update
    nested: tuple[RelWrites, ...] = ()


def plan_nested_update(
    p: MutationPlanner, table: Table, args: dict[str, Any], where: BoolExp
) -> NestedUpdate:
    """The tree of a root update field whose `_nested` argument is not null. `args` are
    the field's arguments (`_set`, `_inc`, … and `_nested`); `where` the rows it names
    (its `where`, or its primary key). Raises `validation-failed` as an update does when a
    level has neither an operator nor `_nested`; `permission-error` when the role has no
    rule for a write (the schema offers none then)."""
    return _tree(p, table, args, where)


def _tree(p: MutationPlanner, table: Table, args: dict[str, Any], where: BoolExp) -> NestedUpdate:
    nested = p.reader.concrete(args.get(NESTED_ARG)) or {}
    present = any(p.reader.concrete(args.get(op)) is not None for op in UPDATE_OPS)
    if present or not nested:  # no operator and no `_nested`: the update's own error
        update = p._update(table, args, where)
    else:  # only `_nested`: the rows the role may update, read, not written
        update = Update(table.name, p._and(where, p._filter(table, "update")), ())
    rels = tuple(w for w in (_rel(p, table, name, value) for name, value in nested.items()) if w)
    return NestedUpdate(update, rels)


def _rel(p: MutationPlanner, table: Table, name: str, value: Any) -> RelWrites | None:
    value = p.reader.concrete(value)
    if value is None:
        return None
    rel = table.relationship_map[name]
    target = p.tables[rel.target]
    if rel.kind == "object":
        tree = _tree(p, target, value, TRUE)
        return RelWrites(rel.name, rel.kind, target.name, rel.mapping, updates=(tree,))
    delete: Delete | None = None
    where = p.reader.concrete(value.get("_delete"))
    if where is not None:
        delete = p._delete(target, p.bool_exp(target, where))
    updates = []
    for item in p.reader.concrete(value.get("_update")) or ():
        item = p.reader.concrete(item) or {}
        updates.append(_tree(p, target, item, p.bool_exp(target, item.get("where"))))
    insert: Insert | None = None
    given = p.reader.concrete(value.get("_insert"))
    if given is not None:
        rows = p.reader.concrete(given.get("data")) or []
        insert = p._insert(target, list(rows), given.get("on_conflict"))
    return RelWrites(rel.name, rel.kind, target.name, rel.mapping, delete, tuple(updates), insert)
