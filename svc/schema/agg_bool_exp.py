"""`<table>_aggregate_bool_exp` (the reference's filter on an array
relationship's aggregate): in `<parent>_bool_exp`, `<rel>_aggregate: {count: {arguments,
distinct, filter, predicate}}` keeps the parent rows whose count of related rows (those
matching `filter`, counting `arguments` columns, `distinct` ones) satisfies `predicate`,
an `Int_comparison_exp`; `bool_and` / `bool_or: {arguments, distinct, filter,
predicate}` do the same with `bool_and(<column>)` / `bool_or(<column>)` of one boolean
column (`arguments`: `<t>_select_column_<t>_aggregate_bool_exp_bool_and_arguments_columns`,
the role's boolean columns) and a `Boolean_comparison_exp`. Offered where the role may
aggregate the target, as the relationship's `<rel>_aggregate` field is, and sees one of
its columns (the reference, `Hasura/GraphQL/Schema/BoolExp/AggregationPredicates.hs`,
drops a predicate whose `arguments` enum would be empty; `bool_and`/`bool_or` only when
the role sees a boolean column). `svc.plan.build` plans each as a `CountFilter`.
The reference's other predicates (`avg`, `max`, `min`, `sum`, `corr`, … over float8
columns) are not offered (README "Not yet").
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLBoolean, GraphQLInputField, GraphQLInputObjectType

from svc.ir.model import Column, Table
from svc.schema.names import BOOL_PREDICATES, bool_arguments_enum

# `predicate` compares the count: an `Int` (the reference's `Int_comparison_exp`).
COUNT = Column("count", "count", "integer", "int4", "Int", False, False, False)
# `bool_and` / `bool_or`'s `predicate` compares a `Boolean` (`Boolean_comparison_exp`).
BOOL = Column("count", "count", "boolean", "bool", "Boolean", False, False, False)


def boolean_columns(b: Any, table: Table) -> tuple[Column, ...]:
    """The role's boolean columns of `table` (the arguments of `bool_and`/`bool_or`)."""
    return tuple(c for c in b.cols(table) if c.scalar == "Boolean" and not c.is_array)


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
        if rel.kind == "array" and usable:
            out[f"{rel.name}_aggregate"] = b.input_field(aggregate_bool_exp(b, target))
    return out


def aggregate_bool_exp(b: Any, table: Table) -> GraphQLInputObjectType:
    """`<table>_aggregate_bool_exp { count: <table>_aggregate_bool_exp_count }`."""
    name = f"{table.gql_name}_aggregate_bool_exp"
    count = f"{name}_count"

    def count_fields() -> dict[str, GraphQLInputField]:
        return {
            "arguments": b.input_field(b.list_nn(b.select_column_enum(table))),
            "distinct": b.input_field(GraphQLBoolean),
            "filter": b.input_field(b.bool_exp(table)),
            "predicate": b.input_field(b.nn(b.comparison_exp(COUNT))),
        }

    count_type = b._memo(count, lambda: b.t.input_type(count, count_fields, None))

    def fields() -> dict[str, GraphQLInputField]:
        out = {"count": b.input_field(count_type)}
        if boolean_columns(b, table):
            for fn in BOOL_PREDICATES:
                out[fn] = b.input_field(_bool_predicate(b, table, fn))
        return dict(sorted(out.items()))

    found: GraphQLInputObjectType = b._memo(name, lambda: b.t.input_type(name, fields, None))
    return found


def _bool_predicate(b: Any, table: Table, fn: str) -> GraphQLInputObjectType:
    """`<table>_aggregate_bool_exp_<fn>`: `arguments` (one boolean column, required),
    `distinct`, `filter`, `predicate` (`Boolean_comparison_exp`, required)."""
    name = f"{table.gql_name}_aggregate_bool_exp_{fn}"
    columns = f"{table.gql_name}_aggregate_bool_exp_{fn}_arguments_columns"
    enum_name = bool_arguments_enum(table.gql_name, fn)

    def enum() -> Any:
        values = {
            c.gql_name: b.enum_value(c.name, "column name") for c in boolean_columns(b, table)
        }
        return b.t.enum_type(
            enum_name, values, f'select "{columns}" columns of table "{table.name}"'
        )

    def fields() -> dict[str, GraphQLInputField]:
        return {
            "arguments": b.input_field(b.nn(b._memo(enum_name, enum))),
            "distinct": b.input_field(GraphQLBoolean),
            "filter": b.input_field(b.bool_exp(table)),
            "predicate": b.input_field(b.nn(b.comparison_exp(BOOL))),
        }

    found: GraphQLInputObjectType = b._memo(name, lambda: b.t.input_type(name, fields, None))
    return found
