"""Grouped aggregates: `x_groups` root fields and `<array rel>_groups` relationship fields
(svc's own for Postgres; README "Grouped aggregates" compares them with Hasura DDN's
`<Model>Groups` and with the reference's `x_aggregate { group_by }` of data connectors).
Offered only with the experimental feature `group_by_aggregations` (`groups_enabled`),
the reference's switch for its grouping, so the default schema stays the reference's.

Per table `x` whose aggregates the role may read (`TableAccess.aggregations`, the
`select_aggregate` root kind for the roots: `allow_aggregations`, and the permission's
`query_root_fields`/`subscription_root_fields` when it lists kinds) and that has a column
the role may select:

    x_groups(group_by: [x_select_column!]!, where: x_bool_exp, having: x_groups_having,
             order_by: [x_groups_order_by!], limit: Int, offset: Int): [x_group!]!
    type x_group { aggregate: x_aggregate_fields!  keys: x_group_keys! }
    type x_group_keys { <column>: <its type> … }           (nullable; groupable columns)
    input x_groups_having { _and, _or, _not, count: Int_comparison_exp,
                            <op>: x_<op>_groups_having }   (op: the columns of `x_<op>_fields`)
    input x_<op>_groups_having { <column>: <comparison of the op's value> }
    input x_groups_order_by { aggregate: x_aggregate_order_by, keys: x_group_keys_order_by }
    input x_group_keys_order_by { <column>: order_by }

The root field is named after the table's `select` root field (`<select>_groups`), the
types through `Table.type_name` as every other generated type, so a naming convention
applied there applies here. A name another generated name already holds (a table named
`x_group`, a root field `x_groups`, a relationship `r_groups`) keeps its owner: the groups
field is then left out, never the other object. The planner reads
`FieldInfo(select_groups | array_groups)` (`svc.plan.groups`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphql import GraphQLField, GraphQLInputField, GraphQLInputObjectType, GraphQLObjectType

from svc.config import experimental_features
from svc.ir.model import Column, Relationship, Table
from svc.naming import field_case
from svc.schema.info import AGG_AGGREGATE, FieldInfo, FieldKind, info
from svc.schema.names import ALL_AGG_OPS, NUMERIC_AGG_OPS, TABLE_TYPE_SUFFIXES

if TYPE_CHECKING:
    from svc.schema.build import SchemaBuilder

#: Column types without an equality operator Postgres can group by (no btree or hash
#: operator class): not grouping keys.
UNGROUPABLE_TYPES = frozenset(
    {"json", "xml", "point", "line", "lseg", "box", "path", "polygon", "circle"}
)
#: Aggregate operators whose value is a Float (the `x_<op>_fields` typing).
FLOAT_OPS = frozenset(op for op in NUMERIC_AGG_OPS if op != "sum")
#: The Postgres type of `count(*)`, the type a `having: {count: …}` operand is cast to.
COUNT_TYPE = "bigint"
#: The type-name suffixes this module generates per table.
GROUP_SUFFIXES = frozenset(
    {"group", "group_keys", "group_keys_order_by", "groups_having", "groups_order_by"}
    | {f"{op}_groups_having" for op in ALL_AGG_OPS}
)
GROUP_KEYS = info(FieldKind.GROUP_KEYS)
#: The `SVC_GRAPHQL_EXPERIMENTAL_FEATURES` entry that offers grouped aggregates: the
#: reference's own (`EFGroupByAggregations`, `soIncludeGroupByAggregateFields`), which
#: offers grouping (`x_aggregate { group_by }`) on data connector backends only.
GROUPS_FEATURE = "group_by_aggregations"
_INT = Column("count", "count", "integer", "int4", "Int", False, False, False)
_FLOAT = Column("avg", "avg", "float8", "float8", "Float", False, False, False)


def groups_enabled(env: dict[str, str] | None = None) -> bool:
    """Whether schemas offer grouped aggregates: when `SVC_GRAPHQL_EXPERIMENTAL_FEATURES`
    (`env`, else the process environment; `svc.config.experimental_features`) names
    `group_by_aggregations`. Off by default, so a schema is the reference's (its
    introspection unchanged); read when a schema is built, so every worker of `svc serve`
    agrees."""
    return GROUPS_FEATURE in experimental_features(env)


def groups_root_name(table: Table) -> str:
    """The root field of `table`'s groups: `<select root field>_groups` (under the
    source's naming convention `authorGroups`, `svc.naming`)."""
    return field_case(table.naming, f"{table.root_fields.select}_groups")


