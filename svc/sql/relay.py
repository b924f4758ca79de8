"""Render the Relay API's plan nodes (`svc.plan.nodes` `Connection`, `NodeId`): still one
statement per operation, the cursors and page info computed by Postgres.

A connection is, as the reference's `connectionToSelectWith`
(`Hasura/Backends/Postgres/Translate/Select/Internal/GenerateSelect.hs`):

    WITH "<c>_base"  AS (rows in order, each with its cursor and row number),
         "<c>_final" AS (the rows after the split (after/before), then the slice
                          (first: the first n; last: the last n))
    SELECT json_build_object('edges', …, 'pageInfo', …) AS "v"

`hasPreviousPage` is whether a base row numbers below the first final row,
`hasNextPage` whether one numbers above the last (the reference's `__page_info`); with no
final row both are false and both cursors null. The split compares the order values with
the cursor's (`(k1 > $1) OR ((k1 = $1) AND ((k2 > $2) OR …))`, `<` for a descending key,
reversed for `before`; the reference's `mkSplitBoolExp`). The rows are numbered in their
order (`row_number() OVER (ORDER BY …)`) rather than relying on a subquery's order.

A cursor is the JSON object of the order values then the primary key (nested along a
relationship or an aggregate: `{"articles_aggregate" : {"count" : 3}, "id" : 1}`) as
`json_build_object` prints it, base64-encoded without line breaks (the reference's
`encodeBase64`); a node id is `json_build_array(1, '<schema>', '<table>', <key…>)` so
encoded (`mkNodeId`).
"""

from __future__ import annotations

from svc.plan.nodes import (
    ComputedValue,
    Connection,
    EdgeCursor,
    EdgeNode,
    Edges,
    Field,
    NodeId,
    RelField,
    RowArg,
    Typename,
)
from svc.sql.render import Renderer, ident, literal

CURSOR = ident("__cursor")
ROW_NUMBER = ident("__rn")


def base64_text(expr: str) -> str:
    """The base64 text of `expr`'s UTF-8 bytes without the line breaks `encode` inserts
    every 76 characters (the reference's `encodeBase64`)."""
    return f"regexp_replace(encode(convert_to({expr}, 'UTF8'), 'base64'), '\\n', '', 'g')"


def node_id_sql(f: NodeId, alias: str) -> str:
    """The global id of the row `alias` (`NodeId`); schema and table names are metadata,
    written as literals as `__typename` is."""
    items = ["1", literal(f.table.schema), literal(f.table.name)]
    items += [f"{alias}.{ident(c)}" for c in f.columns]
    return base64_text(f"json_build_array({', '.join(items)})::text")


def _node_fields(conn: Connection) -> tuple[tuple[str, Field], ...]:
    return tuple(
        f
        for _, part in conn.fields
        if isinstance(part, Edges)
        for _, item in part.items
        if isinstance(item, EdgeNode)
        for f in item.fields
    )


def _needs_row(fields: tuple[tuple[str, Field], ...]) -> bool:
    """Whether a node field passes the row to a function (as `svc.sql.render`'s)."""
    for _, f in fields:
        if isinstance(f, ComputedValue):
            return True
        call = f.select.rows.function if isinstance(f, RelField) else None
        if call is not None and any(isinstance(v, RowArg) for _, v in call.args):
            return True
    return False


def _cursor_object(paths: tuple[tuple[str, ...], ...], values: list[str]) -> str:
    """`json_build_object` of the order values at their cursor paths, keys in order;
    keys sharing a first step share one nested object."""
    groups: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for path, value in zip(paths, values, strict=True):
        groups.setdefault(path[0], []).append((path[1:], value))
    parts: list[str] = []
    for key, items in groups.items():
        leaf = next((v for rest, v in items if not rest), None)
        if leaf is not None:
            parts.append(f"{literal(key)}, {leaf}")
            continue
        inner = _cursor_object(tuple(p for p, _ in items), [v for _, v in items])
        parts.append(f"{literal(key)}, {inner}")
    return f"json_build_object({', '.join(parts)})"


