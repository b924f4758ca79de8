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
The name rule itself is `svc.metadata.names.is_graphql_name`, shared with metadata
validation. A name used as the prefix of generated names (a table's type name, a
relationship, computed field or function name: `<name>_aggregate`, `<name>_args`, …) must
also not be `_`, whose generated names would start with `__`.

`schema_problem` tells what a metadata write must not introduce (`svc.api.metadata`
refuses it, `svc compile` reports it): a name the schema cannot take, two types with one
name, two root fields or two columns of one table with one field name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

from graphql import GraphQLNamedType

from svc.errors import SvcError
from svc.ir.agg_predicates import AGG_PREDICATES, arguments_enum
from svc.ir.model import Function, FunctionArg, Ir, RootFields, Table, tables_not_shared
from svc.metadata.names import PLAIN_NAME, identifier_error

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
        "aggregate_bool_exp",  # svc/schema/agg_bool_exp.py
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
        "stream_cursor_input",  # svc/schema/stream.py (on by default)
        "stream_cursor_value_input",
        "nested_update_input",  # svc/schema/nested_updates.py
        "obj_rel_update_input",
        "arr_rel_update_input",
        "arr_rel_updates",
    }
    | {f"aggregate_bool_exp_{fn}" for fn in AGG_PREDICATES}
    | {f"aggregate_bool_exp_{fn.name}_arguments" for fn in AGG_PREDICATES.values() if fn.arg_names}
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
        "cursor_ordering",  # svc/schema/stream.py
        "st_d_within_input",
        "st_d_within_geography_input",
        # `_cast` of jsonb, geometry and geography comparisons (svc.ir.operators.CASTS)
        "jsonb_cast_exp",
        "geometry_cast_exp",
        "geography_cast_exp",
    }
)


plain = PLAIN_NAME.fullmatch  # `is_graphql_name` for strings
_NOT_ENUM_VALUES = frozenset({"true", "false", "null"})
# Scalars the builder maps to graphql-core's own types instead of creating them.
_BUILTIN_SCALARS = frozenset({"Int", "Float", "String", "Boolean"})
_ROOT_FIELDS = tuple(f.name for f in dataclasses.fields(RootFields))


@dataclasses.dataclass
class _Names:
    """The names an IR lends the schema, by how they are used."""

    fields: set[str] = dataclasses.field(default_factory=set)  # fields and arguments
    prefixes: set[str] = dataclasses.field(default_factory=set)  # `<name>_aggregate`, …
    enum_values: set[str] = dataclasses.field(default_factory=set)
    tables: list[str] = dataclasses.field(default_factory=list)  # type names, as given
    # `<name>_args` types, with their arguments
    functions: dict[str, tuple[FunctionArg, ...]] = dataclasses.field(default_factory=dict)
    clash: str | None = None  # `<name>_args` of two functions with different arguments
    scalars: set[str] = dataclasses.field(default_factory=set)


def plain_names(ir: Ir) -> bool:
    """True when every name the schema takes from `ir` is plain and no two generated types
    would share a name (see the module docstring)."""
    return _names_problem(ir) is None


def _names_problem(ir: Ir) -> SvcError | None:
    """`_first_problem(_collect(ir))`, remembered on the IR (`Ir.derived`): a metadata
    write checks its new IR, then every role's schema build asks again about the same one
    (the walk over every name takes ~10 ms for 2,000 tables)."""
    if __name__ not in ir.derived:
        ir.derived[__name__] = _first_problem(_collect(ir))
    answer: SvcError | None = ir.derived[__name__]
    return answer


def _first_problem(names: _Names) -> SvcError | None:
    """The error for the first name of `names` the schema cannot take, if any."""
    custom_scalars = names.scalars - _BUILTIN_SCALARS
    every = names.fields | names.enum_values | set(names.tables) | set(names.functions)
    bad = [name for name in every | custom_scalars if not plain(name)]
    if bad:
        return identifier_error(min(bad))
    for name in sorted(names.enum_values & _NOT_ENUM_VALUES):
        return identifier_error(name)
    if "_" in names.prefixes:
        return identifier_error("__aggregate")  # `_` + `_aggregate`, say: starts with `__`
    reserved = GraphQLNamedType.reserved_types
    for name in sorted((set(names.tables) | custom_scalars) & set(reserved)):
        return _type_conflict(name)
    clash = _clash(names)
    return None if clash is None else _type_conflict(clash)


