"""Render the statements of a nested update (`svc.plan.nested_update`).

Each level is its own statement, run in order in the mutation's transaction
(`svc.api.nested_update`), so a later statement sees what earlier ones wrote: the
related rows' statements, and the answer (`svc.sql.mutation.render_answer_from_rows`),
which therefore reads the new values of the related rows. A level answers the rows it
wrote as a JSON array (every column at the root, for the answer; below it only the
columns its own relationships join on; nothing at a leaf), how many, and with a
permission check, whether every row passed it (as `svc.sql.mutation.render_write` does);
those rows are the parents of the next level, passed back unchanged (the JSON text) as
one `json` parameter, read with the relationship's columns and their types, and joined
through the relationship's mapping:

    WITH "_m" AS (
      UPDATE "public"."article" AS _w SET "title" = $1::text
      WHERE (<where> AND <role's update filter>)
        AND EXISTS (SELECT 1 FROM json_to_recordset($2::json) AS _p("id" integer)
                    WHERE _p."id" = _w."author_id")
      RETURNING NULL::json AS "_row", (<role's update check>) AS "_check")
    SELECT '[]'::json, count(*), coalesce(bool_and(coalesce("_check", false)), true)
    FROM "_m"

A level that sets nothing selects its rows `FOR UPDATE` instead (read and locked, not
written). Separate statements rather than one statement of chained CTEs because the CTEs
of one statement all see the snapshot from before it, so neither the answer nor a
permission check of a related row could see the parent's new values, and two CTEs
updating the same row (a relationship back to the same table) are undefined in Postgres.
"""

from __future__ import annotations

from dataclasses import dataclass

from svc.metadata.model import QualifiedName
from svc.plan.mutation import Delete, Insert, NestedUpdate, RelWrites, Update
from svc.plan.nodes import TRUE, Const, Param
from svc.sql.mutation import CHECK, UPDATE_EXPRESSIONS, WRITE_ALIAS, insert_sql
from svc.sql.render import Renderer, Statement, ident, literal, qualified

PARENT_ALIAS = "_p"
ROW = ident("_row")
M = ident("_m")


@dataclass(frozen=True, slots=True)
class Parents:
    """The rows of the level above, joined to the written table: `rows` is a `json`
    parameter (an array of objects holding at least the `near` columns of `mapping`, as
    the level above answered them: its JSON text, passed on unchanged), `mapping` pairs
    (parent column, written table's column), `types` gives each parent column's Postgres
    type (`svc.ir.model.Column.pg_type`), in `mapping`'s order."""

    table: QualifiedName
    mapping: tuple[tuple[str, str], ...]
    rows: Param
    types: tuple[str, ...]


def _join(r: Renderer, parents: Parents | None) -> str:
    """` AND EXISTS (… the parent rows … matching _w)`, or "" at the root. The parents are
    read with `json_to_recordset` and a column list of the mapping's columns only, so
    their other columns (a NOT NULL domain among them) are neither needed nor checked."""
    if parents is None:
        return ""
    on = " AND ".join(
        f"{PARENT_ALIAS}.{ident(near)} = {WRITE_ALIAS}.{ident(far)}"
        for near, far in parents.mapping
    )
    columns = ", ".join(
        f"{ident(near)} {pg_type}"
        for (near, _), pg_type in zip(parents.mapping, parents.types, strict=True)
    )
    rows = f"json_to_recordset({r.param(parents.rows)}) AS {PARENT_ALIAS}({columns})"
    return f" AND EXISTS (SELECT 1 FROM {rows} WHERE {on})"


def _rows(keys: tuple[str, ...] | None) -> str:
    """The JSON of a written row: every column (`keys` None), or only `keys`."""
    if keys is None:
        return f"row_to_json({WRITE_ALIAS}.*)"
    pairs = ", ".join(f"{literal(k)}, {WRITE_ALIAS}.{ident(k)}" for k in keys)
    return f"json_build_object({pairs})"


