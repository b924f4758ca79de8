"""Render mutation plans: one statement per write, with the answer built by Postgres.

A write is a data-modifying CTE `"_m"`; the answer selects from it:
`WITH "_m" AS (INSERT … RETURNING *) SELECT json_build_object('affected_rows', …,
'returning', …)`. Relationships in `returning` read other tables as of the statement's
start, which is what the reference answers too.
"""

from __future__ import annotations

from svc.plan.mutation import (
    AffectedRows,
    Delete,
    Insert,
    InsertRow,
    MutationRoot,
    OnConflict,
    Update,
)
from svc.plan.nodes import TRUE, BoolExp, Field, Param, Typename
from svc.sql.render import Renderer, Statement, ident, literal, qualified

UPDATE_EXPRESSIONS = {
    "_set": "{v}",
    "_inc": "{c} + {v}",
    "_append": "{c} || {v}",
    "_prepend": "{v} || {c}",
    "_delete_key": "{c} - {v}",
    "_delete_elem": "{c} - {v}",
    "_delete_at_path": "{c} #- {v}",
}
WRITE_ALIAS = "_w"
CHECK = ident("_check")


def _check_column(r: Renderer, check: BoolExp) -> str:
    """`, (<check>) AS "_check"` for a permission check on the written row, else ""."""
    if check == TRUE:
        return ""
    return f", ({r.bool_exp(check, WRITE_ALIAS)}) AS {CHECK}"


def _columns(rows: tuple[InsertRow, ...]) -> list[str]:
    names: list[str] = []
    for row in rows:
        for name, _ in row.values:
            if name not in names:
                names.append(name)
    return names


def insert_sql(r: Renderer, ins: Insert, returning: str = "*") -> str:
    """`INSERT INTO t AS _w (…) VALUES (…), … [ON CONFLICT …] RETURNING …`; a row without a
    value for a column gets `DEFAULT`."""
    names = _columns(ins.rows)
    target = f"{qualified(ins.table)} AS {WRITE_ALIAS}"
    if not names:
        body = " DEFAULT VALUES" if len(ins.rows) == 1 else None
        if body is None:
            rows = ", ".join("(DEFAULT)" for _ in ins.rows)
            raise ValueError(f"cannot insert {rows} without columns")
        sql = f"INSERT INTO {target}{body}"
    else:
        values = []
        for row in ins.rows:
            given = dict(row.values)
            values.append(
                "(" + ", ".join(r.param(given[n]) if n in given else "DEFAULT" for n in names) + ")"
            )
        cols = ", ".join(ident(n) for n in names)
        sql = f"INSERT INTO {target} ({cols}) VALUES {', '.join(values)}"
    if ins.on_conflict is not None:
        sql += _on_conflict(r, ins.on_conflict)
    return f"{sql} RETURNING {returning}{_check_column(r, ins.check)}"


def _on_conflict(r: Renderer, oc: OnConflict) -> str:
    head = f" ON CONFLICT ON CONSTRAINT {ident(oc.constraint)}"
    if not oc.update_columns:
        return head + " DO NOTHING"
    sets = ", ".join(f"{ident(c)} = EXCLUDED.{ident(c)}" for c in oc.update_columns)
    return f"{head} DO UPDATE SET {sets} WHERE {r.bool_exp(oc.where, WRITE_ALIAS)}"


def update_sql(r: Renderer, upd: Update) -> str:
    """`UPDATE t AS _w SET … WHERE … RETURNING _w.*`; with nothing to set, no row is written
    (Hasura answers `affected_rows: 0`)."""
    if not upd.sets:
        return f"SELECT * FROM {qualified(upd.table)} WHERE false"
    sets = []
    for s in upd.sets:
        column = f"{WRITE_ALIAS}.{ident(s.column)}"
        value = UPDATE_EXPRESSIONS[s.op].format(c=column, v=r.param(s.value))
        sets.append(f"{ident(s.column)} = {value}")
    where = r.bool_exp(upd.where, WRITE_ALIAS)
    return (
        f"UPDATE {qualified(upd.table)} AS {WRITE_ALIAS} SET {', '.join(sets)} "
        f"WHERE {where} RETURNING {WRITE_ALIAS}.*{_check_column(r, upd.check)}"
    )


