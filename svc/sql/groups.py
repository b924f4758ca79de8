"""The SQL of a grouped aggregate (`svc.plan.groups.Groups`), a subquery whose one
column `"v"` is the JSON list of groups, like every other selection:

    SELECT coalesce(json_agg(json_build_object('keys', json_build_object('a', "_g"."_k0"),
                                               'aggregate', "_g"."_a1")
                             ORDER BY "_g"."_m0" DESC NULLS FIRST, "_g"."_k0" ASC NULLS LAST),
                    '[]') AS "v"
    FROM (SELECT * FROM (SELECT <key 0> AS "_k0", json_build_object('count', count(*), …)
                                AS "_a1", count(*) AS "_m0"
                         FROM (<base: filter, the role's filter, the relationship's join>)
                              AS "_b" GROUP BY 1) AS "_h"
          WHERE <having over "_h"> ORDER BY … LIMIT LEAST($n, <cap>) OFFSET $m) AS "_g"

Keys are grouped by position (`GROUP BY 1, 2`), so an expression with parameters (an
inherited role's redacted column) is written once; the group's answer reads keys and
aggregates as columns of its row. `having` and `order_by` read the measures `"_m<i>"`,
so the comparison operators are the ordinary ones (`svc.ir.operators`).
"""

from __future__ import annotations

from svc.plan.groups import GroupKeys, Groups, key_column, measure_column
from svc.plan.nodes import TRUE, AggAggregate, Typename
from svc.sql.render import Renderer, ident, literal


def groups_selection(
    r: Renderer, g: Groups, join: tuple[tuple[tuple[str, str], ...], str] | None
) -> str:
    """A `SELECT` whose single column `"v"` is the JSON array of the groups of `g`
    (`join`: the relationship's mapping and parent alias, None for a root field)."""
    b = r.alias("_b")
    base, _ = r.base(g.rows, b, join)
    cols: list[str] = []
    for i, key in enumerate(g.keys):
        cols.append(f"{r.column_expr(key.column, b)} AS {ident(key_column(i))}")
    aggregates: dict[int, str] = {}
    for i, (_, item) in enumerate(g.items):
        if isinstance(item, AggAggregate):
            aggregates[i] = ident(f"_a{i}")
            cols.append(f"{r._aggregate_object(item, b)} AS {aggregates[i]}")
    for i, m in enumerate(g.measures):
        value = "count(*)" if m.column is None else f"{m.op}({r.column_expr(m.column, b)})"
        cols.append(f"{value} AS {ident(measure_column(i))}")
    if not cols:
        cols.append(f"count(*) AS {ident('_n')}")
    grouped = f"SELECT {', '.join(cols)} FROM ({base}) AS {b}"
    if g.keys:
        grouped += " GROUP BY " + ", ".join(str(i + 1) for i in range(len(g.keys)))
    h = r.alias("_h")
    sql = f"SELECT * FROM ({grouped}) AS {h}"
    if g.having != TRUE:
        sql += f" WHERE {r.bool_exp(g.having, h)}"
    if g.order_by:
        sql += " ORDER BY " + ", ".join(
            f"{h}.{ident(str(k.leaf))} {r.direction(k)}" for k in g.order_by
        )
    sql += _window(r, g)
    out = r.alias("_g")
    parts: list[str] = []
    for i, (name, item) in enumerate(g.items):
        if isinstance(item, Typename):
            value = literal(item.name)
        elif isinstance(item, GroupKeys):
            value = _keys_json(g, item, out)
        else:
            value = f"{out}.{aggregates[i]}"
        parts.append(f"{literal(name)}, {value}")
    obj = f"json_build_object({', '.join(parts)})"
    order = ", ".join(f"{out}.{ident(str(k.leaf))} {r.direction(k)}" for k in g.order_by)
    order = f" ORDER BY {order}" if order else ""
    return f"SELECT coalesce(json_agg({obj}{order}), '[]') AS {ident('v')} FROM ({sql}) AS {out}"


def _keys_json(g: Groups, item: GroupKeys, out: str) -> str:
    """`json_build_object` of the selected keys of the group row `out`."""
    parts: list[str] = []
    for name, index in item.items:
        if isinstance(index, Typename):
            value = literal(index.name)
        else:
            key = g.keys[index]
            value = f"{out}.{ident(key_column(index))}"
            if key.geojson:  # as a column is answered (`Renderer.scalar`)
                value = f"ST_AsGeoJSON({value}, 15, 4)::json"
            elif key.as_text:
                value = f"({value})::text"
        parts.append(f"{literal(name)}, {value}")
    return f"json_build_object({', '.join(parts)})"


def _window(r: Renderer, g: Groups) -> str:
    """`LIMIT`/`OFFSET` of the groups: the request's limit, at most the permission's."""
    sql = ""
    if g.limit is not None and g.cap is not None:
        sql += f" LIMIT LEAST({r.param(g.limit)}, {int(g.cap)})"
    elif g.limit is not None:
        sql += f" LIMIT {r.param(g.limit)}"
    elif g.cap is not None:
        sql += f" LIMIT {int(g.cap)}"
    if g.offset is not None:
        sql += f" OFFSET {r.param(g.offset)}"
    return sql
