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

from decimal import Decimal
from typing import Any, Protocol

import msgspec

from svc.errors import SvcError, validation_failed
from svc.plan.mutation import Insert, MutationRoot, NestedUpdate, RelWrites
from svc.plan.nodes import Const, Param
from svc.sql.mutation import render_answer_from_rows
from svc.sql.nested_update import (
    level_keys,
    parents_of,
    render_delete_rows,
    render_update_rows,
)
from svc.sql.render import Statement


class MutationRunner(Protocol):
    """What a nested update needs of `svc.api.mutation.MutationRunner` (a protocol, so
    the two modules import one way)."""

    max_items: int  # rows an `_insert` may write (matched rows x its rows); 0: any

    async def _fetch(self, stmt: Statement) -> Any:
        """The statement's value; raises `permission-error` on a failed check."""

    async def _fetch_row(self, stmt: Statement) -> Any:
        """The statement's first row; raises `permission-error` on a failed check."""

    async def _insert_many(self, ins: Insert, fixed: list[dict[str, Any]]) -> int:
        """`ins` once per item of `fixed` (column values); rows written."""


_EXACT = msgspec.json.Decoder(float_hook=Decimal)


def raw_json(text: bytes) -> Param:
    """A `json` parameter sending `text` unchanged: rows one statement answered, passed
    to the next without a decode and re-encode, so numbers keep every digit."""
    return Param(Const(msgspec.Raw(text)), "json")


def as_bytes(value: Any) -> bytes:
    """A JSON answer column (bytes from the json codec) as bytes."""
    return value if isinstance(value, bytes) else str(value).encode()


def decode_exact(text: Any) -> Any:
    """A JSON text from Postgres decoded without losing digits: numbers with a fraction
    or exponent as `Decimal` (integers are Python ints already), for values read back
    into parameters (`svc.api.mutation.MutationRunner._const` sends them as their
    text)."""
    return _EXACT.decode(as_bytes(text))


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
    The root level's errors keep the paths of a plain update's.

    Rows travel between statements as the JSON text Postgres answered (never decoded and
    re-encoded, so `numeric`, `bigint` and `float8` values keep every digit); a related
    level answers only the columns the levels below it join on, and a leaf level only
    its count. An `_insert` writing more than `runner.max_items` rows (the rows matched
    times its `data` rows; `SVC_GRAPHQL_MAX_LIST_ITEMS`) is refused before it runs: 200
    `validation-failed` at its `…._insert`."""
    at = f"$.selectionSet.{root.alias}.args"
    if root.many:  # `update_x_many`: this tree is one of its `updates`
        at += f".updates[{next(i for i, w in enumerate(root.writes) if w is tree)}]"
    count, rows = await _level(runner, tree, None, at)
    stmt = render_answer_from_rows(root, raw_json(rows), count)
    return await runner._fetch(stmt)


def _located(exc: SvcError, path: str) -> SvcError:
    """A copy of `exc` answered at `path`."""
    moved = exc.at("$")
    moved.path = path
    return moved


async def _fetch_at(runner: MutationRunner, stmt: Statement, path: str | None) -> Any:
    """`runner._fetch_row(stmt)`, its error located at `path` (None: left as it is)."""
    try:
        return await runner._fetch_row(stmt)
    except SvcError as exc:
        if path is None:
            raise
        raise _located(exc, path) from exc


async def _level(
    runner: MutationRunner, tree: NestedUpdate, parents: Any, at: str
) -> tuple[int, bytes]:
    """Run one level and what hangs below it; (rows written, this level's rows as a JSON
    array: every column at the root, the join columns below it). `at` is the path of
    the input object holding the level's operators and `_nested`."""
    keys = None if parents is None else level_keys(tree)
    stmt = render_update_rows(tree.update, parents, keys)
    row = await _fetch_at(runner, stmt, None if parents is None else at)
    rows, matched = as_bytes(row[0]), int(row[1])
    count = matched if tree.update.sets else 0
    if not matched:
        return count, rows
    for rel in tree.nested:
        where = f"{at}._nested.{rel.name}"
        count += await _relationship(runner, tree, rel, rows, matched, where)
    return count, rows


async def _relationship(
    runner: MutationRunner,
    tree: NestedUpdate,
    rel: RelWrites,
    rows: bytes,
    matched: int,
    at: str,
) -> int:
    """The writes through `rel` of `rows` (`matched` of them): delete, updates, insert;
    rows written."""
    parents = parents_of(tree, rel, raw_json(rows))
    count = 0
    if rel.delete is not None:
        deleted = await _fetch_at(runner, render_delete_rows(rel.delete, parents), f"{at}._delete")
        count += int(deleted[0] or 0)
    for i, child in enumerate(rel.updates):
        where = at if rel.kind == "object" else f"{at}._update[{i}]"
        n, _ = await _level(runner, child, parents, where)
        count += n
    if rel.insert is not None and rel.insert.rows:
        total = matched * len(rel.insert.rows)
        if 0 < runner.max_items < total:
            raise validation_failed(
                f"the _insert would write {total} rows ({matched} matched rows times "
                f"{len(rel.insert.rows)}), more than the limit of {runner.max_items} "
                "(SVC_GRAPHQL_MAX_LIST_ITEMS)",
                f"{at}._insert",
            )
        fixed = [{far: row.get(near) for near, far in rel.mapping} for row in decode_exact(rows)]
        try:
            count += await runner._insert_many(rel.insert, fixed)
        except SvcError as exc:
            raise _located(exc, f"{at}._insert") from exc
    return count
