"""Render plan nodes to one SQL statement in which Postgres builds the JSON answer.

Shape (reference notes, "SQL shape"): a list is `coalesce(json_agg(<row json> ORDER BY …),
'[]')` over a base subquery that applies `WHERE`/`ORDER BY`/`LIMIT`; array relationships
are `LEFT OUTER JOIN LATERAL`s, object relationships onto a key plain `LEFT OUTER JOIN`s; a
row is `row_to_json((SELECT "_e" FROM (SELECT … AS "alias") AS "_e"))`. Every value is a
`$n` parameter sent as text and cast to the column's type; every identifier is quoted.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from svc.ir.agg_predicates import AGG_PREDICATES
from svc.ir.operators import GEO_TYPES, OPERATORS, Form
from svc.metadata.model import QualifiedName
from svc.plan.groups import Groups
from svc.plan.nodes import (
    TRUE,
    AggAggregate,
    AggCount,
    AggLeaf,
    AggNodes,
    AggOp,
    Aggregate,
    And,
    BoolExp,
    Cast,
    ColCompare,
    ColumnField,
    Compare,
    Compared,
    ComputedValue,
    Connection,
    CountFilter,
    DWithin,
    Exists,
    Field,
    FnCall,
    Hop,
    IsNull,
    NodeId,
    Not,
    Or,
    OrderKey,
    Param,
    QueryPlan,
    Redacted,
    RelField,
    RowArg,
    Rows,
    Select,
    Typename,
)

MAX_IDENT = 63  # Postgres truncates longer identifiers
D_WITHIN = OPERATORS["_st_d_within"].sql


def ident(name: str) -> str:
    """A quoted identifier: `"na""me"`."""
    return '"' + name.replace('"', '""') + '"'


def qualified(name: QualifiedName) -> str:
    """`"schema"."name"`."""
    return f"{ident(name.schema)}.{ident(name.name)}"


def literal(text: str) -> str:
    """A SQL string literal; used only for generated names (`__typename`), never user input."""
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class Statement:
    """SQL text and the parameters `$1…$n` in order.

    `check` names the permission (`insert`/`update`) whose check the statement's second
    column reports (true: every written row passed); "" when there is none."""

    sql: str
    params: tuple[Param, ...]
    check: str = ""


@dataclass
class Renderer:
    """Renders one statement; collects parameters and hands out fresh aliases."""

    params: list[Param] = field(default_factory=list)
    counter: int = 0
    # How to name the whole row of an alias when it is not a table alias itself (a base
    # subquery exposes its table row as the column "_row").
    row_refs: dict[str, str] = field(default_factory=dict)

    def alias(self, prefix: str) -> str:
        """A fresh table alias (`_t3`)."""
        self.counter += 1
        return f"{prefix}{self.counter}"

    def param(self, p: Param) -> str:
        """`$n::text::<type>` for a parameter (`text[]` for lists)."""
        n = self.ref(p)
        if p.is_list:
            return f"{n}::text[]" if p.pg_type == "text" else f"{n}::text[]::{p.pg_type}[]"
        if p.pg_type == "text":
            return f"{n}::text"
        base = p.pg_type.rsplit(".", 1)[-1]
        if base in GEO_TYPES:  # PostGIS values travel as GeoJSON (Hasura's representation)
            return f"ST_GeomFromGeoJSON({n}::text)::{p.pg_type}"
        return f"{n}::text::{p.pg_type}"

    def ref(self, p: Param) -> str:
        """Where the text of parameter `p` comes from: `$n` (a live query's renderer,
        `svc.sql.live`, reads it from its cohort's variables instead)."""
        self.params.append(p)
        return f"${len(self.params)}"

    # -- functions ----------------------------------------------------------------------
    def call(self, fn: FnCall, alias: str) -> str:
        """`"schema"."fn"(…)`; the row argument is the row named `alias`."""
        args: list[str] = []
        for name, value in fn.args:
            text = self.row_refs.get(alias, alias) if isinstance(value, RowArg) else None
            if text is None:
                assert isinstance(value, Param)
                text = self.param(value)
            args.append(f"{ident(name)} => {text}" if name else text)
        return f"{qualified(fn.function)}({', '.join(args)})"

    def column_expr(self, column: Compared, alias: str) -> str:
        """A column of the row `alias`, a scalar computed field's call on it, either cast
        (`_cast`: the type is one of `svc.ir.operators.CASTS`, never the request's), or
        either redacted for an inherited role (`Redacted`)."""
        if isinstance(column, Cast):
            return f"({self.column_expr(column.column, alias)})::{column.pg_type}"
        if isinstance(column, Redacted):
            value = self.column_expr(column.column, alias)
            return f"CASE WHEN {self.bool_exp(column.case, alias)} THEN {value} ELSE NULL END"
        if isinstance(column, FnCall):
            return self.call(column, alias)
        return f"{alias}.{ident(column)}"

    def source(self, table: QualifiedName, fn: FnCall | None, parent: str | None) -> str:
        """What rows come from: a table, or a function call (row argument: `parent`)."""
        if fn is None:
            return qualified(table)
        return self.call(fn, parent or "")

    # -- boolean expressions ------------------------------------------------------------
    def bool_exp(self, exp: BoolExp, alias: str) -> str:
        """A SQL condition over the row named `alias`."""
        if isinstance(exp, And):
            if not exp.items:
                return "true"
            return " AND ".join(f"({self.bool_exp(e, alias)})" for e in exp.items)
        if isinstance(exp, Or):
            if not exp.items:
                return "false"
            return " OR ".join(f"({self.bool_exp(e, alias)})" for e in exp.items)
        if isinstance(exp, Not):
            return f"NOT ({self.bool_exp(exp.item, alias)})"
        if isinstance(exp, IsNull):
            column = self.column_expr(exp.column, alias)
            return f"{column} IS {'NOT ' if exp.negated else ''}NULL"
        if isinstance(exp, Compare):
            return self._compare(exp, alias)
        if isinstance(exp, DWithin):
            args = [
                self.column_expr(exp.column, alias),
                self.param(exp.origin),
                self.param(exp.distance),
            ]
            if exp.use_spheroid is not None:
                args.append(self.param(exp.use_spheroid))
            return f"{D_WITHIN}({', '.join(args)})"
        if isinstance(exp, ColCompare):
            op = OPERATORS[exp.op].sql
            return f"{alias}.{ident(exp.column)} {op} {alias}.{ident(exp.other)}"
        if isinstance(exp, Exists):
            inner = self.alias("_x")
            cond = self.join_condition(exp.mapping, alias, inner)
            return (
                f"EXISTS (SELECT 1 FROM {self.source(exp.table, exp.function, alias)} AS {inner} "
                f"WHERE ({cond}) AND ({self.bool_exp(exp.where, inner)}))"
            )
        if isinstance(exp, CountFilter):
            return self._count_filter(exp, alias)
        raise TypeError(f"unknown boolean expression {exp!r}")

    def _count_filter(self, exp: CountFilter, alias: str) -> str:
        """`EXISTS (SELECT 1 FROM (SELECT fn(…) AS count FROM target WHERE join AND
        where) AS c WHERE predicate)`: the predicate's comparisons read the aggregate as a
        column of the row `c`. `count` of several columns counts their row (one
        argument); other functions take their columns as arguments (`corr(y, x)`)."""
        inner, counted = self.alias("_x"), self.alias("_c")
        cond = self.join_condition(exp.mapping, alias, inner)
        columns = ", ".join(self.column_expr(c, inner) for c in exp.columns)
        function = AGG_PREDICATES[exp.function].name  # a fixed name, never the request's
        if function == "count" and len(exp.columns) > 1:
            columns = f"({columns})"
        value = f"{'DISTINCT ' if exp.distinct else ''}{columns}" if columns else "*"
        return (
            f"EXISTS (SELECT 1 FROM (SELECT {function}({value}) AS {ident('count')} "
            f"FROM {qualified(exp.table)} AS {inner} "
            f"WHERE ({cond}) AND ({self.bool_exp(exp.where, inner)})) AS {counted} "
            f"WHERE {self.bool_exp(exp.predicate, counted)})"
        )

    def _compare(self, exp: Compare, alias: str) -> str:
        # The operator's SQL token and form come from the operator table, never the request.
        op = OPERATORS[exp.op]
        column = self.column_expr(exp.column, alias)
        if op.form is Form.QUANTIFIED:
            value = exp.value
            if value.is_list and value.pg_type.endswith("]"):
                # `_in` on an array column: a list of array literals, one row each
                # (`= ANY(<array>)` would compare with the arrays' elements)
                texts = self.param(replace(value, pg_type="text"))
                return f"{column} {op.sql}(SELECT e::{value.pg_type} FROM unnest({texts}) e)"
            return f"{column} {op.sql}({self.param(value)})"
        if op.form is Form.FUNCTION:
            return f"{op.sql}({column}, {self.param(exp.value)})"
        return f"{column} {'NOT ' if op.negated else ''}{op.sql} {self.param(exp.value)}"

    @staticmethod
    def join_condition(mapping: tuple[tuple[str, str], ...], outer: str, inner: str) -> str:
        """`inner.remote = outer.local AND …` for a relationship's column mapping."""
        return (
            " AND ".join(f"{inner}.{ident(far)} = {outer}.{ident(near)}" for near, far in mapping)
            or "true"
        )

    # -- ordering -----------------------------------------------------------------------
    def order_expr(self, key: OrderKey, alias: str) -> str:
        """The value a key orders by, for the row named `alias`."""
        return self._path_expr(key.path, key.leaf, alias)

    def _path_expr(
        self, path: tuple[Hop, ...], leaf: str | AggLeaf | FnCall | Redacted, alias: str
    ) -> str:
        if path:
            hop = path[0]
            inner = self.alias("_o")
            cond = self.join_condition(hop.mapping, alias, inner)
            if hop.where != TRUE:
                cond = f"({cond}) AND ({self.bool_exp(hop.where, inner)})"
            value = self._path_expr(path[1:], leaf, inner)
            return f"(SELECT {value} FROM {qualified(hop.table)} AS {inner} WHERE {cond} LIMIT 1)"
        if isinstance(leaf, str | FnCall | Redacted):
            return self.column_expr(leaf, alias)
        inner = self.alias("_a")
        cond = self.join_condition(leaf.mapping, alias, inner)
        if leaf.where != TRUE:
            cond = f"({cond}) AND ({self.bool_exp(leaf.where, inner)})"
        agg = (
            "count(*)"
            if leaf.op == "count" or leaf.column is None
            else f"{leaf.op}({self.column_expr(leaf.column, inner)})"
        )
        source = self.source(leaf.table, leaf.function, alias)
        return f"(SELECT {agg} FROM {source} AS {inner} WHERE {cond})"

    @staticmethod
    def direction(key: OrderKey) -> str:
        """`ASC NULLS LAST` and friends."""
        return (
            f"{'DESC' if key.descending else 'ASC'} NULLS {'FIRST' if key.nulls_first else 'LAST'}"
        )

    # -- rows ---------------------------------------------------------------------------
    def base(
        self,
        rows: Rows,
        alias: str,
        join: tuple[tuple[tuple[str, str], ...], str] | None,
        with_row: bool = False,
    ) -> tuple[str, list[str]]:
        """The base subquery of `rows` (filter, order, window) and the outer order items.

        `join` is (mapping, parent alias) for a relationship. Order keys through relationships
        are computed once here and exposed as columns `"_o.N"` for the outer `json_agg`.
        `with_row` adds the whole row as column `"_row"`, for computed fields' functions.
        """
        t = self.alias("_t")
        conds = []
        if join is not None:
            conds.append(self.join_condition(join[0], join[1], t))
        conds.append(self.bool_exp(rows.where, t))
        extra: list[str] = []
        inner_order: list[str] = []
        outer_order: list[str] = []
        plain: list[tuple[object, str]] = []  # (leaf, its SQL) of keys without a path
        for i, key in enumerate(rows.order_by):
            expr = self.order_expr(key, t)
            if not key.path:
                plain.append((key.leaf, expr))
            direction = self.direction(key)
            inner_order.append(f"{expr} {direction}")
            if not key.path and isinstance(key.leaf, str):
                outer_order.append(f"{alias}.{ident(key.leaf)} {direction}")
            else:
                name = ident(f"_o.{i}")
                extra.append(f"{expr} AS {name}")
                outer_order.append(f"{alias}.{name} {direction}")
        distinct = ""
        if rows.distinct_on:
            # the very text of the matching `ORDER BY` item: Postgres compares expressions,
            # and a redacted column rendered twice would differ in its parameters
            exprs = [
                next((e for leaf, e in plain if leaf == c), None) or self.column_expr(c, t)
                for c in rows.distinct_on
            ]
            distinct = f"DISTINCT ON ({', '.join(exprs)}) "
            inner_order = (exprs if not rows.order_by else []) + inner_order
        if with_row:
            extra.append(f"{t} AS {ident('_row')}")
            self.row_refs[alias] = f"{alias}.{ident('_row')}"
        select_list = ", ".join([f"{t}.*", *extra])
        source = self.source(rows.table, rows.function, join[1] if join else None)
        sql = f"SELECT {distinct}{select_list} FROM {source} AS {t} WHERE " + (
            " AND ".join(f"({c})" for c in conds)
        )
        if inner_order:
            sql += " ORDER BY " + ", ".join(inner_order)
        if rows.limit is not None and rows.limit_cap is not None:
            sql += f" LIMIT LEAST({self.param(rows.limit)}, {int(rows.limit_cap)})"
        elif rows.limit is not None:
            sql += f" LIMIT {self.param(rows.limit)}"
        elif rows.limit_cap is not None:
            sql += f" LIMIT {int(rows.limit_cap)}"
        if rows.offset is not None:
            sql += f" OFFSET {self.param(rows.offset)}"
        return sql, outer_order

    # -- selections ---------------------------------------------------------------------
    def row_json(
        self,
        fields: tuple[tuple[str, Field], ...],
        alias: str,
        joins: list[str],
        whole_table: bool = False,
    ) -> str:
        """A JSON object of `fields` for the row `alias`; relationship joins go to `joins`.
        `whole_table`: the rows of `alias` are a whole table (see `field`)."""
        items = [(name, self.field(f, alias, joins, whole_table)) for name, f in fields]
        if not items:
            return "json_build_object()"
        if any(len(name.encode()) > MAX_IDENT for name, _ in items):
            pairs = ", ".join(f"{literal(name)}, {expr}" for name, expr in items)
            return f"json_build_object({pairs})"
        e = self.alias("_e")
        cols = ", ".join(f"{expr} AS {ident(name)}" for name, expr in items)
        return f"row_to_json((SELECT {e} FROM (SELECT {cols}) AS {e}))"

    def field(self, f: Field, alias: str, joins: list[str], whole_table: bool = False) -> str:
        """The SQL value of one field of the row `alias`.

        An object relationship onto a key builds its JSON with the parent's row
        (`_object_join`), so only for rows answered, except when the parent rows are a
        whole table (`whole_table`): then every target row that can match is scanned
        anyway, and a many-to-one target is usually the smaller table, so its JSON is built
        once per target row inside the join (`_object_lateral`). Measured on Chinook:
        `tracks_media_some` (26 of 3,503 tracks onto 347 albums) 1.3-1.6x faster joined
        outside; `tracks_media_all` (3,503 tracks onto 5 media types) 1.4x faster inside."""
        if isinstance(f, Typename):
            return literal(f.name)
        if isinstance(f, NodeId):  # the Relay API's global id
            from svc.sql.relay import node_id_sql  # here: `svc.sql.relay` imports this module

            return node_id_sql(f, alias)
        if isinstance(f, ComputedValue | ColumnField):
            value = self.scalar(f, alias)
            if f.case is None:
                return value
            # an inherited role's cell: null in rows no parent granting it admits (the
            # reference's `AnnColumnCaseBoolExp`)
            return f"CASE WHEN {self.bool_exp(f.case, alias)} THEN {value} ELSE NULL END"
        if f.unique and f.mapping and isinstance(f.select, Select):
            if whole_table:
                return self._object_lateral(f, f.select, alias, joins)
            return self._object_join(f, f.select, alias, joins)
        if whole_table and f.mapping and isinstance(f.select, Select) and _groupable(f.select):
            return self._array_grouped(f, f.select, alias, joins)
        rel = self.alias("_r")
        sub = self.selection(f.select, (f.mapping, alias))
        joins.append(f"LEFT OUTER JOIN LATERAL ({sub}) AS {rel} ON true")
        return f"{rel}.{ident('v')}"

    def scalar(self, f: ComputedValue | ColumnField, alias: str) -> str:
        """The SQL value of a column or scalar computed field of the row `alias`."""
        if isinstance(f, ComputedValue):
            value = self.call(f.call, alias)
            return f"({value})::text" if f.as_text else value
        value = f"{alias}.{ident(f.column)}"
        if f.geojson:  # 15 digits, long CRS names: the reference's GeoJSON
            value = f"ST_AsGeoJSON({value}, 15, 4)::json"
        if f.json_path is not None:
            value = f"({value} #> {self.param(f.json_path)})"
        return f"({value})::text" if f.as_text else value

    def _object_join(self, f: RelField, sel: Select, parent: str, joins: list[str]) -> str:
        """An object relationship onto a key of the target: a plain `LEFT OUTER JOIN` in
        the parent's `FROM` (its own joins follow it), and the object's JSON built where
        the parent's row is, so only for rows that are answered. Built inside the join,
        Postgres would compute it for every row of the target when it hashes that side.
        A matched row has its join columns non-null; an unmatched one is all nulls."""
        b = self.alias("_b")
        cond = self._object_condition(f, sel, parent, b)
        joins.append(f"LEFT OUTER JOIN {qualified(sel.rows.table)} AS {b} ON {cond}")
        obj = self.row_json(sel.fields, b, joins)
        matched = f"{b}.{ident(f.mapping[0][1])}"
        return f"CASE WHEN {matched} IS NULL THEN NULL ELSE {obj} END"

    def _object_condition(self, f: RelField, sel: Select, parent: str, b: str) -> str:
        """The join of an object relationship's row `b` to `parent`, with the role's filter."""
        cond = self.join_condition(f.mapping, parent, b)
        if sel.rows.where != TRUE:
            cond = f"({cond}) AND ({self.bool_exp(sel.rows.where, b)})"
        return cond

    def _object_lateral(self, f: RelField, sel: Select, parent: str, joins: list[str]) -> str:
        """An object relationship onto a key as a plain lateral subquery that builds the
        object's JSON; Postgres flattens it into a hash or merge join."""
        rel, b = self.alias("_r"), self.alias("_b")
        inner: list[str] = []
        obj = self.row_json(sel.fields, b, inner)
        cond = self._object_condition(f, sel, parent, b)
        joins.append(
            f"LEFT OUTER JOIN LATERAL (SELECT {obj} AS {ident('v')} FROM "
            f"{qualified(sel.rows.table)} AS {b} {' '.join(inner)} WHERE {cond}) AS {rel} "
            "ON true"
        )
        return f"{rel}.{ident('v')}"

    def _array_grouped(self, f: RelField, sel: Select, parent: str, joins: list[str]) -> str:
        """An array relationship of a whole-table parent: the target's rows aggregated once,
        grouped by the join columns, and joined to the parents, instead of one lateral
        aggregate per parent row (`albums_tracks_genre_all`: 1.5x faster on Chinook).
        A parent without rows gets `[]`, as from the lateral."""
        rel, b = self.alias("_r"), self.alias("_b")
        base, outer_order = self.base(sel.rows, b, None, _needs_row(sel))
        inner: list[str] = []
        obj = self.row_json(sel.fields, b, inner, _whole_table(sel.rows))
        order = f" ORDER BY {', '.join(outer_order)}" if outer_order else ""
        keys = [f"{b}.{ident(far)}" for _, far in f.mapping]
        cols = ", ".join(f"{k} AS {ident(f'_k{i}')}" for i, k in enumerate(keys))
        sub = (
            f"SELECT {cols}, json_agg({obj}{order}) AS {ident('v')} FROM ({base}) AS {b}"
            + "".join(" " + j for j in inner)
            + f" GROUP BY {', '.join(keys)}"
        )
        cond = " AND ".join(
            f"{rel}.{ident(f'_k{i}')} = {parent}.{ident(near)}"
            for i, (near, _) in enumerate(f.mapping)
        )
        joins.append(f"LEFT OUTER JOIN ({sub}) AS {rel} ON {cond}")
        return f"coalesce({rel}.{ident('v')}, '[]')"

    def selection(
        self,
        sel: Select | Aggregate | Connection,
        join: tuple[tuple[tuple[str, str], ...], str] | None,
    ) -> str:
        """A `SELECT` whose single column `"v"` is the JSON of `sel`."""
        if isinstance(sel, Connection):  # the Relay API's (`svc.sql.relay`)
            from svc.sql.relay import render_connection  # here: it imports this module

            return render_connection(self, sel, join)
        if isinstance(sel, Groups):
            from svc.sql.groups import groups_selection  # it builds on this module

            return groups_selection(self, sel, join)
        b = self.alias("_b")
        base, outer_order = self.base(sel.rows, b, join, _needs_row(sel))
        joins: list[str] = []
        order = f" ORDER BY {', '.join(outer_order)}" if outer_order else ""
        if isinstance(sel, Select):
            obj = self.row_json(sel.fields, b, joins, join is None and _whole_table(sel.rows))
            value = (
                f"json_agg({obj}{order})->0"
                if sel.single
                else f"coalesce(json_agg({obj}{order}), '[]')"
            )
        else:
            value = self.aggregate_json(sel, b, joins, order)
        return f"SELECT {value} AS {ident('v')} FROM ({base}) AS {b}" + "".join(
            " " + j for j in joins
        )

    def aggregate_json(self, agg: Aggregate, b: str, joins: list[str], order: str) -> str:
        """`json_build_object('aggregate', …, 'nodes', …)` for the rows `b`."""
        parts: list[str] = []
        for name, item in agg.fields:
            if isinstance(item, Typename):
                value = literal(item.name)
            elif isinstance(item, AggNodes):
                obj = self.row_json(item.fields, b, joins)
                value = _nodes_json(obj, order, agg.nodes_limit)
            else:
                value = self._aggregate_object(item, b)
            parts.append(f"{literal(name)}, {value}")
        return f"json_build_object({', '.join(parts)})"

    def _aggregate_object(self, item: AggAggregate, b: str) -> str:
        parts: list[str] = []
        for name, agg in item.items:
            if isinstance(agg, Typename):
                value = literal(agg.name)
            elif isinstance(agg, AggCount):
                value = self._count(agg, b)
            else:
                value = self._agg_op(agg, b)
            parts.append(f"{literal(name)}, {value}")
        return f"json_build_object({', '.join(parts)})"

    def _count(self, agg: AggCount, b: str) -> str:
        if not agg.columns:
            return "count(*)"
        cols = ", ".join(self.column_expr(c, b) for c in agg.columns)
        if len(agg.columns) > 1:
            cols = f"({cols})"
        return f"count({'DISTINCT ' if agg.distinct else ''}{cols})"

    def _agg_op(self, agg: AggOp, b: str) -> str:
        parts: list[str] = []
        for name, column, as_text in agg.columns:
            if not column:
                value = literal(agg.typename)
            else:
                value = f"{agg.op}({self.column_expr(column, b)})"
                if as_text:
                    value = f"({value})::text"
            parts.append(f"{literal(name)}, {value}")
        return f"json_build_object({', '.join(parts)})"


def _nodes_json(obj: str, order: str, limit: int | None) -> str:
    """The `nodes` list: every row's object in order, or the first `limit` of them (a
    permission's row limit that does not cap the aggregate; `svc.plan.build.aggregate_of`)."""
    if limit is None:
        return f"coalesce(json_agg({obj}{order}), '[]')"
    return f"coalesce(array_to_json((array_agg({obj}{order}))[1:{int(limit)}]), '[]')"


def _whole_table(rows: Rows) -> bool:
    """Whether `rows` are every row of a table: no filter (the role's included), window,
    `DISTINCT ON` or function."""
    return rows.where == TRUE and _unwindowed(rows)


def _unwindowed(rows: Rows) -> bool:
    """No limit, offset, `DISTINCT ON` or function source: the rows are all that match."""
    return (
        rows.limit is None
        and rows.limit_cap is None
        and rows.offset is None
        and not rows.distinct_on
        and rows.function is None
    )


def _groupable(sel: Select) -> bool:
    """Whether an array relationship's rows can be aggregated for all parents at once: a
    list (not a single object) without window or `DISTINCT ON` per parent."""
    return not sel.single and _unwindowed(sel.rows)


def _needs_row(sel: Select | Aggregate) -> bool:
    """Whether some field of `sel` passes the row to a function (a computed field)."""
    if isinstance(sel, Select):
        fields = sel.fields
    else:
        fields = tuple(f for _, n in sel.fields if isinstance(n, AggNodes) for f in n.fields)
    for _, f in fields:
        if isinstance(f, ComputedValue):
            return True
        call = f.select.rows.function if isinstance(f, RelField) else None
        if call is not None and any(isinstance(v, RowArg) for _, v in call.args):
            return True
    return False


def render_root(sel: Select | Aggregate | Connection) -> Statement:
    """The statement for one root field: one row, one `json` column."""
    r = Renderer()
    sql = r.selection(sel, None)
    return Statement(sql, tuple(r.params))


def render_query(plan: QueryPlan) -> tuple[Statement, tuple[str, ...]]:
    """One statement for all database root fields of `plan`, and their aliases in order.

    With one root field the statement is that field's own (what explain shows); with several,
    each is a scalar subquery of one `SELECT`, so the operation is still one round trip.
    """
    roots = [
        (r.alias, r.select)
        for r in plan.roots
        if isinstance(r.select, Select | Aggregate | Connection)
    ]
    if not roots:
        return Statement("", ()), ()
    if len(roots) == 1:
        return render_root(roots[0][1]), (roots[0][0],)
    r = Renderer()
    cols = ", ".join(f"({r.selection(sel, None)}) AS {ident(alias)}" for alias, sel in roots)
    return Statement(f"SELECT {cols}", tuple(r.params)), tuple(a for a, _ in roots)
