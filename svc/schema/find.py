"""Find one type of a lazy schema by name (`svc.schema.lazy`), filling only what leads to it.

A name is looked up (a variable's type, a fragment's type condition, `__type(name:)`) before
or after the fields that reach it are read. `TypeFinder.find` answers the type only when
the eager schema has it: it makes root fields and fills types reachable from the roots
that can make it, and looks among the types made after each step:

1. the types made so far (the builder's memo and custom scalars);
2. a built-in scalar: `Int` when a table has a list field (`limit`), the scalar of a
   visible column, `Float` of an aggregate (`x_avg_fields`), one an action's types name;
3. the fixed names: `order_by` and `cursor_ordering` through a table whose order or stream
   cursor names them, the PostGIS inputs through a geometry or geography column;
4. the tables the name can belong to (`<table>` or `<table>_…`, each `_` a split): their
   root fields made, their types filled until nothing new is made, and the main types of
   the tables with relationships to them (`x_aggregate_order_by` is made by the order of
   a table with an array relationship to `x`);
5. a scalar's name or one of its expressions (`S`, `S_comparison_exp`, …): the object
   types and boolean expressions of tables with a visible column of that scalar;
6. a computed field's `<function>_args`, through the tables that have it;
7. an enum table's `<enum>_enum` (and its comparison expression), through the tables
   with a column referencing it;
8. the actions' custom types: the action types made by their root fields, filled until
   none is new.

Any other name is None, and the whole schema is never made to look for a name: a request
naming types (`__type(name: "nonsense")`, variables) makes at most the types of the tables,
scalars and actions that name can belong to.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from graphql import GraphQLList, GraphQLNonNull

from svc.ir.enums import enum_references, enum_type_name
from svc.ir.model import ROOT_FIELD_KINDS, Ir, Table
from svc.schema.lazy import LazyInputObjectType, LazyObjectType, filled
from svc.schema.names import TABLE_TYPE_SUFFIXES

if TYPE_CHECKING:
    from svc.schema.build import SchemaBuilder

_LAZY = (LazyObjectType, LazyInputObjectType)
_WRAPPERS = (GraphQLList, GraphQLNonNull)
_LIST_KINDS = frozenset({"select", "select_aggregate"})
_NAME_KINDS = ROOT_FIELD_KINDS
BUILTINS = frozenset({"Int", "Float", "String", "Boolean", "ID"})
_SCALAR_SUFFIXES = ("_comparison_exp", "_array_comparison_exp", "_cast_exp")


def _named(of: Any) -> Any:
    while type(of) in _WRAPPERS:
        of = of.of_type
    return of


class TypeFinder:
    """The lookups of one role's lazy schema (see the module docstring)."""

    def __init__(self, b: SchemaBuilder) -> None:
        self.b = b
        self._by_base: dict[str, Table] | None = None
        self._into: dict[Any, list[Table]] | None = None
        self._by_scalar: dict[str, list[Table]] | None = None

    def find(self, name: str) -> Any | None:
        """The reachable type called `name`, or None (see the module docstring)."""
        found = self._made(name)
        if found is not None:
            return found
        for route in (
            self._builtin,
            self._fixed,
            self._through_tables,
            self._through_scalars,
            self._through_computed,
            self._through_enums,
            self._through_actions,
        ):
            found = route(name)
            if found is not None:
                return found
        return None

    def _through_tables(self, name: str) -> Any | None:
        for table in self._tables_of(name):
            found = self._through_table(table, name)
            if found is not None:
                return found
        return None

    def _through_scalars(self, name: str) -> Any | None:
        scalar = self._scalar_of(name)
        return None if scalar is None else self._through_scalar(scalar, name)

    # -- what is made so far -----------------------------------------------------------
    def _made(self, name: str) -> Any | None:
        found = self.b.types.get(name)
        if found is None and name not in BUILTINS:
            found = self.b.scalars.get(name)
        return found

    def _builtin(self, name: str) -> Any | None:
        """`Int` when a list field's `limit` has it; the scalar of a column; `Float` of an
        aggregate (`x_avg_fields`); one an action's types name."""
        if name not in BUILTINS:
            return None
        b = self.b
        if name == "Int" and any(
            access.query_roots & _LIST_KINDS or access.subscription_roots & _LIST_KINDS
            for access in (b.view.table(t) for t in b.tables)
        ):
            return b.scalars["Int"]
        found = self._through_scalar(name, name) if name in self._scalars() else None
        if found is None and name == "Float":
            found = self._float_of_aggregates()
        return found if found is not None else self._through_actions(name)

    def _float_of_aggregates(self) -> Any | None:
        b = self.b
        for table in b.tables.values():
            if not b.view.table(table.name).aggregations:
                continue
            self.ensure(table)
            base = table.type_name()
            self._fill(b.types.get(base + "_aggregate"))
            self._fill(b.types.get(base + "_aggregate_fields"))
            if base + "_avg_fields" in b.types:
                return b.scalars["Float"]
        return None

    def _fixed(self, name: str) -> Any | None:
        """`order_by`, `cursor_ordering` and the PostGIS inputs, through a table that
        names them."""
        b = self.b
        if name == "order_by":
            for table in b.tables.values():
                self.ensure(table)
                if table.type_name("_order_by") in b.types and b.cols(table):
                    return b.order_by
        elif name == "cursor_ordering":
            for table in b.tables.values():
                self.ensure(table)
                self._fill(b.types.get(table.type_name("_stream_cursor_input")))
                found = b.types.get(name)
                if found is not None:
                    return found
        elif name in _POSTGIS_INPUTS:
            scalar = _POSTGIS_INPUTS[name]
            return self._through_scalar(scalar, name) if scalar in self._scalars() else None
        return None

    def _through_computed(self, name: str) -> Any | None:
        """`<function>_args` of a computed field: through the tables that have it."""
        if not name.endswith("_args"):
            return None
        for table in self.b.tables.values():
            if any(f"{cf.function.name}_args" == name for cf in table.computed_fields):
                self.ensure(table)
                base = table.type_name()
                self._fill(self.b.types.get(base))
                self._fill(self.b.types.get(base + "_bool_exp"))
                found = self._made(name)
                if found is not None:
                    return found
        return None

    def _through_enums(self, name: str) -> Any | None:
        """An enum table's `<enum>_enum` or its comparison expression: through the tables
        with a column referencing it (`svc.schema.enums`: made from the IR, whether or not
        the role may select the enum table)."""
        enum = name.removesuffix("_comparison_exp")
        if not enum.endswith("_enum"):
            return None
        for table_name, columns in enum_references(self.b.ir).items():
            table = self.b.tables.get(table_name)
            if table is None or not any(enum_type_name(e) == enum for e in columns.values()):
                continue
            self.ensure(table)
            self._fill_own(table)
            self._fill_comparisons(self.b.types.get(table.type_name("_bool_exp")))
            found = self._made(name)
            if found is not None:
                return found
        return None

    def _through_actions(self, name: str) -> Any | None:
        """A custom type of the actions (or a built-in scalar they name): the action types
        made so far filled until none is new (the action root fields made them)."""
        actions = self.b.ir.actions
        if actions is None:
            return None
        kinds = actions.types.type_names()
        if name not in kinds and name not in BUILTINS:
            return None
        while True:
            todo = [t for n, t in list(self.b.types.items()) if n in kinds and type(t) in _LAZY]
            for t in todo:
                filled(t)
            if not todo:
                break
        if name not in BUILTINS:
            return self._made(name)
        for n in kinds:
            t = self.b.types.get(n)
            for f in getattr(t, "fields", {}).values():
                for of in (f.type, *(a.type for a in getattr(f, "args", {}).values())):
                    if _named(of).name == name:
                        return _named(of)
        return None

    def ensure(self, table: Table) -> None:
        """Make the root fields of `table` the roots have (their types made, empty)."""
        rf = table.root_fields
        for root in self.b.roots:
            for kind in _NAME_KINDS:
                root.fields.get(getattr(rf, kind))

    # -- tables ----------------------------------------------------------------------------
    def _tables_of(self, name: str) -> list[Table]:
        if self._by_base is None:
            self._by_base = {t.type_name(): t for t in self.b.tables.values()}
        out = []
        table = self._by_base.get(name)
        if table is not None:
            out.append(table)
        at = name.find("_", 1)
        while at > 0:
            table = self._by_base.get(name[:at])
            if table is not None and _table_suffix(name[at + 1 :]):
                out.append(table)
            at = name.find("_", at + 1)
        return out

    def _through_table(self, table: Table, name: str) -> Any | None:
        self.ensure(table)
        self._fill_own(table)
        found = self._made(name)
        if found is not None:
            return found
        for source in self._into_table(table):
            self.ensure(source)
            self._fill_own(source)
        self._fill_own(table)
        return self._made(name)

    def _fill_own(self, table: Table) -> None:
        """Fill the types of `table` made so far (its names: `TABLE_TYPE_SUFFIXES`, which
        `tests/test_schema_build.py` keeps complete), and those they make, until none is
        new."""
        base = table.type_name()
        names = [base, *(f"{base}_{suffix}" for suffix in TABLE_TYPE_SUFFIXES)]
        types = self.b.types
        while True:
            todo = [t for t in (types.get(n) for n in names) if type(t) in _LAZY]
            if not todo:
                return
            for t in todo:
                filled(t)

    def _into_table(self, table: Table) -> list[Table]:
        if self._into is None:
            into: dict[Any, list[Table]] = {}
            for source in self.b.tables.values():
                for rel in source.relationships:
                    into.setdefault(rel.target, []).append(source)
            self._into = into
        return self._into.get(table.name, [])

    @staticmethod
    def _fill(t: Any) -> None:
        if t is not None:
            filled(t)

    # -- scalars -----------------------------------------------------------------------------
    def _scalars(self) -> dict[str, list[Table]]:
        self._scalar_of("")
        assert self._by_scalar is not None
        return self._by_scalar

    def _scalar_of(self, name: str) -> str | None:
        if self._by_scalar is None:
            by: dict[str, list[Table]] = {}
            for table in self.b.tables.values():
                for column in self.b.cols(table):
                    for scalar in (column.scalar, column.elem_scalar):
                        if scalar:
                            tables = by.setdefault(scalar, [])
                            if not tables or tables[-1] is not table:
                                tables.append(table)
            self._by_scalar = by
        if name in self._by_scalar:
            return name
        for suffix in _SCALAR_SUFFIXES:
            if name.endswith(suffix) and name[: -len(suffix)] in self._by_scalar:
                return name[: -len(suffix)]
        return None

    def _through_scalar(self, scalar: str, name: str) -> Any | None:
        assert self._by_scalar is not None
        for table in self._by_scalar[scalar]:
            self.ensure(table)
            base = table.type_name()
            for suffix in ("", "_bool_exp"):
                t = self.b.types.get(base + suffix)
                if t is None:
                    continue
                self._fill(t)
                if suffix:
                    self._fill_comparisons(t)
                elif name == scalar:  # the object type has the column: the scalar is reached
                    return self.b.scalars.get(scalar)
                found = self._made(name)
                if found is not None:
                    return found
        return None

    def _fill_comparisons(self, t: Any) -> None:
        """Fill the comparison expressions a boolean expression names (their `_cast_exp`s
        are made then); nothing for None."""
        if t is None:
            return
        fields: Iterable[Any] = t.fields.values()
        for field in fields:
            of = _named(field.type)
            if type(of) in _LAZY and of.name.endswith("_comparison_exp"):
                filled(of)