def delete_sql(r: Renderer, dele: Delete) -> str:
    """`DELETE FROM t AS _w WHERE … RETURNING _w.*`."""
    where = r.bool_exp(dele.where, WRITE_ALIAS)
    target = f"{qualified(dele.table)} AS {WRITE_ALIAS}"
    return f"DELETE FROM {target} WHERE {where} RETURNING {WRITE_ALIAS}.*"


def write_sql(r: Renderer, write: Insert | Update | Delete) -> str:
    """The data-modifying statement of one write (returning every column)."""
    if isinstance(write, Insert):
        return insert_sql(r, write)
    if isinstance(write, Update):
        return update_sql(r, write)
    return delete_sql(r, write)


def answer_sql(r: Renderer, root: MutationRoot, source: str) -> str:
    """The JSON answer of `root` over the written rows in `source` (a CTE name)."""
    if root.single:
        return _rows_json(r, root.row_fields, source, single=True)
    parts = []
    for name, item in root.output:
        if isinstance(item, AffectedRows):
            value = f"(SELECT count(*) FROM {ident(source)})"
        elif isinstance(item, Typename):
            value = literal(item.name)
        else:
            value = _rows_json(r, item.fields, source, single=False)
        parts.append(f"{literal(name)}, {value}")
    return f"json_build_object({', '.join(parts)})"


def _rows_json(
    r: Renderer, fields: tuple[tuple[str, Field], ...], source: str, *, single: bool
) -> str:
    b = r.alias("_b")
    joins: list[str] = []
    obj = r.row_json(fields, b, joins)
    # Rows answer in the order the write returned them, whatever joins the planner picks.
    order = f" ORDER BY {b}.{ident('_o.n')}"
    agg = f"json_agg({obj})->0" if single else f"coalesce(json_agg({obj}{order}), '[]')"
    numbered = f"(SELECT *, row_number() OVER () AS {ident('_o.n')} FROM {ident(source)})"
    return f"(SELECT {agg} FROM {numbered} AS {b}{''.join(' ' + j for j in joins)})"


def _check_of(write: Insert | Update | Delete) -> str:
    if isinstance(write, Delete) or write.check == TRUE:
        return ""
    return "insert" if isinstance(write, Insert) else "update"


def render_write(write: Insert | Update | Delete, root: MutationRoot) -> Statement:
    """One statement: the write as a CTE and the root's answer built from its rows; with a
    permission check, a second column tells whether every written row passed it."""
    r = Renderer()
    cte = write_sql(r, write)
    answer = answer_sql(r, root, "_m")
    check = _check_of(write)
    passed = (
        f", (SELECT coalesce(bool_and(coalesce({CHECK}, false)), true) FROM {ident('_m')})"
        if check
        else ""
    )
    sql = f"WITH {ident('_m')} AS ({cte}) SELECT {answer}{passed}"
    return Statement(sql, tuple(r.params), check)


def render_insert_returning_row(ins: Insert) -> Statement:
    """A single-table insert answering each inserted row as JSON (for nested inserts, which
    need the keys of the rows they insert first), and its check result when it has one."""
    r = Renderer()
    sql = insert_sql(r, ins, f"row_to_json({WRITE_ALIAS}.*)")
    return Statement(sql, tuple(r.params), _check_of(ins))


def render_answer_from_rows(root: MutationRoot, rows_json: Param, affected: int) -> Statement:
    """The answer of `root` over rows given as a JSON array parameter (after nested
    inserts): rows are re-read through `json_populate_recordset` of the table's type."""
    r = Renderer()
    table_type = qualified(root.table.name)
    source = f"SELECT * FROM json_populate_recordset(NULL::{table_type}, {r.param(rows_json)})"
    if root.single:
        answer = _rows_json(r, root.row_fields, "_m", single=True)
    else:
        parts = []
        for name, item in root.output:
            if isinstance(item, AffectedRows):
                value = str(int(affected))
            elif isinstance(item, Typename):
                value = literal(item.name)
            else:
                value = _rows_json(r, item.fields, "_m", single=False)
            parts.append(f"{literal(name)}, {value}")
        answer = f"json_build_object({', '.join(parts)})"
    return Statement(f"WITH {ident('_m')} AS ({source}) SELECT {answer}", tuple(r.params))