def _type_conflict(name: str) -> SvcError:
    return SvcError(
        "unexpected",
        f"Found conflicting definitions for GraphQL type '{name}'. "
        "Types must not be defined more than once across all sources.",
        status=500,
        path="$.args",
    )


def _field_conflict(parent: str, name: str, owners: list[str]) -> SvcError:
    """The reference's `safeSelectionSet` error (500 `unexpected`)."""
    where = f" defined in [{', '.join(owners)}]" if owners else ""
    return SvcError(
        "unexpected",
        f"Encountered conflicting definitions in the selection set for '{parent}' for field "
        f"'{name}'{where}. Fields must not be defined more than once across all sources.",
        status=500,
        path="$.args",
    )


def schema_problem(ir: Ir) -> SvcError | None:
    """Why the admin schema of `ir` cannot be built as the metadata means it, or None.

    In order: a name that is not a GraphQL name (400 `validation-failed`, the reference's
    `cannot include "<name>" in the GraphQL schema because  it is not a valid GraphQL
    identifier`), two generated types with one name (500 `unexpected`), two root fields
    with one name, two columns of a table with one field name (500 `unexpected`, the
    reference's `Encountered conflicting definitions in the selection set for '<type>' for
    field '<name>' defined in [...]`). Relationships and computed fields named like a
    column are the IR's inconsistencies (`already-exists`). Remembered on the IR
    (`Ir.derived`), with the counts `new_schema_problem` starts the next IR's check from
    when there is none."""
    if _PROBLEM not in ir.derived:
        problem = _whole_problem(ir)
        ir.derived[_PROBLEM] = problem
        if problem is None:
            ir.derived[_INDEX] = _Index.of(ir)
    found: SvcError | None = ir.derived[_PROBLEM]
    return found


def _whole_problem(ir: Ir) -> SvcError | None:
    """`schema_problem` from every name of `ir` (the walk over all of them)."""
    problem = _names_problem(ir)
    if problem is not None:
        return problem
    query: list[str] = []
    mutation: list[str] = []
    for table in ir.tables.values():
        if not table.gql_name:
            continue
        if _columns_clash(table):
            names = [c.gql_name for c in table.columns]
            twice = next(n for n in names if names.count(n) > 1)
            return _field_conflict(table.gql_name, twice, [])
        for root, name in _table_roots(table):
            (query if root == "query_root" else mutation).append(name)
    for root, name in _function_roots(ir.functions.values()):
        (query if root == "query_root" else mutation).append(name)
    for root, name, _ in _action_roots(ir):
        (query if root == "query_root" else mutation).append(name)
    if len(set(query)) == len(query) and len(set(mutation)) == len(mutation):
        return None
    return _root_conflict(ir)  # rare: find who


def _columns_clash(table: Table) -> bool:
    """Whether two columns of `table` have one field name."""
    return len({c.gql_name for c in table.columns}) < len(table.columns)


def _function_roots(functions: Iterable[Function]) -> Iterator[tuple[str, str]]:
    """`(root type, field)` of the root fields of each of the tracked `functions`."""
    for fn in functions:
        root = "query_root" if fn.exposed_as == "query" else "mutation_root"
        yield root, fn.root_name()
        if fn.exposed_as == "query" and fn.returns_set:
            yield root, fn.root_name("_aggregate")


def _action_roots(ir: Ir) -> Iterator[tuple[str, str, str]]:
    """`(root type, field, owner)` of each action's root fields: a query action's on
    `query_root`, a mutation's on `mutation_root`, an asynchronous one's result query on
    `query_root` too (the reference's `actionQueryRoot`/`actionAsyncQuery`)."""
    resolved = ir.actions.actions if ir.actions is not None else {}
    for name, found in resolved.items():
        owner = f"action {name}"
        action = found.action.definition
        yield ("query_root" if action.operation == "query" else "mutation_root"), name, owner
        if action.asynchronous:
            yield "query_root", name, owner