def relationship_groups_name(rel: Relationship) -> str:
    """The field of an array relationship's groups: `<relationship>_groups`."""
    return f"{rel.name}_groups"


def groups_root_fields(
    b: SchemaBuilder, query: dict[str, GraphQLField], subscription: dict[str, GraphQLField]
) -> None:
    """Add `x_groups` to the query root (and the subscription root) of every table whose
    `select_aggregate` kind the role has there, unless the name is taken."""
    for table in sorted(b.tables.values(), key=lambda t: t.gql_name):
        access = b.view.table(table.name)
        in_query = "select_aggregate" in access.query_roots
        in_subscription = "select_aggregate" in access.subscription_roots
        name = groups_root_name(table)
        in_query = in_query and name not in query
        in_subscription = in_subscription and name not in subscription
        if not (in_query or in_subscription):
            continue
        f = groups_field(b, table, FieldKind.SELECT_GROUPS, None)
        if f is None:
            continue
        if in_query:
            query[name] = f
        if in_subscription:
            subscription[name] = f


def relationship_groups(
    b: SchemaBuilder, fields: dict[str, GraphQLField], rel: Relationship, target: Table
) -> None:
    """Add `<rel>_groups` to an object type's `fields` for the array relationship `rel`
    onto `target` (the caller checked the role may aggregate `target`), unless taken."""
    name = relationship_groups_name(rel)
    if name in fields:
        return
    f = groups_field(b, target, FieldKind.ARRAY_GROUPS, rel)
    if f is not None:
        fields[name] = f


def groups_field(
    b: SchemaBuilder, table: Table, kind: FieldKind, rel: Relationship | None
) -> GraphQLField | None:
    """The groups field of `table` (`kind`: `select_groups` or `array_groups` through
    `rel`); None when the role sees no column of it or a type name would clash."""
    if not b.cols(table) or _clashes(b, table):
        return None
    t = b.t
    args = {
        "group_by": t.argument(
            b.nn(b.list_nn(b.select_column_enum(table))), "the columns to group the rows by"
        ),
        "having": t.argument(having_exp(b, table), "filter the groups by their aggregates"),
        "limit": b._limit,
        "offset": b._offset,
        "order_by": t.argument(
            b.list_nn(order_by_type(b, table)), "sort the groups by keys and aggregates"
        ),
        "where": t.argument(b.bool_exp(table), "filter the rows before grouping"),
    }
    return t.field(
        b.rows(group_type(b, table)),
        args,
        f'fetch aggregated fields per group of rows of the table: "{table.name}"',
        info(kind, table=table, relationship=rel),
    )


def groupable(b: SchemaBuilder, table: Table) -> list[Column]:
    """The role's columns of `table` that can be grouping keys."""
    return [c for c in b.cols(table) if c.type_name not in UNGROUPABLE_TYPES]


def group_type(b: SchemaBuilder, table: Table) -> GraphQLObjectType:
    """`x_group { aggregate, keys }` (`keys` only with a groupable column)."""
    name = table.type_name("_group")

    def fields() -> dict[str, GraphQLField]:
        f = {"aggregate": b.t.field(b.nn(b.aggregate_fields(table)), extensions=AGG_AGGREGATE)}
        if groupable(b, table):
            f["keys"] = b.t.field(b.nn(keys_type(b, table)), extensions=GROUP_KEYS)
        return f

    found: GraphQLObjectType = b._memo(
        name, lambda: b.t.object_type(name, fields, f'a group of rows of "{table.name}"')
    )
    return found