def render_update_rows(
    upd: Update, parents: Parents | None, keys: tuple[str, ...] | None = None
) -> Statement:
    """One level: `UPDATE` (or, without sets, `SELECT … FOR UPDATE`) of the rows matching
    `upd.where` (and the parents). Answers one row: the rows as a JSON array (every
    column when `keys` is None; only the `keys` columns otherwise; `keys` empty: `[]`,
    a level with nothing below it), the number of rows, and with a check, a last column:
    whether every updated row passed it (`Statement.check` = "update")."""
    r = Renderer()
    where = f"({r.bool_exp(upd.where, WRITE_ALIAS)}){_join(r, parents)}"
    target = f"{qualified(upd.table)} AS {WRITE_ALIAS}"
    row = "NULL::json" if keys == () else _rows(keys)
    agg = "'[]'::json" if keys == () else f"coalesce(json_agg({ROW}), '[]')"
    if not upd.sets:
        cte = f"SELECT {row} AS {ROW} FROM {target} WHERE {where} FOR UPDATE OF {WRITE_ALIAS}"
        sql = f"WITH {M} AS ({cte}) SELECT {agg}, count(*) FROM {M}"
        return Statement(sql, tuple(r.params))
    sets = []
    for s in upd.sets:
        column = f"{WRITE_ALIAS}.{ident(s.column)}"
        sets.append(
            f"{ident(s.column)} = {UPDATE_EXPRESSIONS[s.op].format(c=column, v=r.param(s.value))}"
        )
    returning = f"{row} AS {ROW}"
    passed = ""
    if upd.check != TRUE:
        returning += f", ({r.bool_exp(upd.check, WRITE_ALIAS)}) AS {CHECK}"
        passed = f", coalesce(bool_and(coalesce({CHECK}, false)), true)"
    cte = f"UPDATE {target} SET {', '.join(sets)} WHERE {where} RETURNING {returning}"
    sql = f"WITH {M} AS ({cte}) SELECT {agg}, count(*){passed} FROM {M}"
    return Statement(sql, tuple(r.params), "update" if passed else "")


def render_delete_rows(dele: Delete, parents: Parents) -> Statement:
    """`_delete` through an array relationship: the parents' related rows matching
    `dele.where` (the role's delete filter in it); answers how many were deleted."""
    r = Renderer()
    where = f"({r.bool_exp(dele.where, WRITE_ALIAS)}){_join(r, parents)}"
    cte = f"DELETE FROM {qualified(dele.table)} AS {WRITE_ALIAS} WHERE {where} RETURNING 1"
    return Statement(f"WITH {M} AS ({cte}) SELECT count(*) FROM {M}", tuple(r.params))


def render_insert_count(ins: Insert) -> Statement:
    """A multi-row insert of `ins` (no relationships in its rows) answering the number of
    rows inserted and, with a check, a last column: whether every one passed it
    (`Statement.check` = "insert")."""
    r = Renderer()
    cte = insert_sql(r, ins, "1")
    passed = ""
    if ins.check != TRUE:
        passed = f", coalesce(bool_and(coalesce({CHECK}, false)), true)"
    sql = f"WITH {M} AS ({cte}) SELECT count(*){passed} FROM {M}"
    return Statement(sql, tuple(r.params), "insert" if passed else "")


def level_keys(tree: NestedUpdate) -> tuple[str, ...]:
    """The columns of a related level's rows the levels below it need: the parent
    columns of its relationships' mappings (none at a leaf)."""
    out: list[str] = []
    for rel in tree.nested:
        out.extend(near for near, _ in rel.mapping if near not in out)
    return tuple(out)


def parents_of(tree: NestedUpdate, rel: RelWrites, rows: Param) -> Parents:
    """The parents of `rel`'s writes: the rows of `tree`'s level, given as `rows`."""
    return Parents(tree.update.table, rel.mapping, rows, rel.types)


PLACEHOLDER_ROWS = "<the rows of the level above, known when it has run>"


def tree_statements(tree: NestedUpdate, parents: Parents | None = None) -> list[Statement]:
    """Every update and delete statement of `tree` in run order (`svc compile`), the rows
    of a level above as a placeholder `json` parameter (the real ones exist only once it
    has run). An `_insert` depends on the rows' values and is not listed."""
    keys = None if parents is None else level_keys(tree)
    out = [render_update_rows(tree.update, parents, keys)]
    for rel in tree.nested:
        below = parents_of(tree, rel, Param(Const(PLACEHOLDER_ROWS), "json"))
        if rel.delete is not None:
            out.append(render_delete_rows(rel.delete, below))
        for child in rel.updates:
            out.extend(tree_statements(child, below))
    return out
