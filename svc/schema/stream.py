"""Streaming subscription root fields `x_stream` (reference notes
"Subscriptions": `x_stream` when streaming is enabled).

Per table the role may select, `subscription_root` gets

    x_stream(batch_size: Int!, cursor: [x_stream_cursor_input]!, where: x_bool_exp): [x!]!

with `x_stream_cursor_input {initial_value: x_stream_cursor_value_input!, ordering:
cursor_ordering}`, `x_stream_cursor_value_input` (one optional field per column the role
may select, typed as the column) and the enum `cursor_ordering {ASC, DESC}` (the
reference's `Hasura.GraphQL.Schema.SubscriptionStream` names and descriptions). The
fields are offered by default, as the reference has offered them since v2.11.0
(CHANGELOG "server: enable streaming subscriptions by default"; `Hasura.GraphQL.Schema`
sets `soIncludeStreamFields` unless the experimental feature `hide_stream_fields` is on,
and `Hasura.GraphQL.Schema.Build.buildTableStreamingSubscriptionFields` reads it);
`streaming_subscriptions` is still accepted and changes nothing. A select permission's
`subscription_root_fields` without `select_stream` hides the role's field
(`svc.ir.role_view.TableAccess.subscription_roots`). The planner reads the field's
`FieldInfo("select_stream", table=…)` (`svc.plan.stream`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from graphql import GraphQLEnumType, GraphQLField, GraphQLInputObjectType, GraphQLInt

from svc.config import experimental_features
from svc.ir.model import Table
from svc.schema.info import FieldKind, info

if TYPE_CHECKING:
    from svc.schema.build import SchemaBuilder

#: The `SVC_GRAPHQL_EXPERIMENTAL_FEATURES` entry that hides `x_stream` (the reference's
#: `EFHideStreamFields`).
HIDE_FEATURE = "hide_stream_fields"
#: The entry that enabled `x_stream` before v2.11; accepted, changes nothing.
STREAMING_FEATURE = "streaming_subscriptions"
#: Internal values of `cursor_ordering` (what the planner reads).
ASC, DESC = "ASC", "DESC"


def streaming_enabled(env: dict[str, str] | None = None) -> bool:
    """Whether the schema offers `x_stream`: unless `SVC_GRAPHQL_EXPERIMENTAL_FEATURES`
    (`env`, else the process environment; `svc.config.experimental_features`) names
    `hide_stream_fields` (Hasura `server/src-lib/Hasura/GraphQL/Schema.hs`,
    `soIncludeStreamFields`). Read when a schema is built, so every worker of `svc serve`
    (which inherit the environment) agrees."""
    return HIDE_FEATURE not in experimental_features(env)


def stream_fields(
    builder: SchemaBuilder, taken: Mapping[str, object] | None = None
) -> dict[str, GraphQLField]:
    """`x_stream` for every table the role may select (the builder's tables), by name,
    except names in `taken` (the other subscription root fields: a table tracked as
    `x_stream` keeps its own field rather than lose it to `x`'s stream)."""
    fields: dict[str, GraphQLField] = {}
    for table in sorted(builder.tables.values(), key=lambda t: t.gql_name):
        if "select_stream" not in builder.view.table(table.name).subscription_roots:
            continue
        name = table.root_fields.select_stream  # `<x>_stream` unless customised
        if taken is None or name not in taken:
            fields[name] = builder.stream_group(table)
    return fields


def stream_field(b: SchemaBuilder, table: Table) -> GraphQLField:
    """The `x_stream` field of `table` (see the module docstring)."""
    t = b.t
    cursor = b.nn(t.list_of(cursor_input(b, table)))  # elements nullable, as the reference's
    args = {
        "batch_size": t.argument(
            b.nn(GraphQLInt), "maximum number of rows returned in a single batch"
        ),
        "cursor": t.argument(cursor, "cursor to stream the results returned by the query"),
        "where": t.argument(b.bool_exp(table), "filter the rows returned"),
    }
    return t.field(
        b.rows(b.object_type(table)),
        args,
        f'fetch data from the table in a streaming manner: "{table.name}"',
        info(FieldKind.SELECT_STREAM, table=table),
    )


def cursor_input(b: SchemaBuilder, table: Table) -> GraphQLInputObjectType:
    """`x_stream_cursor_input {initial_value, ordering}`."""
    name = table.type_name("_stream_cursor_input")

    def make() -> GraphQLInputObjectType:
        value = value_input(b, table)
        return b.t.input_type(
            name,
            {
                "initial_value": b.input_field(b.nn(value)),
                "ordering": b.input_field(cursor_ordering(b)),
            },
            f'Streaming cursor of the table "{table.gql_name}"',
        )

    found: GraphQLInputObjectType = b._memo(name, make)
    return found


def value_input(b: SchemaBuilder, table: Table) -> GraphQLInputObjectType:
    """`x_stream_cursor_value_input`: a field per column the role may select."""
    name = table.type_name("_stream_cursor_value_input")

    def make() -> GraphQLInputObjectType:
        return b.t.input_type(
            name,
            lambda: {c.gql_name: b.input_field(b.column_type(table, c)) for c in b.cols(table)},
            "Initial value of the column from where the streaming should start",
        )

    found: GraphQLInputObjectType = b._memo(name, make)
    return found


def cursor_ordering(b: SchemaBuilder) -> GraphQLEnumType:
    """The enum `cursor_ordering {ASC, DESC}` (one per schema)."""

    def make() -> GraphQLEnumType:
        return b.t.enum_type(
            "cursor_ordering",
            {
                ASC: b.t.enum_value(ASC, "ascending ordering of the cursor"),
                DESC: b.t.enum_value(DESC, "descending ordering of the cursor"),
            },
            "ordering argument of a cursor",
        )

    found: GraphQLEnumType = b._memo("cursor_ordering", make)
    return found
