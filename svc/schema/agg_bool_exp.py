"""`<table>_aggregate_bool_exp` (the reference's filter on an array relationship's
aggregate): in `<parent>_bool_exp`, `<rel>_aggregate: {<fn>: {arguments, distinct,
filter, predicate}}` keeps the parent rows whose aggregate `fn` of the related rows (those
matching `filter`, over the `arguments` columns, `distinct` ones) satisfies `predicate`.
The predicates and their argument types are `svc.ir.agg_predicates.AGG_PREDICATES`:
`count` takes a list of any columns (`<t>_select_column`), a one-column predicate an enum
of the role's columns of its type
(`<t>_select_column_<t>_aggregate_bool_exp_<fn>_arguments_columns`), `corr` and
`covar_samp` an input object `<t>_aggregate_bool_exp_<fn>_arguments {Y, X}` of such
enums. Offered where the role may aggregate the target, as the relationship's
`<rel>_aggregate` field is, and sees one of its columns; each predicate only when the
role sees a column of its argument type (the reference,
`Hasura/GraphQL/Schema/BoolExp/AggregationPredicates.hs`, drops a predicate whose
`arguments` enum would be empty). `svc.plan.build` plans each as a `CountFilter`.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLBoolean, GraphQLInputField, GraphQLInputObjectType

from svc.ir.agg_predicates import AGG_PREDICATES, AggPredicate, arguments_enum
from svc.ir.model import Column, Table


def _returns(fn: AggPredicate) -> Column:
    """What `predicate` compares: a column named `count` of the predicate's value type."""
    scalar = fn.returns_scalar
    return Column("count", "count", fn.returns, fn.returns_name, scalar, False, False, False)


def typed_columns(b: Any, table: Table, type_name: str) -> tuple[Column, ...]:
    """The role's columns of `table` of internal type `type_name` (arrays excluded)."""
    return tuple(c for c in b.cols(table) if c.type_name == type_name and not c.is_array)


def aggregate_fields(b: Any, table: Table) -> dict[str, GraphQLInputField]:
    """`<rel>_aggregate` input fields of `table`'s bool_exp, one per array relationship
    onto a table the role may aggregate (`b`: the `SchemaBuilder`)."""
    out: dict[str, GraphQLInputField] = {}
    for rel in table.relationships:
        target = b.tables.get(rel.target)
        # `count`'s `arguments` need the target's column enum: no visible column, no
        # predicate, no field (`defaultAggregationPredicatesParser`'s `fails`)
        usable = target is not None and target.gql_name and b.aggregations(target)
        usable = usable and bool(b.cols(target))
        if rel.kind == "array" and usable and not rel.to_source:
            out[f"{rel.name}_aggregate"] = b.input_field(aggregate_bool_exp(b, target))
    return out


def aggregate_bool_exp(b: Any, table: Table) -> GraphQLInputObjectType:
    """`<table>_aggregate_bool_exp`: one field per predicate the role can call."""
    name = table.type_name("_aggregate_bool_exp")

    def fields() -> dict[str, GraphQLInputField]:
        out = {}
        for fn in AGG_PREDICATES.values():
            if fn.arg_type is None or typed_columns(b, table, fn.arg_type):
                out[fn.name] = b.input_field(_predicate(b, table, fn))
        return dict(sorted(out.items()))

    found: GraphQLInputObjectType = b._memo(name, lambda: b.t.input_type(name, fields, None))
    return found


def _predicate(b: Any, table: Table, fn: AggPredicate) -> GraphQLInputObjectType:
    """`<table>_aggregate_bool_exp_<fn>`: `arguments` (required unless `count`),
    `distinct`, `filter`, `predicate` (required)."""
    name = table.type_name(f"_aggregate_bool_exp_{fn.name}")

    def fields() -> dict[str, GraphQLInputField]:
        return {
            "arguments": b.input_field(_arguments(b, table, fn)),
            "distinct": b.input_field(GraphQLBoolean),
            "filter": b.input_field(b.bool_exp(table)),
            "predicate": b.input_field(b.nn(b.comparison_exp(_returns(fn)))),
        }

    found: GraphQLInputObjectType = b._memo(name, lambda: b.t.input_type(name, fields, None))
    return found


def _arguments(b: Any, table: Table, fn: AggPredicate) -> Any:
    if fn.arg_type is None:
        return b.list_nn(b.select_column_enum(table))
    arg_type = fn.arg_type
    columns = table.type_name(f"_aggregate_bool_exp_{fn.name}_arguments_columns")
    enum_name = arguments_enum(table.gql_name, fn.name)

    def enum() -> Any:
        values = {
            c.gql_name: b.enum_value(c.name, "column name")
            for c in typed_columns(b, table, arg_type)
        }
        return b.t.enum_type(
            enum_name, values, f'select "{columns}" columns of table "{table.name}"'
        )

    column_enum = b.nn(b._memo(enum_name, enum))
    if not fn.arg_names:
        return column_enum
    name = table.type_name(f"_aggregate_bool_exp_{fn.name}_arguments")

    def fields() -> dict[str, GraphQLInputField]:
        return {arg: b.input_field(column_enum) for arg in fn.arg_names}

    return b.nn(b._memo(name, lambda: b.t.input_type(name, fields, None)))
