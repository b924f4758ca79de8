"""Run a nested update (`svc.plan.nested_update.NestedUpdate`) inside the mutation's
transaction, through the `MutationRunner` that runs the other writes.

Order: the root level's statement; then, for each relationship of its rows, the
`_delete`, the `_update`s (each level recursing into its own `_nested` with the rows it
matched) and the `_insert` (the nested insert of `svc.api.mutation`, once per parent row,
its relationship columns filled from the parent); last the answer, one statement over the
root rows that reads the related tables as written. A failed permission check or
constraint anywhere raises (`MutationRunner._fetch`), and the caller's transaction rolls
back every statement, so nothing of the request is written and no event is captured.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from svc.errors import SvcError
from svc.plan.mutation import Insert, MutationRoot, NestedUpdate, RelWrites
from svc.plan.nodes import Const, Param
from svc.sql.mutation import render_answer_from_rows
from svc.sql.nested_update import Parents, render_delete_rows, render_update_rows
from svc.sql.render import Statement

_decode = msgspec.json.decode


class MutationRunner(Protocol):
    """What a nested update needs of `svc.api.mutation.MutationRunner` (a protocol, so
    the two modules import one way)."""

    async def _fetch(self, stmt: Statement) -> Any:
        """The statement's value; raises `permission-error` on a failed check."""

    async def _insert_rows(
        self, ins: Insert, fixed: dict[str, Any]
    ) -> tuple[int, list[dict[str, Any]]]:
        """A nested insert with `fixed` column values; (rows written, its rows)."""


async def run_nested_update(runner: MutationRunner, tree: NestedUpdate, root: MutationRoot) -> Any:
    """Write `tree` and answer `root` (its JSON text or bytes; None for a `_by_pk` field
    whose row was not matched). `affected_rows` counts every row written: updated,
    deleted and inserted at every level (as nested inserts count theirs); rows a level
    only read (no operator given) are not counted.

    An error of a related level (`permission-error` of a failed check,
    `constraint-violation`, …) is answered at the input that asked for that write, as the
    reference locates a nested insert's errors at its argument:
    `$.selectionSet.<alias>.args._nested.<relationship>` (`update_x_many`:
    `…args.updates[<i>]._nested.<relationship>`) then `._delete`,
    `._update[<i>]` or `._insert` for an array relationship (and so on down `_nested`).
    The root level's errors keep the paths of a plain update's."""
    at = f"$.selectionSet.{root.alias}.args"
    if root.many:  # `update_x_many`: this tree is one of its `updates`
        at += f".updates[{next(i for i, w in enumerate(root.writes) if w is tree)}]"
    count, rows = await _level(runner, tree, None, at)
    stmt = render_answer_from_rows(root, Param(Const(rows), "json"), count)
    return await runner._fetch(stmt)


def _located(exc: SvcError, path: str) -> SvcError:
    """A copy of `exc` answered at `path`."""
    moved = exc.at("$")
    moved.path = path
    return moved


async def _fetch_at(runner: MutationRunner, stmt: Statement, path: str | None) -> Any:
    """`runner._fetch(stmt)`, its error located at `path` (None: left as it is)."""
    try:
        return await runner._fetch(stmt)
    except SvcError as exc:
        if path is None:
            raise
        raise _located(exc, path) from exc


async def _level(
    runner: MutationRunner, tree: NestedUpdate, parents: Parents | None, at: str
) -> tuple[int, list[dict[str, Any]]]:
    """Run one level and what hangs below it; (rows written, this level's rows). `at` is
    the path of the input object holding the level's operators and `_nested`."""
    stmt = render_update_rows(tree.update, parents)
    text = await _fetch_at(runner, stmt, None if parents is None else at)
    rows: list[dict[str, Any]] = _decode(text) if text is not None else []
    count = len(rows) if tree.update.sets else 0
    if not rows:
        return count, rows
    for rel in tree.nested:
        count += await _relationship(runner, tree, rel, rows, f"{at}._nested.{rel.name}")
    return count, rows


async def _relationship(
    runner: MutationRunner,
    tree: NestedUpdate,
    rel: RelWrites,
    rows: list[dict[str, Any]],
    at: str,
) -> int:
    """The writes through `rel` of `rows` (delete, updates, insert); rows written."""
    near = [n for n, _ in rel.mapping]
    keys = [{c: row.get(c) for c in near} for row in rows]
    parents = Parents(tree.update.table, rel.mapping, Param(Const(keys), "json"))
    count = 0
    if rel.delete is not None:
        deleted = await _fetch_at(runner, render_delete_rows(rel.delete, parents), f"{at}._delete")
        count += int(deleted or 0)
    for i, child in enumerate(rel.updates):
        where = at if rel.kind == "object" else f"{at}._update[{i}]"
        n, _ = await _level(runner, child, parents, where)
        count += n
    if rel.insert is not None:
        for row in rows:
            fixed = {far: row.get(near) for near, far in rel.mapping}
            try:
                n, _ = await runner._insert_rows(rel.insert, fixed)
            except SvcError as exc:
                raise _located(exc, f"{at}._insert") from exc
            count += n
    return count