def keys_type(b: SchemaBuilder, table: Table) -> GraphQLObjectType:
    """`x_group_keys`: a nullable field per groupable column, typed as the column."""
    name = table.type_name("_group_keys")

    def fields() -> dict[str, GraphQLField]:
        return {
            c.gql_name: b.t.field(
                b.column_type(table, c), None, None, {"svc": FieldInfo(FieldKind.COLUMN, column=c)}
            )
            for c in groupable(b, table)
        }

    found: GraphQLObjectType = b._memo(
        name, lambda: b.t.object_type(name, fields, f'grouping keys of "{table.name}"')
    )
    return found


def having_exp(b: SchemaBuilder, table: Table) -> GraphQLInputObjectType:
    """`x_groups_having`: `_and`, `_or`, `_not`, `count` and one field per operator."""
    name = table.type_name("_groups_having")
    found: GraphQLInputObjectType | None = b.types.get(name)
    if found is None:

        def fields() -> dict[str, GraphQLInputField]:
            each = b.input_field(b.list_nn(me))
            f: dict[str, GraphQLInputField] = {
                "_and": each,
                "_not": b.input_field(me),
                "_or": each,
                "count": b.input_field(b.comparison_exp(_INT)),
            }
            for op, cols in b.op_columns(table).items():
                f[op] = b.input_field(_op_having(b, table, op, cols))
            return f

        me = b.t.input_type(
            name,
            fields,
            f'Boolean expression to filter groups of rows of the table "{table.name}" by '
            "their aggregates. All fields are combined with a logical 'AND'.",
        )
        found = b.types[name] = me
    return found


def _op_having(
    b: SchemaBuilder, table: Table, op: str, cols: list[Column]
) -> GraphQLInputObjectType:
    """`x_<op>_groups_having`: a comparison of `op`'s value per column it applies to
    (Float's for the statistics, the column's own for `sum`, `max`, `min`)."""
    name = table.type_name(f"_{op}_groups_having")

    def fields() -> dict[str, GraphQLInputField]:
        return {
            c.gql_name: b.input_field(b.comparison_exp(_FLOAT if op in FLOAT_OPS else c))
            for c in cols
        }

    found: GraphQLInputObjectType = b._memo(
        name,
        lambda: b.t.input_type(
            name, fields, f'compare {op}() per group on columns of "{table.name}"'
        ),
    )
    return found


def order_by_type(b: SchemaBuilder, table: Table) -> GraphQLInputObjectType:
    """`x_groups_order_by { aggregate: x_aggregate_order_by, keys: x_group_keys_order_by }`."""
    name = table.type_name("_groups_order_by")

    def fields() -> dict[str, GraphQLInputField]:
        f = {"aggregate": b.input_field(b.aggregate_order_by(table))}
        cols = groupable(b, table)
        if cols:
            keys = table.type_name("_group_keys_order_by")
            f["keys"] = b.input_field(
                b._memo(
                    keys,
                    lambda: b.t.input_type(
                        keys,
                        dict.fromkeys((c.gql_name for c in cols), b.order_by_field),
                        f'order groups of "{table.name}" by their keys',
                    ),
                )
            )
        return f

    found: GraphQLInputObjectType = b._memo(
        name,
        lambda: b.t.input_type(name, fields, f'Ordering options of groups of "{table.name}".'),
    )
    return found


def _clashes(b: SchemaBuilder, table: Table) -> bool:
    """Whether a type name of `table`'s groups may be another table's generated name
    (a table `x_group`, or `x_groups` whose `x_groups_order_by` is its order type), as
    `svc.schema.names` looks for clashes between tables."""
    derived = b.ir.derived
    names: frozenset[str] | None = derived.get(__name__)
    if names is None:
        names = derived[__name__] = frozenset(
            t.type_name() for t in b.ir.tables.values() if t.gql_name
        )
    own = table.type_name()
    suffixes = TABLE_TYPE_SUFFIXES | GROUP_SUFFIXES
    for suffix in GROUP_SUFFIXES:
        name = table.type_name(f"_{suffix}")
        if name in names:
            return True
        cut = name.find("_", 1)
        while cut != -1:
            head, tail = name[:cut], name[cut + 1 :]
            if head != own and head in names and tail in suffixes:
                return True
            cut = name.find("_", cut + 1)
    return False
