"""GraphQL enum types of enum tables (Hasura's `is_enum`) and the columns that take them.

A column referencing an enum table's key (`svc.ir.enums.enum_references`) has the type
`<table>_enum` wherever the reference gives a column its column parser: selection
output, `where` (`<table>_enum_comparison_exp` with `_eq`, `_neq`, `_in`, `_nin`,
`_is_null`), insert, `_set` and primary-key inputs, stream cursors, hence variables
(Hasura `server/src-lib/Hasura/GraphQL/Schema/Column.hs`, `columnParser`'s
`ColumnEnumReference` case; `Hasura/Backends/Postgres/Instances/Schema.hs`,
`comparisonExps`). The type is made from the IR's tables, not from the role's view, so
a role that cannot select the enum table still has it. Its values are sorted by name
(the reference's introspection order) and carry the value text itself, which planning
sends as the column's parameter (`svc.plan.values`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphql import GraphQLEnumType, GraphQLInputObjectType

from svc.ir.enums import enum_references, enum_type_name
from svc.ir.model import Column, Table
from svc.ir.operators import Operand, enum_operators

if TYPE_CHECKING:
    from svc.schema.build import SchemaBuilder


def enum_table_of(b: SchemaBuilder, table: Table, column: Column) -> Table | None:
    """The enum table `table.column` references, if any."""
    refs = enum_references(b.ir).get(table.name)
    return refs.get(column.name) if refs else None


def enum_type(b: SchemaBuilder, enum: Table) -> GraphQLEnumType:
    """`<table>_enum` of enum table `enum` (made once per schema)."""
    name = enum_type_name(enum)
    t = b.t
    return b._memo(  # type: ignore[no-any-return]
        name,
        lambda: t.enum_type(
            name,
            {
                v.name: t.enum_value(v.name, v.comment)
                for v in sorted(enum.enum_values or (), key=lambda v: v.name)
            },
        ),
    )


def enum_comparison_exp(b: SchemaBuilder, enum: Table) -> GraphQLInputObjectType:
    """`<table>_enum_comparison_exp`: the equality operators over the enum type."""
    of = enum_type(b, enum)
    name = f"{of.name}_comparison_exp"

    def fields() -> dict[str, Any]:
        operand = {
            Operand.SCALAR: lambda: b.input_field(of),
            Operand.LIST: lambda: b.input_field(b.list_nn(of)),
            Operand.BOOLEAN: lambda: b.input_field(b.scalar("Boolean")),
        }
        return dict(sorted((op.name, operand[op.operand]()) for op in enum_operators()))

    return b._memo(  # type: ignore[no-any-return]
        name,
        lambda: b.t.input_type(
            name,
            fields,
            f'Boolean expression to compare columns of type "{of.name}". All fields are '
            "combined with logical 'AND'.",
        ),
    )
