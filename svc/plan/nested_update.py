"""Plan nested updates: `update_x`/`update_x_by_pk` (or an update of `update_x_many`)
with a `_nested` argument (`svc.schema.nested_updates`, README "Nested updates").

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

from dataclasses import replace
from typing import Any

from svc.ir.model import Table
from svc.plan.mutation import (
    UPDATE_OPS,
    Delete,
    Insert,
    MutationPlanner,
    NestedUpdate,
    RelWrites,
    Update,
)
from svc.plan.nodes import TRUE, And, BoolExp, Compare
from svc.schema.nested_updates import NESTED_ARG


class NestedUpdatePlanner(MutationPlanner):
    """The mutation planner with nested updates: an update field whose `_nested`
    argument is not null is planned as a `NestedUpdate` tree (`svc.plan.mutation` holds
    the nodes)."""

    def _update_or_nested(
        self, table: Table, args: dict[str, Any], where: BoolExp
    ) -> Update | NestedUpdate:
        """`args` are the field's arguments (`_set`, `_inc`, … and `_nested`); `where`
        the rows it names (its `where`, or its primary key). Raises `validation-failed`
        as an update does when a level has neither an operator nor `_nested`;
        `permission-error` when the role has no rule for a write (the schema offers
        none then)."""
        if self.reader.concrete(args.get(NESTED_ARG)) is None:
            return self._update(table, args, where)
        return self._tree(table, args, where)

    def _tree(self, table: Table, args: dict[str, Any], where: BoolExp) -> NestedUpdate:
        nested = self.reader.concrete(args.get(NESTED_ARG)) or {}
        present = any(self.reader.concrete(args.get(op)) is not None for op in UPDATE_OPS)
        if present or not nested:  # no operator and no `_nested`: the update's own error
            update = self._update(table, args, where)
        else:  # only `_nested`: the rows the role may update, read, not written
            update = Update(table.name, self._and(where, self._filter(table, "update")), ())
        rels = (self._rel(table, name, value) for name, value in nested.items())
        return NestedUpdate(update, tuple(r for r in rels if r is not None))

    def _rel(self, table: Table, name: str, value: Any) -> RelWrites | None:
        value = self.reader.concrete(value)
        if value is None:
            return None
        rel = table.relationship_map[name]
        target = self.tables[rel.target]
        types = tuple(table.column_map[near].pg_type for near, _ in rel.mapping)
        if rel.kind == "object":
            tree = self._tree(target, value, TRUE)
            return RelWrites(
                rel.name, rel.kind, target.name, rel.mapping, updates=(tree,), types=types
            )
        delete: Delete | None = None
        where = self.reader.concrete(value.get("_delete"))
        if where is not None:
            delete = self._delete(target, self.bool_exp(target, where))
        updates = []
        for item in self.reader.concrete(value.get("_update")) or ():
            item = self.reader.concrete(item) or {}
            updates.append(self._tree(target, item, self.bool_exp(target, item.get("where"))))
        insert: Insert | None = None
        given = self.reader.concrete(value.get("_insert"))
        if given is not None:
            rows = self.reader.concrete(given.get("data")) or []
            insert = self._insert(target, list(rows), given.get("on_conflict"))
            insert = self._preset_guard(target, insert, rel.mapping)
        return RelWrites(
            rel.name, rel.kind, target.name, rel.mapping, delete, tuple(updates), insert, types
        )

    def _preset_guard(
        self, target: Table, insert: Insert, mapping: tuple[tuple[str, str], ...]
    ) -> Insert:
        """`insert` whose check also requires, on each new row, every relationship column
        the role's insert permission presets to equal its preset.

        A nested update's `_insert` fills the relationship columns from the parent row
        (as the reference's nested insert does: `insertArrRel`'s additional columns win
        over the permission's presets in `Hasura.Backends.Postgres.Execute.Insert`,
        `mkSQLRow`); here the parent is any row the role may *update*, so without this
        guard a role whose preset pins `author_id` to its session could insert under
        another author. A row whose parent's value differs from the preset fails the
        check: 400 `permission-error` "check constraint of an insert permission has
        failed" (README "Nested updates")."""
        presets = dict(self._presets(target, "insert"))
        pinned = [far for _, far in mapping if far in presets]
        if not pinned:
            return insert
        guard = And(tuple(Compare(c, "_eq", presets[c]) for c in pinned))
        return replace(insert, check=self._and(insert.check, guard))
