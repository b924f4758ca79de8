"""`<table>_aggregate_bool_exp` (the reference's filter on an array
relationship's aggregate): in `<parent>_bool_exp`, `<rel>_aggregate: {count: {arguments,
distinct, filter, predicate}}` keeps the parent rows whose count of related rows (those
matching `filter`, counting `arguments` columns, `distinct` ones) satisfies `predicate`,
an `Int_comparison_exp`. Offered where the role may aggregate the target, as the
relationship's `<rel>_aggregate` field is, and sees one of its columns (the reference,
`Hasura/GraphQL/Schema/BoolExp/AggregationPredicates.hs`, drops a predicate whose
`arguments` enum would be empty). `svc.plan.build` plans it as `AggCount`.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLBoolean, GraphQLInputField, GraphQLInputObjectType

from svc.ir.model import Column, Table

# `predicate` compares the count: an `Int` (the reference's `Int_comparison_exp`).
COUNT = Column("count", "count", "integer", "int4", "Int", False, False, False)


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
    found: GraphQLInputObjectType = b._memo(
        name, lambda: b.t.input_type(name, lambda: {"count": b.input_field(count_type)}, None)
    )
    return found
