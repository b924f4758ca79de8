"""Generate the GraphQL schema of one role from the IR, with Hasura's type names.

Names (reference notes, "Generated GraphQL names"): per table `x`: object `x`, `x_bool_exp`,
`x_order_by`, `x_select_column`, `x_aggregate`, `x_aggregate_fields`, `x_<op>_fields`,
`x_aggregate_order_by`, `x_<op>_order_by`; per scalar `S`: `S_comparison_exp`; the enum
`order_by`. Fields are thunks so relationships may form cycles.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLEnumValue,
    GraphQLField,
    GraphQLFloat,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInt,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLString,
)

from svc.ir.model import TEXT_SCALARS, Column, ComputedField, Function, FunctionArg, Ir, Table
from svc.ir.operators import GENERAL_OPS, LIST_OPS, POSTGIS_OPS, TEXT_OPS
from svc.schema.info import info as _info
from svc.schema.info import list_nn as _list_nn
from svc.schema.info import nn as _nn
from svc.schema.mutations import MutationTypes

BUILTIN_SCALARS: dict[str, GraphQLScalarType] = {
    "Int": GraphQLInt,
    "Float": GraphQLFloat,
    "String": GraphQLString,
    "Boolean": GraphQLBoolean,
}
ORDER_BY_VALUES = (
    ("asc", "in ascending order, nulls last"),
    ("asc_nulls_first", "in ascending order, nulls first"),
    ("asc_nulls_last", "in ascending order, nulls last"),
    ("desc", "in descending order, nulls first"),
    ("desc_nulls_first", "in descending order, nulls first"),
    ("desc_nulls_last", "in descending order, nulls last"),
)
# Aggregate operators over numeric columns, and the scalar their result has.
NUMERIC_AGG_OPS = (
    "avg",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "sum",
    "var_pop",
    "var_samp",
    "variance",
)
COMPARABLE_AGG_OPS = ("max", "min")
ALL_AGG_OPS = tuple(sorted(NUMERIC_AGG_OPS + COMPARABLE_AGG_OPS))
# Types that have no ordering in Postgres, hence no max/min.
UNORDERED_TYPES = frozenset(
    {
        "json",
        "jsonb",
        "point",
        "line",
        "lseg",
        "box",
        "path",
        "polygon",
        "circle",
        "xml",
        "geometry",
        "geography",
    }
)


RECURSION_LIMIT = 20_000


class SchemaBuilder:
    """Builds one `GraphQLSchema`; types are memoised by name so each is made once."""

    def __init__(
        self, ir: Ir, role: str = "admin", *, infer_function_permissions: bool = True
    ) -> None:
        self.ir = ir
        self.role = role
        self.infer_function_permissions = infer_function_permissions
        # Tables the role may select (all, for admin), without the invalid-named ones.
        self.tables = {
            name: t
            for name, t in ir.tables.items()
            if t.gql_name and (role == "admin" or role in t.select_permissions)
        }
        self.scalars: dict[str, GraphQLScalarType] = dict(BUILTIN_SCALARS)
        self.types: dict[str, Any] = {}
        self.order_by = GraphQLEnumType(
            "order_by",
            {name: GraphQLEnumValue(name, description=desc) for name, desc in ORDER_BY_VALUES},
            description="column ordering options",
        )

    # -- what the role may see ------------------------------------------------------------
    def cols(self, table: Table) -> tuple[Column, ...]:
        """The columns the role may select."""
        if self.role == "admin":
            return table.columns
        allowed = set(table.select_permissions[self.role].columns)
        return tuple(c for c in table.columns if c.name in allowed)

    def aggregations(self, table: Table) -> bool:
        """Whether the role may use `x_aggregate` and `<rel>_aggregate` of `table`."""
        return self.role == "admin" or table.select_permissions[self.role].allow_aggregations

    # -- memoisation --------------------------------------------------------------------
    def _memo(self, name: str, make: Callable[[], Any]) -> Any:
        found = self.types.get(name)
        if found is None:
            found = make()
            self.types[name] = found
        return found

    def scalar(self, name: str) -> GraphQLScalarType:
        """The scalar named `name`, creating a custom one on first use."""
        found = self.scalars.get(name)
        if found is None:
            found = GraphQLScalarType(name)
            self.scalars[name] = found
        return found

    # -- comparison expressions ---------------------------------------------------------
    def comparison_exp(self, column: Column) -> GraphQLInputObjectType:
        """`<Scalar>_comparison_exp` with the operators the reference offers for the type."""
        scalar = self.scalar(column.scalar)
        name = f"{column.scalar}_comparison_exp"

        def make() -> GraphQLInputObjectType:
            def fields() -> dict[str, GraphQLInputField]:
                f: dict[str, GraphQLInputField] = {}
                for op in GENERAL_OPS:
                    f[op] = GraphQLInputField(scalar)
                for op in LIST_OPS:
                    f[op] = GraphQLInputField(_list_nn(scalar))
                f["_is_null"] = GraphQLInputField(GraphQLBoolean)
                if column.scalar in TEXT_SCALARS:
                    for op in TEXT_OPS:
                        f[op] = GraphQLInputField(scalar)
                if column.type_name in ("geometry", "geography"):
                    for op in POSTGIS_OPS:
                        if op != "_st_d_within":
                            f[op] = GraphQLInputField(scalar)
                    f["_st_d_within"] = GraphQLInputField(self._d_within_input(column.type_name))
                if column.type_name == "jsonb":
                    f["_contains"] = GraphQLInputField(scalar)
                    f["_contained_in"] = GraphQLInputField(scalar)
                    f["_has_key"] = GraphQLInputField(GraphQLString)
                    f["_has_keys_all"] = GraphQLInputField(_list_nn(GraphQLString))
                    f["_has_keys_any"] = GraphQLInputField(_list_nn(GraphQLString))
                return dict(sorted(f.items()))

            return GraphQLInputObjectType(
                name,
                fields,
                description=f"Boolean expression to compare columns of type "
                f"\"{column.scalar}\". All fields are combined with logical 'AND'.",
            )

        return self._memo(name, make)  # type: ignore[no-any-return]

    def _d_within_input(self, type_name: str) -> GraphQLInputObjectType:
        """`st_d_within_input` (geometry) / `st_d_within_geography_input` (Hasura's)."""
        geo = self.scalar(type_name)
        if type_name == "geography":
            name = "st_d_within_geography_input"
            fields = {
                "distance": GraphQLInputField(_nn(GraphQLFloat)),
                "from": GraphQLInputField(_nn(geo)),
                "use_spheroid": GraphQLInputField(GraphQLBoolean, default_value=True),
            }
        else:
            name = "st_d_within_input"
            fields = {
                "distance": GraphQLInputField(_nn(GraphQLFloat)),
                "from": GraphQLInputField(_nn(geo)),
            }
        return self._memo(  # type: ignore[no-any-return]
            name, lambda: GraphQLInputObjectType(name, fields)
        )

    # -- computed fields ----------------------------------------------------------------
    def computed_fields(self, table: Table) -> tuple[ComputedField, ...]:
        """The computed fields the role may use: scalar ones listed in its select
        permission, `SETOF` ones whose table it may select (Hasura's rules)."""
        if self.role == "admin":
            allowed = None
        else:
            allowed = set(table.select_permissions[self.role].computed_fields)
        out: list[ComputedField] = []
        for cf in table.computed_fields:
            if cf.returns_table is not None:
                if cf.returns_table in self.tables:
                    out.append(cf)
            elif allowed is None or cf.name in allowed:
                out.append(cf)
        return tuple(out)

    def function_args_type(
        self, name: str, args: tuple[FunctionArg, ...]
    ) -> GraphQLInputObjectType | None:
        """`<fn>_args`: one nullable field per input argument (None without arguments)."""
        if not args:
            return None
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: GraphQLInputObjectType(
                name, {a.gql_name: GraphQLInputField(self.scalar(a.scalar)) for a in args}
            ),
        )

    def _args_argument(
        self, type_name: str, args: tuple[FunctionArg, ...]
    ) -> dict[str, GraphQLArgument]:
        arg_type = self.function_args_type(type_name, args)
        if arg_type is None:
            return {}
        required = any(not a.has_default for a in args)
        return {
            "args": GraphQLArgument(
                _nn(arg_type) if required else arg_type,
                description="input parameters for function",
            )
        }

    def _computed_field(self, table: Table, cf: ComputedField) -> GraphQLField:
        args = self._args_argument(f"{cf.function.name}_args", cf.args)
        if cf.returns_table is None:
            return GraphQLField(
                self.scalar(cf.scalar or "String"),
                args,
                description=cf.comment
                or f"A computed field, executes function {cf.function.quoted()}",
                extensions=_info("computed_scalar", computed=cf),
            )
        target = self.tables[cf.returns_table]
        return GraphQLField(
            _nn(_list_nn(self.object_type(target))),
            {**args, **self.select_args(target)},
            description=cf.comment or f"A computed field, executes function {cf.function.quoted()}",
            extensions=_info("computed_set", computed=cf, table=target),
        )

    # -- per-table types ----------------------------------------------------------------
    def object_type(self, table: Table) -> GraphQLObjectType:
        """The object type `x` of a table."""

        def make() -> GraphQLObjectType:
            return GraphQLObjectType(
                table.gql_name,
                lambda: self._object_fields(table),
                description=table.comment or f'columns and relationships of "{table.name}"',
            )

        return self._memo(table.gql_name, make)  # type: ignore[no-any-return]

    def _column_field(self, column: Column) -> GraphQLField:
        out: Any = self.scalar(column.scalar)
        if not column.nullable:
            out = _nn(out)
        args: dict[str, GraphQLArgument] = {}
        if column.type_name in ("json", "jsonb"):
            args["path"] = GraphQLArgument(GraphQLString, description="JSON select path")
        return GraphQLField(
            out, args, description=column.comment, extensions=_info("column", column=column)
        )

    def _object_fields(self, table: Table) -> dict[str, GraphQLField]:
        fields: dict[str, GraphQLField] = {}
        for column in self.cols(table):
            fields[column.gql_name] = self._column_field(column)
        for cf in self.computed_fields(table):
            fields[cf.name] = self._computed_field(table, cf)
        for rel in table.relationships:
            target = self.tables.get(rel.target)
            if target is None or not target.gql_name:
                continue
            if rel.kind == "object":
                fields[rel.name] = GraphQLField(
                    self.object_type(target),
                    description=rel.comment or "An object relationship",
                    extensions=_info("object_rel", table=target, relationship=rel),
                )
            else:
                fields[rel.name] = GraphQLField(
                    _nn(_list_nn(self.object_type(target))),
                    self.select_args(target),
                    description=rel.comment or "An array relationship",
                    extensions=_info("array_rel", table=target, relationship=rel),
                )
                if not self.aggregations(target):
                    continue
                fields[f"{rel.name}_aggregate"] = GraphQLField(
                    _nn(self.aggregate_type(target)),
                    self.select_args(target),
                    description=rel.comment or "An aggregate relationship",
                    extensions=_info("array_agg", table=target, relationship=rel),
                )
        return fields

    def select_args(self, table: Table) -> dict[str, GraphQLArgument]:
        """`distinct_on`, `limit`, `offset`, `order_by`, `where` of a list field."""
        return {
            "distinct_on": GraphQLArgument(
                _list_nn(self.select_column_enum(table)), description="distinct select on columns"
            ),
            "limit": GraphQLArgument(GraphQLInt, description="limit the number of rows returned"),
            "offset": GraphQLArgument(
                GraphQLInt, description="skip the first n rows. Use only with order_by"
            ),
            "order_by": GraphQLArgument(
                _list_nn(self.order_by_type(table)),
                description="sort the rows by one or more columns",
            ),
            "where": GraphQLArgument(self.bool_exp(table), description="filter the rows returned"),
        }

    def select_column_enum(self, table: Table) -> GraphQLEnumType:
        """`x_select_column`: the columns, for `distinct_on` and `count(columns:)`."""
        name = f"{table.gql_name}_select_column"
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: GraphQLEnumType(
                name,
                {
                    c.gql_name: GraphQLEnumValue(c.name, description="column name")
                    for c in self.cols(table)
                },
                description=f'select columns of table "{table.name}"',
            ),
        )

    def bool_exp(self, table: Table) -> GraphQLInputObjectType:
        """`x_bool_exp`: `_and`, `_or`, `_not`, columns and relationships."""
        name = f"{table.gql_name}_bool_exp"

        def fields() -> dict[str, GraphQLInputField]:
            me = self.bool_exp(table)
            f: dict[str, GraphQLInputField] = {
                "_and": GraphQLInputField(_list_nn(me)),
                "_not": GraphQLInputField(me),
                "_or": GraphQLInputField(_list_nn(me)),
            }
            for column in self.cols(table):
                f[column.gql_name] = GraphQLInputField(self.comparison_exp(column))
            for rel in table.relationships:
                target = self.tables.get(rel.target)
                if target is not None and target.gql_name:
                    f[rel.name] = GraphQLInputField(self.bool_exp(target))
            for cf in self.computed_fields(table):
                if any(not a.has_default for a in cf.args):
                    continue  # Hasura: only computed fields without input arguments
                if cf.returns_table is not None:
                    f[cf.name] = GraphQLInputField(self.bool_exp(self.tables[cf.returns_table]))
                else:
                    f[cf.name] = GraphQLInputField(self._computed_comparison(cf))
            return dict(sorted(f.items()))

        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: GraphQLInputObjectType(
                name,
                fields,
                description=f'Boolean expression to filter rows from the table "{table.name}". '
                "All fields are combined with a logical 'AND'.",
            ),
        )

    def order_by_type(self, table: Table) -> GraphQLInputObjectType:
        """`x_order_by`: columns, object relationships, `<arr>_aggregate`."""
        name = f"{table.gql_name}_order_by"

        def fields() -> dict[str, GraphQLInputField]:
            f: dict[str, GraphQLInputField] = {}
            for column in self.cols(table):
                f[column.gql_name] = GraphQLInputField(self.order_by)
            for rel in table.relationships:
                target = self.tables.get(rel.target)
                if target is None or not target.gql_name:
                    continue
                if rel.kind == "object":
                    f[rel.name] = GraphQLInputField(self.order_by_type(target))
                else:
                    f[f"{rel.name}_aggregate"] = GraphQLInputField(self.aggregate_order_by(target))
            for cf in self.computed_fields(table):
                if any(not a.has_default for a in cf.args):
                    continue
                if cf.returns_table is None:
                    f[cf.name] = GraphQLInputField(self.order_by)
                elif self.aggregations(self.tables[cf.returns_table]):
                    target = self.tables[cf.returns_table]
                    f[f"{cf.name}_aggregate"] = GraphQLInputField(self.aggregate_order_by(target))
            return dict(sorted(f.items()))

        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: GraphQLInputObjectType(
                name,
                fields,
                description=f'Ordering options when selecting data from "{table.name}".',
            ),
        )

    def _computed_comparison(self, cf: ComputedField) -> GraphQLInputObjectType:
        """The comparison expression of a scalar computed field's return type."""
        column = Column(
            name=cf.name,
            gql_name=cf.name,
            pg_type=cf.pg_type or "text",
            type_name=cf.type_name or "text",
            scalar=cf.scalar or "String",
            nullable=True,
            has_default=False,
            is_array=False,
        )
        return self.comparison_exp(column)

    def _op_columns(self, table: Table, op: str) -> list[Column]:
        if op in NUMERIC_AGG_OPS:
            return [c for c in self.cols(table) if c.is_numeric and not c.is_array]
        cols = self.cols(table)
        return [c for c in cols if c.type_name not in UNORDERED_TYPES and not c.is_array]

    def aggregate_order_by(self, table: Table) -> GraphQLInputObjectType:
        """`x_aggregate_order_by`: `count` and `<op>: x_<op>_order_by`."""
        name = f"{table.gql_name}_aggregate_order_by"

        def fields() -> dict[str, GraphQLInputField]:
            f: dict[str, GraphQLInputField] = {"count": GraphQLInputField(self.order_by)}
            for op in ALL_AGG_OPS:
                cols = self._op_columns(table, op)
                if cols:
                    f[op] = GraphQLInputField(self._op_order_by(table, op, cols))
            return f

        return self._memo(  # type: ignore[no-any-return]
            name, lambda: GraphQLInputObjectType(name, fields)
        )

    def aggregate_type(self, table: Table) -> GraphQLObjectType:
        """`x_aggregate { aggregate: x_aggregate_fields, nodes: [x!]! }`."""
        name = f"{table.gql_name}_aggregate"
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: GraphQLObjectType(
                name,
                lambda: {
                    "aggregate": GraphQLField(
                        self.aggregate_fields(table), extensions=_info("agg_aggregate")
                    ),
                    "nodes": GraphQLField(
                        _nn(_list_nn(self.object_type(table))), extensions=_info("agg_nodes")
                    ),
                },
                description=f'aggregated selection of "{table.name}"',
            ),
        )

    def aggregate_fields(self, table: Table) -> GraphQLObjectType:
        """`x_aggregate_fields`: `count(columns, distinct)` and one field per operator."""
        name = f"{table.gql_name}_aggregate_fields"

        def fields() -> dict[str, GraphQLField]:
            f: dict[str, GraphQLField] = {
                "count": GraphQLField(
                    _nn(GraphQLInt),
                    {
                        "columns": GraphQLArgument(_list_nn(self.select_column_enum(table))),
                        "distinct": GraphQLArgument(GraphQLBoolean),
                    },
                    extensions=_info("agg_count"),
                )
            }
            for op in ALL_AGG_OPS:
                cols = self._op_columns(table, op)
                if not cols:
                    continue
                f[op] = GraphQLField(
                    self._op_fields(table, op, cols),
                    extensions=_info("agg_op", op=op),
                )
            return f

        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: GraphQLObjectType(
                name, fields, description=f'aggregate fields of "{table.name}"'
            ),
        )

    def _op_order_by(self, table: Table, op: str, cols: list[Column]) -> GraphQLInputObjectType:
        """`x_<op>_order_by`: one `order_by` field per column the operator applies to."""
        name = f"{table.gql_name}_{op}_order_by"

        def make() -> GraphQLInputObjectType:
            return GraphQLInputObjectType(
                name, {c.gql_name: GraphQLInputField(self.order_by) for c in cols}
            )

        return self._memo(name, make)  # type: ignore[no-any-return]

    def _op_fields(self, table: Table, op: str, cols: list[Column]) -> GraphQLObjectType:
        """`x_<op>_fields`: the operator's value per column."""
        name = f"{table.gql_name}_{op}_fields"

        def make() -> GraphQLObjectType:
            fields = {
                c.gql_name: GraphQLField(
                    self._agg_scalar(op, c), extensions=_info("agg_column", column=c, op=op)
                )
                for c in cols
            }
            return GraphQLObjectType(name, fields, description=f"aggregate {op} on columns")

        return self._memo(name, make)  # type: ignore[no-any-return]

    def _agg_scalar(self, op: str, column: Column) -> GraphQLScalarType:
        if op in ("sum", "max", "min"):
            return self.scalar(column.scalar)
        return GraphQLFloat

    # -- roots --------------------------------------------------------------------------
    def query_fields(self) -> dict[str, GraphQLField]:
        """The query (and subscription) root fields of every table."""
        fields: dict[str, GraphQLField] = {}
        for table in sorted(self.tables.values(), key=lambda t: t.gql_name):
            rf = table.root_fields
            obj = self.object_type(table)
            fields[rf.select] = GraphQLField(
                _nn(_list_nn(obj)),
                self.select_args(table),
                description=f'fetch data from the table: "{table.name}"',
                extensions=_info("select", table=table),
            )
            if self.aggregations(table):
                fields[rf.select_aggregate] = GraphQLField(
                    _nn(self.aggregate_type(table)),
                    self.select_args(table),
                    description=f'fetch aggregated fields from the table: "{table.name}"',
                    extensions=_info("select_aggregate", table=table),
                )
            visible = {c.name for c in self.cols(table)}
            if table.primary_key and all(c in visible for c in table.primary_key):
                pk_args = {}
                for col_name in table.primary_key:
                    col = table.column(col_name)
                    assert col is not None
                    pk_args[col.gql_name] = GraphQLArgument(_nn(self.scalar(col.scalar)))
                fields[rf.select_by_pk] = GraphQLField(
                    obj,
                    pk_args,
                    description=f'fetch data from the table: "{table.name}" using primary key '
                    "columns",
                    extensions=_info("select_by_pk", table=table),
                )
        fields.update(self.function_fields("query"))
        if not fields:
            fields["no_queries_available"] = GraphQLField(_nn(GraphQLString))
        return fields

    def functions(self, exposed_as: str) -> list[Function]:
        """Tracked functions the role may call: admin all; another role those with a function
        permission, or (inferred, Hasura's default) whose table it may select."""
        out: list[Function] = []
        for fn in sorted(self.ir.functions.values(), key=lambda f: f.gql_name):
            if fn.exposed_as != exposed_as or fn.returns not in self.tables:
                continue
            if self.role == "admin" or self.infer_function_permissions or self.role in fn.roles:
                out.append(fn)
        return out

    def function_fields(self, exposed_as: str) -> dict[str, GraphQLField]:
        """`fn(args, where, …)` and `fn_aggregate` for each function the role may call."""
        fields: dict[str, GraphQLField] = {}
        for fn in self.functions(exposed_as):
            table = self.tables[fn.returns]
            args = self._args_argument(f"{fn.gql_name}_args", fn.args)
            description = fn.comment or f'execute function "{fn.name}" which returns "{table.name}"'
            if not fn.returns_set:
                fields[fn.gql_name] = GraphQLField(
                    self.object_type(table),
                    args,
                    description=description,
                    extensions=_info("function", function=fn, table=table),
                )
                continue
            fields[fn.gql_name] = GraphQLField(
                _nn(_list_nn(self.object_type(table))),
                {**args, **self.select_args(table)},
                description=description,
                extensions=_info("function", function=fn, table=table),
            )
            if exposed_as == "query" and self.aggregations(table):
                fields[f"{fn.gql_name}_aggregate"] = GraphQLField(
                    _nn(self.aggregate_type(table)),
                    {**args, **self.select_args(table)},
                    description=f'execute function "{fn.name}" and query aggregates on result '
                    f'of table type "{table.name}"',
                    extensions=_info("function_aggregate", function=fn, table=table),
                )
        return fields

    def mutation_fields(self) -> dict[str, GraphQLField]:
        """Mutation root fields: the writes the role's permissions allow, and functions
        exposed as mutations."""
        types = MutationTypes(self)
        fields: dict[str, GraphQLField] = {}
        tables = [t for t in self.ir.tables.values() if t.gql_name]
        for table in sorted(tables, key=lambda t: t.gql_name):
            fields.update(types.fields(table))
        fields.update(self.function_fields("mutation"))
        return fields

    def build(self) -> GraphQLSchema:
        """The finished schema: `query_root`, `mutation_root` (when there is a mutable
        table) and `subscription_root`."""
        # graphql-core collects types recursively: a long chain of relationships between
        # hundreds of tables would exceed Python's default recursion limit.
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        qf = self.query_fields()
        query = GraphQLObjectType("query_root", qf)
        mf = self.mutation_fields()
        mutation = GraphQLObjectType("mutation_root", mf) if mf else None
        subscription = GraphQLObjectType("subscription_root", dict(qf))
        return GraphQLSchema(query=query, mutation=mutation, subscription=subscription)


def build_schema(
    ir: Ir, role: str = "admin", *, infer_function_permissions: bool = True
) -> GraphQLSchema:
    """The GraphQL schema of `role`: admin sees every tracked table and column; another role
    sees the tables it has a select permission on, its columns, and aggregates only when
    allowed; `x_by_pk` only when every key column is visible (Hasura's rules)."""
    return SchemaBuilder(ir, role, infer_function_permissions=infer_function_permissions).build()