def render_connection(
    r: Renderer, conn: Connection, join: tuple[tuple[tuple[str, str], ...], str] | None
) -> str:
    """A `SELECT` whose single column `"v"` is the JSON of `conn` (module docstring);
    `join`: (mapping, parent alias) for an array relationship's connection."""
    c = r.alias("_c")
    base_name, final_name = ident(f"{c}_base"), ident(f"{c}_final")
    b = r.alias("_b")
    fields = _node_fields(conn)
    with_row = _needs_row(fields)
    base, outer_order = r.base(conn.rows, b, join, with_row)
    values = [
        f"{b}.{ident(k.leaf)}"
        if not k.path and isinstance(k.leaf, str)
        else f"{b}.{ident(f'_o.{i}')}"
        for i, k in enumerate(conn.rows.order_by)
    ]
    cursor = _cursor_object(conn.cursor, values) if values else "json_build_object()"
    numbered = (
        f"SELECT {b}.*, ({cursor})::text AS {CURSOR}, "
        f"row_number() OVER (ORDER BY {', '.join(outer_order) or 'true'}) AS {ROW_NUMBER} "
        f"FROM ({base}) AS {b}"
    )
    s = r.alias("_s")
    where = _split(r, conn, s) if conn.split else "true"
    if conn.last is not None:
        inner = (
            f"SELECT * FROM {base_name} AS {s} WHERE {where} "
            f"ORDER BY {s}.{ROW_NUMBER} DESC LIMIT {r.param(conn.last)}"
        )
        final = f"SELECT * FROM ({inner}) AS {s} ORDER BY {s}.{ROW_NUMBER}"
    else:
        final = f"SELECT * FROM {base_name} AS {s} WHERE {where} ORDER BY {s}.{ROW_NUMBER}"
        if conn.first is not None:
            final += f" LIMIT {r.param(conn.first)}"
    parts: list[str] = []
    for name, part in conn.fields:
        if isinstance(part, Typename):
            value = literal(part.name)
        elif isinstance(part, Edges):
            value = _edges(r, part, final_name, with_row)
        else:
            value = _page_info(r, part.items, base_name, final_name)
        parts.append(f"{literal(name)}, {value}")
    return (
        f"WITH {base_name} AS ({numbered}), {final_name} AS ({final}) "
        f"SELECT json_build_object({', '.join(parts)}) AS {ident('v')}"
    )


def _split(r: Renderer, conn: Connection, s: str) -> str:
    """The rows after (before) the cursor: lexicographic over the order keys."""
    out = "false"
    keys = conn.rows.order_by
    given_all = [r.param(p) for p in conn.split]  # numbered in key order
    for i in range(len(keys) - 1, -1, -1):
        key = keys[i]
        leaf = key.leaf
        name = leaf if not key.path and isinstance(leaf, str) else f"_o.{i}"
        value = f"{s}.{ident(name)}"
        given = given_all[i]
        greater = key.descending == conn.before  # after ascending, before descending
        op = ">" if greater else "<"
        out = f"({value} {op} {given}) OR (({value} = {given}) AND ({out}))"
    return out


def _edges(r: Renderer, edges: Edges, final_name: str, with_row: bool) -> str:
    f = r.alias("_f")
    if with_row:
        r.row_refs[f] = f"{f}.{ident('_row')}"
    joins: list[str] = []
    items: list[str] = []
    for name, item in edges.items:
        if isinstance(item, Typename):
            value = literal(item.name)
        elif isinstance(item, EdgeCursor):
            value = base64_text(f"{f}.{CURSOR}")
        else:
            value = r.row_json(item.fields, f, joins)
        items.append(f"{literal(name)}, {value}")
    obj = f"json_build_object({', '.join(items)})"
    return (
        f"(SELECT coalesce(json_agg({obj} ORDER BY {f}.{ROW_NUMBER}), '[]') "
        f"FROM {final_name} AS {f}" + "".join(" " + j for j in joins) + ")"
    )


def _page_info(
    r: Renderer, items: tuple[tuple[str, str | Typename], ...], base_name: str, final_name: str
) -> str:
    parts: list[str] = []
    for name, item in items:
        p = r.alias("_p")
        if isinstance(item, Typename):
            value = literal(item.name)
        elif item in ("startCursor", "endCursor"):
            order = "" if item == "startCursor" else " DESC"
            value = (
                f"(SELECT {base64_text(f'{p}.{CURSOR}')} FROM {final_name} AS {p} "
                f"ORDER BY {p}.{ROW_NUMBER}{order} LIMIT 1)"
            )
        else:
            op, bound = ("<", "min") if item == "hasPreviousPage" else (">", "max")
            value = (
                f"EXISTS (SELECT 1 FROM {base_name} AS {p} WHERE {p}.{ROW_NUMBER} {op} "
                f"(SELECT {bound}({ROW_NUMBER}) FROM {final_name}))"
            )
        parts.append(f"{literal(name)}, {value}")
    return f"json_build_object({', '.join(parts)})"
