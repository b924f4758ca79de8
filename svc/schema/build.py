"""Generate the GraphQL schema of one role from the IR, with Hasura's type names.

Names (reference notes, "Generated GraphQL names"): per table `x`: object `x`, `x_bool_exp`,
`x_order_by`, `x_select_column`, `x_aggregate`, `x_aggregate_fields`, `x_<op>_fields`,
`x_aggregate_order_by`, `x_<op>_order_by`; per scalar `S`: `S_comparison_exp`; the enum
`order_by`. A type's fields are computed once every type exists (`svc.schema.types`), so
relationships may form cycles.

A schema of 1,000 tables is some 37,000 types and 250,000 fields, arguments and enum
values, built on the first request of each role and after every metadata change, so:

- types are memoised by name; per table, the visible columns, the list arguments and the
  columns of each aggregate operator are computed once; wrappers, plain arguments, plain
  input fields and enum values are made once per type (or value) and shared: graphql-core's
  objects are not changed once the schema is built;
- the objects are made without graphql-core's checks when the IR's names pass
  `svc.schema.names.plain_names` (`svc.schema.types`), and the schema is then marked valid
  unless a type came out empty (graphql-core's `validate_schema` then returns at once);
- the garbage collector is paused while the objects accumulate;
- by default the schema is lazy (`svc.schema.lazy`): roots' fields made on lookup, types
  filled on first read, the type map filled on lookup (`svc.schema.find`), the whole
  schema made only when something reads it whole.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
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
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLString,
)

from svc.config import postgres_arrays_as_lists
from svc.gc_pause import gc_paused
from svc.ir.model import Column, ComputedField, Function, FunctionArg, Ir, Relationship, Table
from svc.ir.operators import CAST_OPERATOR, CASTS, Operand, schema_operators
from svc.ir.role_view import RoleView, role_view
from svc.metadata.model import QualifiedName
from svc.schema.actions import ActionTypes
from svc.schema.agg_bool_exp import aggregate_fields
from svc.schema.enums import enum_comparison_exp, enum_table_of, enum_type
from svc.schema.find import TypeFinder, findable
from svc.schema.groups import groups_enabled, groups_root_fields, relationship_groups
from svc.schema.info import AGG_AGGREGATE, AGG_COUNT, AGG_NODES, FieldInfo, FieldKind
from svc.schema.info import info as _info
from svc.schema.lazy import LazyTypeMap
from svc.schema.lazy_roots import lazy_roots
from svc.schema.mutations import MutationTypes
from svc.schema.names import ALL_AGG_OPS, NUMERIC_AGG_OPS, plain_names
from svc.schema.naming import apply_naming
from svc.schema.stream import stream_field, stream_fields, streaming_enabled
from svc.schema.types import CheckedTypes, LazyTypes, Types

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
# The `extensions` of `x_aggregate_fields.<op>`, one per operator.
AGG_OP = {op: _info(FieldKind.AGG_OP, op=op) for op in ALL_AGG_OPS}

RECURSION_LIMIT = 20_000
# The select kinds with list arguments (`where`, `order_by`, …).
_LIST_KINDS = frozenset({"select", "select_aggregate"})

# The key of the schema's `extensions` holding the `RoleView` it was built from
# (`schema_view`): the view travels with its schema (a merged schema takes its
# extensions along, `svc.schema.remote_merge`) and goes when the schema goes.
VIEW_KEY = "svc_view"


class SchemaBuilder:
    """Builds one `GraphQLSchema`; types are memoised by name so each is made once."""

    def __init__(
        self,
        ir: Ir,
        role: str,
        *,
        view: RoleView | None = None,
        types: Types | None = None,
        streaming: bool | None = None,
        arrays: bool | None = None,
        groups: bool | None = None,
    ) -> None:
        self.ir = ir
        # Array columns as GraphQL lists (`[String!]`), else scalars (`_text`); None: as
        # the environment says (`svc.config.postgres_arrays_as_lists`)
        self.arrays = postgres_arrays_as_lists() if arrays is None else arrays
        # `x_stream` roots (svc.schema.stream); None: as the environment says (on unless
        # `hide_stream_fields`)
        self.streaming = streaming_enabled() if streaming is None else streaming
        # grouped aggregates (svc.schema.groups); None: as the environment says
        self.groups = groups_enabled() if groups is None else groups
        # What the role may see and do; `view` (State's, cached) else a new one.
        self.view = view if view is not None else role_view(ir, role)
        self.t = types if types is not None else Types()
        # Tables the role may select (all, for admin), without the invalid-named ones.
        self.tables = self.view.tables()
        self.scalars: dict[str, GraphQLScalarType] = dict(BUILTIN_SCALARS)
        self.types: dict[str, Any] = {}
        t = self.t
        self.order_by = t.enum_type(
            "order_by",
            {name: t.enum_value(name, desc) for name, desc in ORDER_BY_VALUES},
            "column ordering options",
        )
        self.order_by_field = t.input_field(self.order_by)
        self._limit = t.argument(GraphQLInt, "limit the number of rows returned")
        self._offset = t.argument(GraphQLInt, "skip the first n rows. Use only with order_by")
        # Per-table results, and wrappers and plain input fields per type.
        self._select_args: dict[QualifiedName, dict[str, GraphQLArgument]] = {}
        self._op_cols: dict[QualifiedName, dict[str, list[Column]]] = {}
        self._non_null: dict[Any, GraphQLNonNull[Any]] = {}
        self._list_nn: dict[Any, GraphQLList[Any]] = {}
        self._input_field: dict[Any, GraphQLInputField] = {}
        self._argument: dict[Any, GraphQLArgument] = {}
        self._enum_value: dict[tuple[str, str | None], GraphQLEnumValue] = {}
        self.roots: tuple[GraphQLObjectType, ...] = ()  # made by `build`
        self._query_groups: dict[QualifiedName, tuple[tuple[str, str, GraphQLField], ...]] = {}
        self._mutation_groups: dict[QualifiedName, dict[str, GraphQLField]] = {}
        self._mutation_types: MutationTypes | None = None
        self._stream_groups: dict[QualifiedName, GraphQLField] = {}
        self._shared: dict[str, dict[str, GraphQLField]] = {}
        self._roots_made: tuple[dict[str, GraphQLField], dict[str, GraphQLField]] | None = None

    # -- what the role may see ------------------------------------------------------------
    def cols(self, table: Table) -> tuple[Column, ...]:
        """The columns the role may select."""
        return self.view.table(table.name).columns

    def aggregations(self, table: Table) -> bool:
        """Whether the role may use `x_aggregate` and `<rel>_aggregate` of `table`."""
        return self.view.table(table.name).aggregations

    # -- memoisation and shared pieces ----------------------------------------------------
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

    def nn(self, of: Any) -> GraphQLNonNull[Any]:
        """`T!` (one per `T`)."""
        found = self._non_null.get(of)
        if found is None:
            found = self._non_null[of] = self.t.non_null(of)
        return found

    def list_nn(self, of: Any) -> GraphQLList[Any]:
        """`[T!]` (one per `T`)."""
        found = self._list_nn.get(of)
        if found is None:
            found = self._list_nn[of] = self.t.list_of(self.nn(of))
        return found

    def rows(self, of: Any) -> GraphQLNonNull[Any]:
        """`[T!]!`."""
        return self.nn(self.list_nn(of))

    def input_field(self, of: Any) -> GraphQLInputField:
        """An input field of type `of` without default (one per `of`)."""
        found = self._input_field.get(of)
        if found is None:
            found = self._input_field[of] = self.t.input_field(of)
        return found

    def argument(self, of: Any) -> GraphQLArgument:
        """An argument of type `of` without description or default (one per `of`)."""
        found = self._argument.get(of)
        if found is None:
            found = self._argument[of] = self.t.argument(of)
        return found

    def enum_value(self, value: str, description: str | None = None) -> GraphQLEnumValue:
        """An enum value (one per value and description: columns of the same name in
        different tables share theirs)."""
        key = (value, description)
        found = self._enum_value.get(key)
        if found is None:
            found = self._enum_value[key] = self.t.enum_value(value, description)
        return found

    def column_type(self, table: Table, column: Column) -> Any:
        """The GraphQL type of a value of `table.column`: the enum of the enum table it
        references (`svc.schema.enums`), else its scalar."""
        enum = enum_table_of(self, table, column)
        if enum is not None:
            return enum_type(self, enum)
        return self.value_type(column)

    def value_type(self, column: Column) -> Any:
        """The type of a value of `column`: its scalar, or for an array column (unless
        `disable_postgres_arrays`) the list of its element scalar, `[String!]` (Hasura
        `Hasura.Backends.Postgres.Instances.Schema.columnParser`, `PGArray`)."""
        elem = column.elem_scalar if self.arrays and column.is_array else None
        return self.scalar(column.scalar) if elem is None else self.list_nn(self.scalar(elem))

    # -- comparison expressions ---------------------------------------------------------
    def column_comparison(self, table: Table, column: Column) -> GraphQLInputObjectType:
        """The comparison expression of `table.column` in `where`: its enum's
        (`<table>_enum_comparison_exp`) or its scalar's."""
        enum = enum_table_of(self, table, column)
        if enum is not None:
            return enum_comparison_exp(self, enum)
        return self.comparison_exp(column)

    def comparison_exp(self, column: Column) -> GraphQLInputObjectType:
        """`<Scalar>_comparison_exp` with the operators the reference offers for the type;
        for an array column as a list, `<Element>_array_comparison_exp` whose operands are
        lists (`[String!]`, `_in`: `[[String!]!]`; the reference's `comparisonExps`)."""
        value = self.value_type(column)
        elem = column.elem_scalar if self.arrays and column.is_array else None
        shown = column.scalar if elem is None else elem
        name = f"{shown}_comparison_exp" if elem is None else f"{elem}_array_comparison_exp"
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.t.input_type(
                name,
                lambda: self._comparison_fields(column, value),
                f"Boolean expression to compare columns of type "
                f"\"{shown}\". All fields are combined with logical 'AND'.",
            ),
        )

    def _comparison_fields(self, column: Column, scalar: Any) -> dict[str, GraphQLInputField]:
        # One field per operator of the table (`svc.ir.operators`) that applies to the type.
        operand_field = {
            Operand.SCALAR: lambda: self.input_field(scalar),
            Operand.LIST: lambda: self.input_field(self.list_nn(scalar)),
            Operand.BOOLEAN: lambda: self.input_field(GraphQLBoolean),
            Operand.TEXT: lambda: self.input_field(GraphQLString),
            Operand.TEXT_LIST: lambda: self.input_field(self.list_nn(GraphQLString)),
            Operand.D_WITHIN: lambda: self.input_field(self._d_within_input(column.type_name)),
        }
        f = {
            op.name: operand_field[op.operand]()
            for op in schema_operators(column.scalar, column.type_name, is_array=column.is_array)
        }
        cast = self._cast_exp(column)
        if cast is not None:
            f[CAST_OPERATOR] = self.input_field(cast)
        return dict(sorted(f.items()))

    def _cast_exp(self, column: Column) -> GraphQLInputObjectType | None:
        """`<scalar>_cast_exp`: one field per type a value of `column`'s type can be cast
        to, each that type's comparison expression (`CASTS`; the reference's
        `comparisonExps` `castExp`: jsonb -> `String`, geometry <-> geography)."""
        targets = CASTS.get(column.type_name)
        if targets is None or column.is_array:
            return None
        name = f"{column.scalar}_cast_exp"

        def fields() -> dict[str, GraphQLInputField]:
            return {
                field: self.input_field(
                    self.comparison_exp(
                        replace(
                            column,
                            pg_type=t.pg_type,
                            type_name=t.type_name,
                            scalar=t.scalar,
                            elem_scalar=None,
                        )
                    )
                )
                for field, t in sorted(targets.items())
            }

        return self._memo(name, lambda: self.t.input_type(name, fields))  # type: ignore[no-any-return]

    def _d_within_input(self, type_name: str) -> GraphQLInputObjectType:
        """`st_d_within_input` (geometry) / `st_d_within_geography_input` (Hasura's)."""
        t = self.t
        geo = self.scalar(type_name)
        fields = {
            "distance": self.input_field(self.nn(GraphQLFloat)),
            "from": self.input_field(self.nn(geo)),
        }
        if type_name == "geography":
            name = "st_d_within_geography_input"
            fields["use_spheroid"] = t.input_field(GraphQLBoolean, default_value=True)
        else:
            name = "st_d_within_input"
        return self._memo(name, lambda: t.input_type(name, fields))  # type: ignore[no-any-return]

    # -- computed fields ----------------------------------------------------------------
    def computed_fields(self, table: Table) -> tuple[ComputedField, ...]:
        """The computed fields the role may use: scalar ones listed in its select
        permission, `SETOF` ones whose table it may select (Hasura's rules)."""
        return self.view.table(table.name).computed_fields

    def function_args_type(
        self, name: str, args: tuple[FunctionArg, ...]
    ) -> GraphQLInputObjectType | None:
        """`<fn>_args`: one nullable field per input argument (None without arguments)."""
        if not args:
            return None
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.t.input_type(
                name, {a.gql_name: self.input_field(self.scalar(a.scalar)) for a in args}
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
            "args": self.t.argument(
                self.nn(arg_type) if required else arg_type, "input parameters for function"
            )
        }

    def _computed_field(self, cf: ComputedField) -> GraphQLField:
        args = self._args_argument(f"{cf.function.name}_args", cf.args)
        description = cf.comment or f"A computed field, executes function {cf.function.quoted()}"
        if cf.returns_table is None:
            return self.t.field(
                self.scalar(cf.scalar or "String"),
                args,
                description,
                _info(FieldKind.COMPUTED_SCALAR, computed=cf),
            )
        target = self.tables[cf.returns_table]
        return self.t.field(
            self.rows(self.object_type(target)),
            {**args, **self.select_args(target)},
            description,
            _info(FieldKind.COMPUTED_SET, computed=cf, table=target),
        )

    # -- per-table types ----------------------------------------------------------------
    def object_type(self, table: Table) -> GraphQLObjectType:
        """The object type `x` of a table."""
        found = self.types.get(table.type_name())
        if found is None:
            found = self.types[table.type_name()] = self.t.object_type(
                table.type_name(),
                lambda: self._object_fields(table),
                table.comment or f'columns and relationships of "{table.name}"',
            )
        return found

    def _column_field(self, table: Table, column: Column) -> GraphQLField:
        out: Any = self.column_type(table, column)
        if not column.nullable:
            out = self.nn(out)
        args: dict[str, GraphQLArgument] | None = None
        if column.type_name in ("json", "jsonb"):
            args = {"path": self.t.argument(GraphQLString, "JSON select path")}
        return self.t.field(
            out, args, column.comment, {"svc": FieldInfo(FieldKind.COLUMN, column=column)}
        )

    def _object_fields(self, table: Table) -> dict[str, GraphQLField]:
        fields: dict[str, GraphQLField] = {}
        for column in self.cols(table):
            fields[column.gql_name] = self._column_field(table, column)
        for cf in self.computed_fields(table):
            fields[cf.name] = self._computed_field(cf)
        for rel in table.relationships:
            target = self.tables.get(rel.target)
            if target is None or not target.gql_name:
                continue
            if rel.kind == "object":
                fields[rel.name] = self.t.field(
                    self._object_rel_type(rel, target),
                    None,
                    rel.comment or "An object relationship",
                    _info(FieldKind.OBJECT_REL, table=target, relationship=rel),
                )
                continue
            args = self.select_args(target)
            fields[rel.name] = self.t.field(
                self.rows(self.object_type(target)),
                args,
                rel.comment or "An array relationship",
                _info(FieldKind.ARRAY_REL, table=target, relationship=rel),
            )
            if self.aggregations(target):
                fields[f"{rel.name}_aggregate"] = self.t.field(
                    self.nn(self.aggregate_type(target)),
                    args,
                    rel.comment or "An aggregate relationship",
                    _info(FieldKind.ARRAY_AGG, table=target, relationship=rel),
                )
                if self.groups:
                    relationship_groups(self, fields, rel, target)
        return dict(sorted(fields.items()))  # by name, as the reference introspects them

    def _object_rel_type(self, rel: Relationship, target: Table) -> Any:
        """`target!` when every row has its target row and the role sees every target
        row (no select filter), as the reference types `album.artist: artist!`; else
        nullable (manual and reverse relationships, nullable key columns, filters)."""
        out = self.object_type(target)
        if rel.required and not self.view.table(target.name).filter:
            return self.nn(out)
        return out

    def select_args(self, table: Table) -> dict[str, GraphQLArgument]:
        """`distinct_on`, `limit`, `offset`, `order_by`, `where` of a list field (one dict
        per table, shared by its list fields)."""
        found = self._select_args.get(table.name)
        if found is None:
            t = self.t
            distinct = (
                {
                    "distinct_on": t.argument(
                        self.list_nn(self.select_column_enum(table)),
                        "distinct select on columns",
                    )
                }
                if self.cols(table)  # no enum without values: no `distinct_on` (the reference)
                else {}
            )
            found = self._select_args[table.name] = {
                **distinct,
                "limit": self._limit,
                "offset": self._offset,
                "order_by": t.argument(
                    self.list_nn(self.order_by_type(table)), "sort the rows by one or more columns"
                ),
                "where": t.argument(self.bool_exp(table), "filter the rows returned"),
            }
        return found

    def select_column_enum(self, table: Table) -> GraphQLEnumType:
        """`x_select_column`: the columns, for `distinct_on` and `count(columns:)`."""
        name = table.type_name("_select_column")
        t = self.t
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: t.enum_type(
                name,
                {c.gql_name: self.enum_value(c.name, "column name") for c in self.cols(table)},
                f'select columns of table "{table.name}"',
            ),
        )

    def bool_exp(self, table: Table) -> GraphQLInputObjectType:
        """`x_bool_exp`: `_and`, `_or`, `_not`, columns and relationships."""
        name = table.type_name("_bool_exp")
        found: GraphQLInputObjectType | None = self.types.get(name)
        if found is None:
            me = self.t.input_type(
                name,
                lambda: self._bool_exp_fields(table, me),
                f'Boolean expression to filter rows from the table "{table.name}". '
                "All fields are combined with a logical 'AND'.",
            )
            found = self.types[name] = me
        return found

    def _bool_exp_fields(
        self, table: Table, me: GraphQLInputObjectType
    ) -> dict[str, GraphQLInputField]:
        each = self.input_field(self.list_nn(me))
        f: dict[str, GraphQLInputField] = {
            "_and": each,
            "_not": self.input_field(me),
            "_or": each,
        }
        for column in self.cols(table):
            f[column.gql_name] = self.input_field(self.column_comparison(table, column))
        for rel in table.relationships:
            target = self.tables.get(rel.target)
            if target is not None and target.gql_name and not rel.to_source:
                f[rel.name] = self.input_field(self.bool_exp(target))
        for cf in self.computed_fields(table):
            if any(not a.has_default for a in cf.args):
                continue  # Hasura: only computed fields without input arguments
            if cf.returns_table is not None:
                f[cf.name] = self.input_field(self.bool_exp(self.tables[cf.returns_table]))
            else:
                f[cf.name] = self.input_field(self._computed_comparison(cf))
        for name, field in aggregate_fields(self, table).items():
            f.setdefault(name, field)
        return dict(sorted(f.items()))

    def order_by_type(self, table: Table) -> GraphQLInputObjectType:
        """`x_order_by`: columns, object relationships, `<arr>_aggregate`."""
        name = table.type_name("_order_by")
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.t.input_type(
                name,
                lambda: self._order_by_fields(table),
                f'Ordering options when selecting data from "{table.name}".',
            ),
        )

    def _order_by_fields(self, table: Table) -> dict[str, GraphQLInputField]:
        f = dict.fromkeys((c.gql_name for c in self.cols(table)), self.order_by_field)
        for rel in table.relationships:
            target = self.tables.get(rel.target)
            if target is None or not target.gql_name or rel.to_source:
                continue
            if rel.kind == "object":
                f[rel.name] = self.input_field(self.order_by_type(target))
            else:
                f[f"{rel.name}_aggregate"] = self.input_field(self.aggregate_order_by(target))
        for cf in self.computed_fields(table):
            if any(not a.has_default for a in cf.args):
                continue
            if cf.returns_table is None:
                f[cf.name] = self.order_by_field
            elif self.aggregations(self.tables[cf.returns_table]):
                target = self.tables[cf.returns_table]
                f[f"{cf.name}_aggregate"] = self.input_field(self.aggregate_order_by(target))
        return dict(sorted(f.items()))

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

    def op_columns(self, table: Table) -> dict[str, list[Column]]:
        """Per aggregate operator (in order) the columns it applies to, when there are any:
        numeric ones for `sum`, `avg`, …; ordered ones for `max`, `min`."""
        found = self._op_cols.get(table.name)
        if found is None:
            cols = [c for c in self.cols(table) if not c.is_array]
            numeric = [c for c in cols if c.is_numeric]
            # Enum references are not comparable scalars: no max/min (the reference's
            # `onlyComparableCols`).
            ordered = [
                c
                for c in cols
                if c.type_name not in UNORDERED_TYPES and enum_table_of(self, table, c) is None
            ]
            found = {}
            for op in ALL_AGG_OPS:
                op_cols = numeric if op in NUMERIC_AGG_OPS else ordered
                if op_cols:
                    found[op] = op_cols
            self._op_cols[table.name] = found
        return found

    def aggregate_order_by(self, table: Table) -> GraphQLInputObjectType:
        """`x_aggregate_order_by`: `count` and `<op>: x_<op>_order_by`."""
        name = table.type_name("_aggregate_order_by")
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.t.input_type(
                name,
                lambda: self._aggregate_order_by_fields(table),
                f'order by aggregate values of table "{table.name}"',
            ),
        )

    def _aggregate_order_by_fields(self, table: Table) -> dict[str, GraphQLInputField]:
        f: dict[str, GraphQLInputField] = {"count": self.order_by_field}
        for op, cols in self.op_columns(table).items():
            f[op] = self.input_field(self._op_order_by(table, op, cols))
        return f

    def aggregate_type(self, table: Table) -> GraphQLObjectType:
        """`x_aggregate { aggregate: x_aggregate_fields, nodes: [x!]! }`."""
        name = table.type_name("_aggregate")
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.t.object_type(
                name,
                lambda: {
                    "aggregate": self.t.field(
                        self.aggregate_fields(table), extensions=AGG_AGGREGATE
                    ),
                    "nodes": self.t.field(self.rows(self.object_type(table)), extensions=AGG_NODES),
                },
                f'aggregated selection of "{table.name}"',
            ),
        )

    def aggregate_fields(self, table: Table) -> GraphQLObjectType:
        """`x_aggregate_fields`: `count(columns, distinct)` and one field per operator."""
        name = table.type_name("_aggregate_fields")
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.t.object_type(
                name,
                lambda: self._aggregate_fields(table),
                f'aggregate fields of "{table.name}"',
            ),
        )

    def _aggregate_fields(self, table: Table) -> dict[str, GraphQLField]:
        t = self.t
        count_args = {
            "columns": self.argument(self.list_nn(self.select_column_enum(table))),
            "distinct": self.argument(GraphQLBoolean),
        }
        if not self.cols(table):  # no columns to count (a select permission `columns: []`)
            del count_args["columns"]
        f = {"count": t.field(self.nn(GraphQLInt), count_args, extensions=AGG_COUNT)}
        for op, cols in self.op_columns(table).items():
            f[op] = t.field(self._op_fields(table, op, cols), extensions=AGG_OP[op])
        return f

    def _op_order_by(self, table: Table, op: str, cols: list[Column]) -> GraphQLInputObjectType:
        """`x_<op>_order_by`: one `order_by` field per column the operator applies to."""
        name = table.type_name(f"_{op}_order_by")
        return self._memo(  # type: ignore[no-any-return]
            name,
            lambda: self.t.input_type(
                name,
                dict.fromkeys((c.gql_name for c in cols), self.order_by_field),
                f'order by {op}() on columns of table "{table.name}"',
            ),
        )

    def _op_fields(self, table: Table, op: str, cols: list[Column]) -> GraphQLObjectType:
        """`x_<op>_fields`: the operator's value per column (the most numerous fields of a
        schema: hence no memo helper, and positional `FieldInfo`)."""
        name = table.type_name(f"_{op}_fields")
        found: GraphQLObjectType | None = self.types.get(name)
        if found is None:
            field, scalar = self.t.field, self.scalar
            as_float = op not in ("sum", "max", "min")
            fields = {
                c.gql_name: field(
                    GraphQLFloat if as_float else scalar(c.scalar),
                    None,
                    None,
                    {"svc": FieldInfo(FieldKind.AGG_COLUMN, None, c, None, op)},
                )
                for c in cols
            }
            found = self.t.object_type(name, fields, f"aggregate {op} on columns")
            self.types[name] = found
        return found

    # -- roots --------------------------------------------------------------------------
    def query_fields(self) -> dict[str, GraphQLField]:
        """The query root fields of every table (those the role's `query_root_fields`
        allow), functions and actions; `no_queries_available` when there are none."""
        return self.root_fields()[0]

    def root_fields(self) -> tuple[dict[str, GraphQLField], dict[str, GraphQLField]]:
        """`(query_root fields, subscription_root fields)`: per table the select kinds of
        `TableAccess.query_roots` and `.subscription_roots` (one field object when a kind
        is in both, as the reference shares its parser: Hasura
        `server/src-lib/Hasura/GraphQL/Schema/Build.hs`,
        `buildTableQueryAndSubscriptionFields`), then functions and actions in both; the
        query root gets `no_queries_available` when it would be empty, the subscription
        root `x_stream` fields (when `streaming`) and nothing else."""
        if self._roots_made is not None:
            return self._roots_made
        query: dict[str, GraphQLField] = {}
        subscription: dict[str, GraphQLField] = {}
        for table in sorted(self.tables.values(), key=lambda t: t.gql_name):
            access = self.view.table(table.name)
            for kind, name, f in self._table_query_fields(table):
                if kind in access.query_roots:
                    query[name] = f
                if kind in access.subscription_roots:
                    subscription[name] = f
        shared = self.shared_fields("query")
        query.update(shared)
        subscription.update(shared)
        if self.groups:
            groups_root_fields(self, query, subscription)
        if not query:
            query["no_queries_available"] = self.t.field(self.nn(GraphQLString))
        if self.streaming:
            subscription.update(stream_fields(self, subscription))
        self._roots_made = query, subscription
        return query, subscription

    def shared_fields(self, operation: str) -> dict[str, GraphQLField]:
        """The functions and actions of `operation` (`query`: also in the subscription
        root; `mutation`), made once."""
        found = self._shared.get(operation)
        if found is None:
            found = self._shared[operation] = {
                **self.function_fields(operation),
                **ActionTypes(self).fields(operation),
            }
        return found

    def _table_query_fields(self, table: Table) -> tuple[tuple[str, str, GraphQLField], ...]:
        """`(kind, name, field)` of the select kinds `table` has in either root (made once
        per table: the lazy roots and the whole ones share them)."""
        found = self._query_groups.get(table.name)
        if found is None:
            found = self._query_groups[table.name] = tuple(self._make_query_fields(table))
        return found

    def _make_query_fields(self, table: Table) -> Iterator[tuple[str, str, GraphQLField]]:
        t = self.t
        rf = table.root_fields
        access = self.view.table(table.name)
        kinds = access.query_roots | access.subscription_roots
        if not kinds:
            return  # no type made: a lazy schema's types made so far are reachable
        obj = self.object_type(table)
        args = self.select_args(table) if kinds & _LIST_KINDS else {}
        if "select" in kinds:
            yield (
                "select",
                rf.select,
                t.field(
                    self.rows(obj),
                    args,
                    f'fetch data from the table: "{table.name}"',
                    _info(FieldKind.SELECT, table=table),
                ),
            )
        if "select_aggregate" in kinds:
            yield (
                "select_aggregate",
                rf.select_aggregate,
                t.field(
                    self.nn(self.aggregate_type(table)),
                    args,
                    f'fetch aggregated fields from the table: "{table.name}"',
                    _info(FieldKind.SELECT_AGGREGATE, table=table),
                ),
            )
        pk_args = self.pk_arguments(table) if "select_by_pk" in kinds else None
        if pk_args is not None:
            yield (
                "select_by_pk",
                rf.select_by_pk,
                t.field(
                    obj,
                    pk_args,
                    f'fetch data from the table: "{table.name}" using primary key columns',
                    _info(FieldKind.SELECT_BY_PK, table=table),
                ),
            )

    def pk_arguments(self, table: Table) -> dict[str, GraphQLArgument] | None:
        """One required argument per primary key column, when the role sees them all."""
        if "select_by_pk" not in self.view.table(table.name).root_fields:
            return None
        out = {}
        for col_name in table.primary_key:
            col = table.column_map[col_name]
            out[col.gql_name] = self.argument(self.nn(self.column_type(table, col)))
        return out

    def functions(self, exposed_as: str) -> tuple[Function, ...]:
        """Tracked functions the role may call (`RoleView.functions`)."""
        return self.view.functions(exposed_as)

    def function_fields(self, exposed_as: str) -> dict[str, GraphQLField]:
        """`fn(args, where, …)` and `fn_aggregate` for each function the role may call."""
        fields: dict[str, GraphQLField] = {}
        t = self.t
        for fn in self.functions(exposed_as):
            table = self.tables[fn.returns]
            args = self._args_argument(fn.type_name("_args"), fn.args)
            description = fn.comment or f'execute function "{fn.name}" which returns "{table.name}"'
            if not fn.returns_set:
                fields[fn.root_name()] = t.field(
                    self.object_type(table),
                    args,
                    description,
                    _info(FieldKind.FUNCTION, function=fn, table=table),
                )
                continue
            fields[fn.root_name()] = t.field(
                self.rows(self.object_type(table)),
                {**args, **self.select_args(table)},
                description,
                _info(FieldKind.FUNCTION, function=fn, table=table),
            )
            if exposed_as == "query" and self.aggregations(table):
                fields[fn.root_name("_aggregate")] = t.field(
                    self.nn(self.aggregate_type(table)),
                    {**args, **self.select_args(table)},
                    f'execute function "{fn.name}" and query aggregates on result '
                    f'of table type "{table.name}"',
                    _info(FieldKind.FUNCTION_AGGREGATE, function=fn, table=table),
                )
        return fields

    def mutation_fields(self) -> dict[str, GraphQLField]:
        """Mutation root fields: the writes the role's permissions allow, and functions
        exposed as mutations."""
        fields: dict[str, GraphQLField] = {}
        tables = [t for t in self.ir.tables.values() if t.gql_name]
        for table in sorted(tables, key=lambda t: t.gql_name):
            fields.update(self.mutation_group(table))
        fields.update(self.shared_fields("mutation"))
        return fields

    def mutation_group(self, table: Table) -> dict[str, GraphQLField]:
        """The mutation root fields of `table` (made once per table)."""
        found = self._mutation_groups.get(table.name)
        if found is None:
            if self._mutation_types is None:
                self._mutation_types = MutationTypes(self)
            found = self._mutation_groups[table.name] = self._mutation_types.fields(table)
        return found

    def stream_group(self, table: Table) -> GraphQLField:
        """`x_stream` of `table` (made once per table)."""
        found = self._stream_groups.get(table.name)
        if found is None:
            found = self._stream_groups[table.name] = stream_field(self, table)
        return found

    def build(self) -> GraphQLSchema:
        """The finished schema: `query_root`, `mutation_root` (when there is a mutable
        table) and `subscription_root`."""
        # The schema's types are collected recursively (`Types.schema`, or graphql-core): a
        # long chain of relationships between hundreds of tables would exceed Python's
        # default recursion limit.
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        t = self.t
        lazy = lazy_roots(self) if isinstance(t, LazyTypes) and not self.groups else None
        qf: dict[str, GraphQLField]
        mf: dict[str, GraphQLField] | None
        sf: dict[str, GraphQLField] | None
        if lazy is not None:
            qf, mf, sf = lazy
        else:
            qf, every_sf = self.root_fields()
            mf, sf = self.mutation_fields() or None, every_sf or None
        query = t.object_type("query_root", qf)
        mutation = t.object_type("mutation_root", mf) if mf is not None else None
        # No subscription root without fields (Hasura: `subscriptionType: null`,
        # `Test.Auth.Authorization.DisableRootFields.SelectPermission.DisableAllRootFieldsSpec`)
        subscription = t.object_type("subscription_root", sf) if sf is not None else None
        t.finish()
        self.roots = tuple(r for r in (query, mutation, subscription) if r is not None)
        # Without an empty type or a name graphql-core would question, the schema is valid
        # by construction; `tests/test_schema_build.py` runs graphql-core's validation.
        schema = t.schema(query, mutation, subscription)
        if isinstance(schema.type_map, LazyTypeMap):
            schema.type_map.finding(TypeFinder(self).find)
        schema.extensions[VIEW_KEY] = self.view
        return schema


