"""`UPDATE`, `DELETE` and `count` statements of the legacy `/v1/query` data operations
(`update`, `delete`, `count`: the operations the reference's event-trigger tests use to
change rows). The filter is a planned boolean expression; values are text parameters
cast to the column type (ARCHITECTURE "Parameters")."""

from __future__ import annotations

from svc.metadata.qualified import QualifiedName
from svc.plan.nodes import BoolExp, Const, Param
from svc.sql.render import Renderer, Statement, ident, qualified

ALIAS = "_w"


def render_update(
    table: QualifiedName,
    sets: tuple[tuple[str, str, object], ...],
    incs: tuple[tuple[str, str, object], ...],
    where: BoolExp,
) -> Statement:
    """`UPDATE t SET c = $n, d = d + $m WHERE …`; `sets` / `incs` are (column, pg_type,
    value). Answers through `execute`'s status (`UPDATE n`)."""
    r = Renderer()
    items = [f"{ident(c)} = {r.param(Param(Const(v), t))}" for c, t, v in sets]
    items += [
        f"{ident(c)} = {ALIAS}.{ident(c)} + {r.param(Param(Const(v), t))}" for c, t, v in incs
    ]
    cond = r.bool_exp(where, ALIAS)
    sql = f"UPDATE {qualified(table)} AS {ALIAS} SET {', '.join(items)} WHERE {cond}"
    return Statement(sql, tuple(r.params))


def render_delete(table: QualifiedName, where: BoolExp) -> Statement:
    """`DELETE FROM t WHERE …` (answers through the status `DELETE n`)."""
    r = Renderer()
    cond = r.bool_exp(where, ALIAS)
    return Statement(f"DELETE FROM {qualified(table)} AS {ALIAS} WHERE {cond}", tuple(r.params))


def render_count(table: QualifiedName, where: BoolExp) -> Statement:
    """`SELECT count(*) FROM t WHERE …` (one integer)."""
    r = Renderer()
    cond = r.bool_exp(where, ALIAS)
    sql = f"SELECT count(*) FROM {qualified(table)} AS {ALIAS} WHERE {cond}"
    return Statement(sql, tuple(r.params))