def _table_suffix(suffix: str) -> bool:
    """Whether `<table>_<suffix>` may be a type of the table: a suffix of
    `TABLE_TYPE_SUFFIXES`, or an aggregation predicate's columns enum
    (`<table>_select_column_<table>_aggregate_bool_exp_<op>_arguments_columns`,
    `svc.ir.agg_predicates.arguments_enum`)."""
    return suffix in TABLE_TYPE_SUFFIXES or (
        suffix.startswith("select_column_") and suffix.endswith("_arguments_columns")
    )


# Types made once per schema, not per table or scalar.
_POSTGIS_INPUTS = {"st_d_within_input": "geometry", "st_d_within_geography_input": "geography"}
FIXED_NAMES = frozenset({"order_by", "cursor_ordering", *_POSTGIS_INPUTS})
_ROOTS = frozenset({"query_root", "mutation_root", "subscription_root"})


def findable(ir: Ir) -> bool:
    """Whether `TypeFinder` finds the types of `ir`'s schemas exactly: no source sets type
    affixes (names it would not split) and no scalar, root or fixed name can be read as a
    table's type (`<table>` or `<table>_…`). A schema that breaks this has two types of
    one name, which only the eager walk reports (graphql-core's error, which
    `svc.schema.role_schema` blames on the objects that cause it). Remembered on `ir`."""
    memo: dict[str, bool] = ir.derived.setdefault(__name__, {})
    found = memo.get("findable")
    if found is None:
        found = memo["findable"] = _findable(ir)
    return found


def _findable(ir: Ir) -> bool:
    tables = ir.tables.values()
    if any(t.type_affixes != ("", "") for t in tables):
        return False
    bases = {t.type_name() for t in tables if t.gql_name}
    names = set(FIXED_NAMES | _ROOTS | BUILTINS)
    for table in tables:
        for column in table.columns:
            names.add(column.scalar)
            if column.elem_scalar:
                names.add(column.elem_scalar)
        for cf in table.computed_fields:
            names.update(a.scalar for a in cf.args)
            if cf.scalar:
                names.add(cf.scalar)
    for fn in ir.functions.values():
        names.update(a.scalar for a in fn.args)
    return not any(_splits_into(name, bases) for name in names)


def _splits_into(name: str, bases: set[str]) -> bool:
    """Whether `name` is one of `bases` or starts with one followed by `_`."""
    if name in bases:
        return True
    at = name.find("_", 1)
    while at > 0:
        if name[:at] in bases:
            return True
        at = name.find("_", at + 1)
    return False
