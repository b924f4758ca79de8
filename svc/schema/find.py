"""Find one type of a lazy schema by name (`svc.schema.lazy`), filling only what leads to it.

A name is looked up (a variable's type, a fragment's type condition, `__type(name:)`) before
or after the fields that reach it are read. `TypeFinder.find` answers the type only when
the eager schema has it: it makes root fields and fills types reachable from the roots
that can make it, in this order, and looks among the types made after each step:

1. the types made so far (the builder's memo and custom scalars);
2. a built-in scalar: `Int` when a table has a list field (`limit`), else as a scalar of a
   column (4.), else in the whole schema (`Float` of an aggregate, `ID`);
3. the tables the name can belong to (`<table>` or `<table>_…`, each `_` a split): their
   root fields made, their types filled until nothing new is made, and the main types of
   the tables with relationships to them (`x_aggregate_order_by` is made by the order of
   a table with an array relationship to `x`);
4. a scalar's name or one of its expressions (`S`, `S_comparison_exp`, …): the object
   types and boolean expressions of tables with a visible column of that scalar;
5. the fixed names (`order_by`, …), and any name when the IR has functions or actions
   (their argument and output types are not followed here): the whole schema, once.

Any other name (`__type(name: "nonsense")`) is None without filling anything, so that a
request cannot make a role's whole schema by naming types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from graphql import GraphQLList, GraphQLNonNull

from svc.ir.model import Ir, Table
from svc.schema.lazy import LazyInputObjectType, LazyObjectType, filled

if TYPE_CHECKING:
    from svc.schema.build import SchemaBuilder

_LAZY = (LazyObjectType, LazyInputObjectType)
_WRAPPERS = (GraphQLList, GraphQLNonNull)
_LIST_KINDS = frozenset({"select", "select_aggregate"})
_NAME_KINDS = (
    "select",
    "select_by_pk",
    "select_aggregate",
    "select_stream",
    "insert",
    "insert_one",
    "update",
    "update_by_pk",
    "update_many",
    "delete",
    "delete_by_pk",
)
BUILTINS = frozenset({"Int", "Float", "String", "Boolean", "ID"})
_SCALAR_SUFFIXES = ("_comparison_exp", "_array_comparison_exp", "_cast_exp")


def _named(of: Any) -> Any:
    while type(of) in _WRAPPERS:
        of = of.of_type
    return of


class TypeFinder:
    """The lookups of one role's lazy schema (see the module docstring); `whole()` gives
    every type (the fallback)."""

    def __init__(self, b: SchemaBuilder, whole: Callable[[], dict[str, Any]]) -> None:
        self.b = b
        self.whole = whole
        self._by_base: dict[str, Table] | None = None
        self._into: dict[Any, list[Table]] | None = None
        self._by_scalar: dict[str, list[Table]] | None = None

    def find(self, name: str) -> Any | None:
        """The reachable type called `name`, or None (see the module docstring)."""
        found = self._made(name)
        if found is not None:
            return found
        if name in BUILTINS:
            return self._builtin(name)
        if name == "order_by":
            return self._order_by()
        tables = self._tables_of(name)
        for table in tables:
            found = self._through_table(table, name)
            if found is not None:
                return found
        scalar = self._scalar_of(name)
        if scalar is not None:
            found = self._through_scalar(scalar, name)
            if found is not None:
                return found
        if self._followed_elsewhere(name):
            return self.whole().get(name)
        return None

    # -- what is made so far -----------------------------------------------------------
    def _made(self, name: str) -> Any | None:
        found = self.b.types.get(name)
        if found is None and name not in BUILTINS:
            found = self.b.scalars.get(name)
        return found

    def _builtin(self, name: str) -> Any | None:
        """`Int` when a list field's `limit` has it; a scalar of a column; else looked for
        in the whole schema (`Float` of an aggregate, `ID`)."""
        b = self.b
        if name == "Int" and any(
            access.query_roots & _LIST_KINDS or access.subscription_roots & _LIST_KINDS
            for access in (b.view.table(t) for t in b.tables)
        ):
            return b.scalars["Int"]
        if name in (self._scalars() or {}):
            found = self._through_scalar(name, name)
            if found is not None:
                return found
        return self.whole().get(name)

    def ensure(self, table: Table) -> None:
        """Make the root fields of `table` the roots have (their types made, empty)."""
        rf = table.root_fields
        for root in self.b.roots:
            for kind in _NAME_KINDS:
                root.fields.get(getattr(rf, kind))

    def _order_by(self) -> Any | None:
        """The enum `order_by`, named by the order type of any table with a column."""
        for table in self.b.tables.values():
            if table.type_name("_order_by") in self.b.types and self.b.cols(table):
                return self.b.order_by
        return self.whole().get("order_by")

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
            if table is not None:
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
            base = source.type_name()
            for suffix in ("", "_bool_exp", "_order_by", "_insert_input"):
                self._fill(self.b.types.get(base + suffix))
        self._fill_own(table)
        return self._made(name)

    def _fill_own(self, table: Table) -> None:
        """Fill the types of `table` made so far, and those they make, until none is new."""
        base = table.type_name()
        prefix = base + "_"
        while True:
            todo = [
                t
                for n, t in list(self.b.types.items())
                if type(t) in _LAZY and (n == base or n.startswith(prefix))
            ]
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
        """Fill the comparison expressions a filled boolean expression names (their
        `_cast_exp`s are made then)."""
        fields: Iterable[Any] = t.fields.values()
        for field in fields:
            of = _named(field.type)
            if type(of) in _LAZY and of.name.endswith("_comparison_exp"):
                filled(of)

    # -- the rest ----------------------------------------------------------------------------
    def _followed_elsewhere(self, name: str) -> bool:
        """Whether `name` may be a type this finder does not follow (then the whole schema
        is made to look for it): `order_by` and the other fixed names, functions' and
        actions' types, PostGIS inputs."""
        b = self.b
        return name in BUILTINS or name in FIXED_NAMES or bool(b.ir.functions) or bool(b.ir.actions)


# Types made once per schema, not per table or scalar.
FIXED_NAMES = frozenset(
    {"order_by", "cursor_ordering", "st_d_within_input", "st_d_within_geography_input"}
)
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