def build_schema(
    ir: Ir,
    role: str,
    *,
    infer_function_permissions: bool = True,
    view: RoleView | None = None,
    streaming: bool | None = None,
    groups: bool | None = None,
) -> GraphQLSchema:
    """The GraphQL schema of `role`, showing what its `RoleView` allows (`view`, else a
    new one): admin sees every tracked table and column; another role the tables it has a
    select permission on, its columns, and aggregates only when allowed; `x_by_pk` only
    when every key column is visible (Hasura's rules); `streaming`: `x_stream` fields
    (`svc.schema.stream`; None: as the environment says); `groups`: `x_groups` and
    `<rel>_groups` (`svc.schema.groups`; None: as the environment says). The planner finds the view
    again with `schema_view`."""
    if view is None:
        view = role_view(ir, role, infer_functions=infer_function_permissions)
    types = _types(ir)
    builder = SchemaBuilder(
        ir, view.role, view=view, types=types, streaming=streaming, groups=groups
    )
    with gc_paused(file_away=True):  # hundreds of thousands of lasting objects
        return apply_naming(builder.build(), ir)  # graphql-default sources' names


def _types(ir: Ir) -> Types:
    """The constructors of `ir`'s schemas: graphql-core's own when a name needs its checks;
    else unchecked, and lazy (`svc.schema.lazy`) when the finder finds its types exactly
    (`svc.schema.find.findable`)."""
    if not plain_names(ir):
        return CheckedTypes()
    return LazyTypes() if findable(ir) else Types()


def schema_view(schema: GraphQLSchema) -> RoleView:
    """The `RoleView` a schema made by `build_schema` shows (its `extensions[VIEW_KEY]`),
    so the planner applies the permissions the schema was built from; KeyError for any
    other schema."""
    view: RoleView = schema.extensions[VIEW_KEY]
    return view
