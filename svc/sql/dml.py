"""`INSERT` statements (the legacy `insert` operation; GraphQL inserts build on this)."""

from __future__ import annotations

from svc.metadata.model import QualifiedName
from svc.plan.nodes import Const, Param
from svc.sql.render import Renderer, Statement, ident, qualified


def render_insert(
    table: QualifiedName,
    columns: tuple[tuple[str, str], ...],
    rows: list[dict[str, object]],
) -> Statement:
    """`INSERT INTO t (cols) VALUES (…), …` with `DEFAULT` where a row lacks a column.

    `columns` are (name, pg_type) pairs, the union of the rows' keys; values become text
    parameters cast to the column type.
    """
    r = Renderer()
    values: list[str] = []
    for row in rows:
        items = [
            r.param(Param(Const(row[name]), pg_type)) if name in row else "DEFAULT"
            for name, pg_type in columns
        ]
        values.append("(" + ", ".join(items) + ")")
    cols = ", ".join(ident(name) for name, _ in columns)
    if not columns:
        sql = f"INSERT INTO {qualified(table)} DEFAULT VALUES"
    else:
        sql = f"INSERT INTO {qualified(table)} ({cols}) VALUES {', '.join(values)}"
    return Statement(sql, tuple(r.params))
