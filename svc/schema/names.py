"""The type names the builder generates, and whether the IR's names are all plain.

The builder's own names (`_bool_exp`, `order_by`, `_comparison_exp`, …) are valid; the
variable part of every generated name comes from the IR: table, column, relationship,
computed field, function and argument names, custom root fields, constraint names (enum
values) and scalar names. `plain_names` is True when all of them are plain GraphQL names,
not starting with `__` (reserved for introspection), not a reserved type name (`String`,
…) for the names that become types, and not `true`/`false`/`null` for those that become
enum values; and when no two generated types share a name (the builder memoises types by
name, so a table called `x_bool_exp` next to a table `x` would get one type for both).
Then no graphql-core constructor would raise and schema validation would find no bad name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

from graphql import GraphQLNamedType

from svc.ir.model import FunctionArg, Ir, RootFields, Table

# Aggregate operators over numeric columns (their result is a Float, `sum` excepted), and
# over columns with an ordering.
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

# `x_<suffix>`: the types generated per table `x` besides `x` itself.
TABLE_TYPE_SUFFIXES = frozenset(
    {
        "select_column",
        "order_by",
        "bool_exp",
        "aggregate",
        "aggregate_fields",
        "aggregate_order_by",
        "mutation_response",
        "insert_input",
        "obj_rel_insert_input",
        "arr_rel_insert_input",
        "on_conflict",
        "constraint",
        "update_column",
        "set_input",
        "inc_input",
        "append_input",
        "prepend_input",
        "delete_key_input",
        "delete_elem_input",
        "delete_at_path_input",
        "pk_columns_input",
        "updates",
    }
    | {f"{op}_fields" for op in ALL_AGG_OPS}
    | {f"{op}_order_by" for op in ALL_AGG_OPS}
)
# Types generated once per schema; besides these, `<scalar>_comparison_exp` and
# `<function>_args`.
GLOBAL_TYPE_NAMES = frozenset(
    {
        "order_by",
        "query_root",
        "mutation_root",
        "subscription_root",
        "st_d_within_input",
        "st_d_within_geography_input",
    }
)

_PLAIN = re.compile(r"(?!__)[_A-Za-z][_0-9A-Za-z]*")
_NOT_ENUM_VALUES = frozenset({"true", "false", "null"})
# Scalars the builder maps to graphql-core's own types instead of creating them.
_BUILTIN_SCALARS = frozenset({"Int", "Float", "String", "Boolean"})
_ROOT_FIELDS = tuple(f.name for f in dataclasses.fields(RootFields))


@dataclasses.dataclass
class _Names:
    """The names an IR lends the schema, by how they are used."""

    fields: set[str] = dataclasses.field(default_factory=set)  # fields and arguments
    enum_values: set[str] = dataclasses.field(default_factory=set)
    tables: list[str] = dataclasses.field(default_factory=list)  # type names, as given
    # `<name>_args` types, with their arguments
    functions: dict[str, tuple[FunctionArg, ...]] = dataclasses.field(default_factory=dict)
    clash: bool = False  # two different functions' arguments under one `<name>_args`
    scalars: set[str] = dataclasses.field(default_factory=set)


def plain_names(ir: Ir) -> bool:
    """True when every name the schema takes from `ir` is plain and no two generated types
    would share a name (see the module docstring)."""
    names = _collect(ir)
    custom_scalars = names.scalars - _BUILTIN_SCALARS
    reserved = GraphQLNamedType.reserved_types
    every = names.fields | names.enum_values | set(names.tables) | set(names.functions)
    return (
        all(_PLAIN.fullmatch(name) for name in every | custom_scalars)
        and names.enum_values.isdisjoint(_NOT_ENUM_VALUES)
        and not any(name in reserved for name in names.tables)
        and not any(name in reserved for name in custom_scalars)
        and not _clash(names)
    )


def _collect(ir: Ir) -> _Names:
    names = _Names()
    for table in ir.tables.values():
        if not table.gql_name:
            continue  # not in the schema
        names.tables.append(table.gql_name)
        names.fields.update(_table_names(table))
        for column in table.columns:
            names.enum_values.add(column.gql_name)  # also a field name
            names.scalars.add(column.scalar)
        names.enum_values.update(name for name, _ in table.unique_constraints)
        for cf in table.computed_fields:
            names.fields.add(cf.name)
            names.scalars.add(cf.scalar or "String")
            _add_function(cf.function.name, cf.args, names)
    for fn in ir.functions.values():
        names.fields.add(fn.gql_name)
        _add_function(fn.gql_name, fn.args, names)
    return names


def _table_names(table: Table) -> Iterator[str]:
    for name in _ROOT_FIELDS:
        yield getattr(table.root_fields, name)
    for rel in table.relationships:
        yield rel.name


def _add_function(name: str, args: tuple[FunctionArg, ...], names: _Names) -> None:
    if names.functions.setdefault(name, args) != args:
        names.clash = True
    for arg in args:
        names.fields.add(arg.gql_name)
        names.scalars.add(arg.scalar)


def _clash(names: _Names) -> bool:
    """Whether a table's type name could equal another generated type's name."""
    tables = set(names.tables)
    if names.clash or len(tables) < len(names.tables):
        return True
    for name in tables:
        if name in GLOBAL_TYPE_NAMES:
            return True
        if name.endswith("_comparison_exp") or name.endswith("_args"):
            return True  # a scalar's or a function's type, perhaps
        cut = name.find("_", 1)  # every split into a non-empty `x` and `_<suffix>`
        while cut != -1:
            if name[:cut] in tables and name[cut + 1 :] in TABLE_TYPE_SUFFIXES:
                return True
            cut = name.find("_", cut + 1)
    return False