def _table_roots(table: Table) -> Iterator[tuple[str, str]]:
    """`(root type, field)` of each root field of `table` in the admin schema."""
    rf, pk = table.root_fields, bool(table.primary_key)
    yield "query_root", rf.select
    yield "query_root", rf.select_aggregate
    if pk:
        yield "query_root", rf.select_by_pk
    mutation: tuple[str, ...] = ()
    if table.insertable:
        mutation += (rf.insert, rf.insert_one)
    if table.updatable_rows:
        mutation += (
            (rf.update, rf.update_many, rf.update_by_pk) if pk else (rf.update, rf.update_many)
        )
    if table.deletable:
        mutation += (rf.delete, rf.delete_by_pk) if pk else (rf.delete,)
    for name in mutation:
        yield "mutation_root", name


def _root_conflict(ir: Ir) -> SvcError | None:
    """The first root field two tables or functions share, with its owners."""
    owners: dict[tuple[str, str], list[str]] = {}
    for table in ir.tables.values():
        if table.gql_name:
            what = f"table {table.name} in source default"
            for key in _table_roots(table):
                owners.setdefault(key, []).append(what)
    for fn in ir.functions.values():
        what = f"function {fn.name} in source default"
        for key in _function_roots((fn,)):
            owners.setdefault(key, []).append(what)
    for root, name, what in _action_roots(ir):
        owners.setdefault((root, name), []).append(what)
    for (root, name), found in owners.items():
        if len(found) > 1:
            return _field_conflict(root, name, found)
    return None


def new_schema_problem(before: Ir | None, after: Ir) -> SvcError | None:
    """`schema_problem(after)` unless `before` has the same one (a metadata write refuses
    only what it introduces; an older problem stays reported by every request).

    When `before` has none, only the tables `after` does not share with it are checked
    (`_fine_since`): a write costs what it changes, not the size of the schema; anything
    that check cannot settle is decided by the whole walk."""
    if before is not None and _fine_since(before, after):
        return None
    problem = schema_problem(after)
    if problem is None or before is None:
        return problem
    old = schema_problem(before)
    return None if old is not None and old.message == problem.message else problem


def carry_names(before: Ir, after: Ir) -> None:
    """Settle `after`'s schema problem from `before`'s when only what they do not share
    needs a look (`_fine_since`); otherwise leave it to be walked when asked. Called when
    a worker loads a newer IR built over `before` (`svc.api.state.State.build`)."""
    _fine_since(before, after)


# Tables new to an IR beyond which the whole walk is as cheap as looking at each.
_INCREMENTAL_MAX = 1000
_PROBLEM = f"{__name__}.problem"
_INDEX = f"{__name__}.index"


@dataclasses.dataclass(frozen=True, slots=True)
class _Index:
    """How many tables give each type name and each `(root type, root field)` in an IR
    without a schema problem; the next IR's check starts from it."""

    types: dict[str, int]
    roots: dict[tuple[str, str], int]

    @classmethod
    def of(cls, ir: Ir) -> _Index:
        """The counts of every table of `ir`, its functions and its actions."""
        index = cls({}, {})
        index.add([t for t in ir.tables.values() if t.gql_name], 1)
        for key in (
            *_function_roots(ir.functions.values()),
            *((r, n) for r, n, _ in _action_roots(ir)),
        ):
            index.roots[key] = index.roots.get(key, 0) + 1
        return index

    def copy(self) -> _Index:
        return _Index(dict(self.types), dict(self.roots))

    def add(self, tables: list[Table], step: int) -> None:
        """Count `tables` in (`step` 1) or out (-1); a count of 0 is removed."""
        for table in tables:
            _bump(self.types, table.gql_name, step)
            for key in _table_roots(table):
                _bump(self.roots, key, step)


def _bump(counts: dict[Any, int], key: Any, step: int) -> None:
    count = counts.get(key, 0) + step
    if count:
        counts[key] = count
    else:
        counts.pop(key, None)


def _fine_since(before: Ir, after: Ir) -> bool:
    """True when `after` has no schema problem, shown from the tables it does not share
    with `before` (which has none); then `after` remembers that and its `_Index`. False
    when that cannot be shown this way: a function or action root changed, many tables
    changed, a changed table has computed fields (their `_args` types meet every
    function's), or a changed table looks like a problem (the whole walk then tells)."""
    old = before.derived.get(_INDEX)  # there only when `before` has no problem
    if old is None:
        return False
    if before.functions != after.functions or list(_action_roots(before)) != list(
        _action_roots(after)
    ):
        return False
    gone, new = tables_not_shared(before, after)
    if len(new) > _INCREMENTAL_MAX or any(t.computed_fields for t in new):
        return False
    index = old.copy()
    index.add(gone, -1)
    index.add(new, 1)
    if any(_table_problem(table, index) for table in new):
        return False
    after.derived[_PROBLEM] = after.derived[__name__] = None
    after.derived[_INDEX] = index
    return True


def _table_problem(table: Table, index: _Index) -> bool:
    """Whether `table` (counted in `index`) may give the schema a problem: a name of its
    own (`_first_problem` of its names alone), two columns with one field name, a type
    name or root field another table also gives, or a type name that is, or makes,
    another table's generated type name (`_clash` across tables)."""
    names = _Names()
    _collect_table(table, names)
    if _first_problem(names) is not None or _columns_clash(table):
        return True
    name, types = table.gql_name, index.types
    if types.get(name, 0) > 1 or any(index.roots[key] > 1 for key in _table_roots(table)):
        return True
    cut = name.find("_", 1)  # `name` as `<other>_<suffix>`
    while cut != -1:
        if name[:cut] in types and name[cut + 1 :] in TABLE_TYPE_SUFFIXES:
            return True
        cut = name.find("_", cut + 1)
    cut = name.find("_select_column_")  # `name` as another table's arguments enum
    while cut != -1:
        other = name[:cut]
        if other in types and any(arguments_enum(other, fn) == name for fn in AGG_PREDICATES):
            return True
        cut = name.find("_select_column_", cut + 1)
    # another table named `<name>_<suffix>` or like one of this table's arguments enums
    return any(f"{name}_{suffix}" in types for suffix in TABLE_TYPE_SUFFIXES) or any(
        arguments_enum(name, fn) in types for fn in AGG_PREDICATES
    )


def _collect(ir: Ir) -> _Names:
    names = _Names()
    for table in ir.tables.values():
        if table.gql_name:  # else not in the schema
            _collect_table(table, names)
    for fn in ir.functions.values():
        names.fields.add(fn.gql_name)
        names.prefixes.add(fn.gql_name)
        _add_function(fn.gql_name, fn.args, names)
    return names


def _collect_table(table: Table, names: _Names) -> None:
    """Add the names `table` lends the schema to `names`."""
    names.tables.append(table.gql_name)
    names.prefixes.add(table.gql_name)
    names.fields.update(_table_names(table))
    for column in table.columns:
        names.enum_values.add(column.gql_name)  # also a field name
        names.scalars.add(column.scalar)
        if column.elem_scalar is not None:  # an array column as a list
            names.scalars.add(column.elem_scalar)
    names.enum_values.update(name for name, _ in table.unique_constraints)
    names.prefixes.update(rel.name for rel in table.relationships)
    for cf in table.computed_fields:
        names.fields.add(cf.name)
        names.prefixes.add(cf.name)
        names.scalars.add(cf.scalar or "String")
        _add_function(cf.function.name, cf.args, names)


def _table_names(table: Table) -> Iterator[str]:
    for name in _ROOT_FIELDS:
        yield getattr(table.root_fields, name)
    for rel in table.relationships:
        yield rel.name


def _add_function(name: str, args: tuple[FunctionArg, ...], names: _Names) -> None:
    if names.functions.setdefault(name, args) != args:
        names.clash = f"{name}_args"
    for arg in args:
        names.fields.add(arg.gql_name)
        names.scalars.add(arg.scalar)


def _clash(names: _Names) -> str | None:
    """A table's type name that could equal another generated type's name, if any."""
    tables = set(names.tables)
    if names.clash is not None:
        return names.clash
    if len(tables) < len(names.tables):
        return next(n for n in names.tables if names.tables.count(n) > 1)
    # Every table's aggregation predicate argument enums, made once: comparing each name
    # with each table's was quadratic (6 s of a 1,000-table replace_metadata).
    enums = {arguments_enum(t, fn) for t in tables for fn in AGG_PREDICATES}
    for name in sorted(tables):
        if name in GLOBAL_TYPE_NAMES:
            return name
        if name.endswith("_comparison_exp") or name.endswith("_args"):
            return name  # a scalar's or a function's type, perhaps
        if name in enums:
            return name  # another table's aggregation predicate arguments enum
        cut = name.find("_", 1)  # every split into a non-empty `x` and `_<suffix>`
        while cut != -1:
            if name[:cut] in tables and name[cut + 1 :] in TABLE_TYPE_SUFFIXES:
                return name
            cut = name.find("_", cut + 1)
    return None
