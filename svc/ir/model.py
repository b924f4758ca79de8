"""IR nodes: frozen dataclasses with slots; collections are tuples or read-only dicts.

An `Ir` is replaced as a whole on every metadata change, never mutated; the new one shares
the `Table` objects that the change did not affect (`svc.ir.cache`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from svc.ir.permissions import (
    DeletePermission,
    InsertPermission,
    SelectPermission,
    UpdatePermission,
)
from svc.metadata.model import QualifiedName

if TYPE_CHECKING:
    from svc.ir.cache import IrCache

# Postgres types whose JSON value is a string when numbers are stringified
# (`--stringify-numeric-types`, Hasura's behaviour: bigint, numeric, double precision).
STRINGIFIED_TYPES = frozenset({"int8", "numeric", "float8"})

# Postgres type name -> GraphQL scalar name (Hasura's names); anything else keeps its own.
SCALAR_NAMES = {
    "int4": "Int",
    "int2": "smallint",
    "int8": "bigint",
    "float4": "Float",
    "float8": "float8",
    "numeric": "numeric",
    "bool": "Boolean",
    "text": "String",
    "varchar": "String",
}
NUMERIC_TYPES = frozenset({"int2", "int4", "int8", "float4", "float8", "numeric", "money"})
TEXT_SCALARS = frozenset({"String", "citext", "bpchar", "name"})


@dataclass(frozen=True, slots=True)
class Column:
    """A column as GraphQL sees it.

    `pg_type` is Postgres's spelling (`integer`, `character varying`, `public.citext`), usable
    as a cast target; `type_name` the internal name (`int4`); `scalar` the GraphQL scalar.
    """

    name: str
    gql_name: str
    pg_type: str
    type_name: str
    scalar: str
    nullable: bool
    has_default: bool
    is_array: bool
    comment: str | None = None

    @property
    def is_numeric(self) -> bool:
        """True for types `sum`/`avg`/… apply to."""
        return self.type_name in NUMERIC_TYPES

    @property
    def stringifiable(self) -> bool:
        """True when `--stringify-numeric-types` turns this column's values into strings."""
        return self.type_name in STRINGIFIED_TYPES


@dataclass(frozen=True, slots=True)
class Relationship:
    """A resolved relationship: `mapping` pairs (local column, remote column)."""

    name: str
    kind: str  # "object" | "array"
    target: QualifiedName
    mapping: tuple[tuple[str, str], ...]
    comment: str | None = None
    unique: bool = False  # at most one remote row per local row (a key of the target)


@dataclass(frozen=True, slots=True)
class FunctionArg:
    """An input argument of a SQL function as GraphQL sees it (`arg_<n>` when unnamed)."""

    name: str  # Postgres name ("" when unnamed)
    gql_name: str
    pg_type: str
    scalar: str
    has_default: bool


@dataclass(frozen=True, slots=True)
class ComputedField:
    """A computed field (Hasura): a function of the row, scalar or `SETOF <tracked table>`.

    `arg_order` lists every Postgres argument in declaration order as `("row", "")`,
    `("session", "")` or `("input", gql_name)`, so a call can be rendered positionally.
    """

    name: str
    function: QualifiedName
    args: tuple[FunctionArg, ...]
    arg_order: tuple[tuple[str, str], ...]
    scalar: str | None = None  # scalar computed fields: the GraphQL scalar
    pg_type: str | None = None
    type_name: str | None = None
    returns_table: QualifiedName | None = None  # SETOF table computed fields
    comment: str | None = None

    @property
    def is_scalar(self) -> bool:
        """True for a scalar computed field; False for a `SETOF` table one."""
        return self.returns_table is None

    @property
    def stringifiable(self) -> bool:
        """True when `--stringify-numeric-types` turns the value into a string."""
        return self.type_name in STRINGIFIED_TYPES


@dataclass(frozen=True, slots=True)
class Function:
    """A tracked function: rows of `returns` (a tracked table), as a query or mutation field.

    `arg_order` is as in `ComputedField` (no `row` entries). `roles` are the roles given an
    explicit function permission (`pg_create_function_permission`).
    """

    name: QualifiedName
    gql_name: str
    returns: QualifiedName
    returns_set: bool
    args: tuple[FunctionArg, ...]
    arg_order: tuple[tuple[str, str], ...]
    exposed_as: str  # "query" | "mutation"
    roles: frozenset[str] = frozenset()
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class RootFields:
    """Names of a table's root fields (defaults from Hasura's scheme, or customised)."""

    select: str
    select_by_pk: str
    select_aggregate: str
    insert: str
    insert_one: str
    update: str
    update_by_pk: str
    update_many: str
    delete: str
    delete_by_pk: str


@dataclass(frozen=True, slots=True)
class Table:
    """A tracked table or view, resolved against the catalog."""

    name: QualifiedName
    gql_name: str
    kind: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    unique_constraints: tuple[tuple[str, tuple[str, ...]], ...]
    relationships: tuple[Relationship, ...]
    root_fields: RootFields
    comment: str | None = None
    select_permissions: dict[str, SelectPermission] = field(default_factory=dict)
    # pg_relation_is_updatable bits: 8 insert, 4 update, 16 delete (all for tables).
    updatable: int = 0
    computed_fields: tuple[ComputedField, ...] = ()
    insert_permissions: dict[str, InsertPermission] = field(default_factory=dict)
    update_permissions: dict[str, UpdatePermission] = field(default_factory=dict)
    delete_permissions: dict[str, DeletePermission] = field(default_factory=dict)
    column_map: dict[str, Column] = field(default_factory=dict, compare=False)
    relationship_map: dict[str, Relationship] = field(default_factory=dict, compare=False)
    computed_field_map: dict[str, ComputedField] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        self.column_map.clear()
        self.relationship_map.clear()
        self.computed_field_map.clear()
        self.column_map.update({c.name: c for c in self.columns})
        self.relationship_map.update({r.name: r for r in self.relationships})
        self.computed_field_map.update({c.name: c for c in self.computed_fields})

    def column(self, name: str) -> Column | None:
        """The column called `name` (Postgres name)."""
        return self.column_map.get(name)

    @property
    def insertable(self) -> bool:
        """Rows can be inserted (a table, or an auto-updatable view)."""
        return bool(self.updatable & 8)

    @property
    def updatable_rows(self) -> bool:
        """Rows can be updated."""
        return bool(self.updatable & 4)

    @property
    def deletable(self) -> bool:
        """Rows can be deleted."""
        return bool(self.updatable & 16)


@dataclass(frozen=True, slots=True)
class Inconsistency:
    """Something in metadata that does not resolve (spec 2.11: `{definition, reason, type}`).

    `code` is the error code to raise when a metadata write introduces it.
    """

    type: str
    definition: Any
    reason: str
    code: str = "invalid-configuration"
    name: str = ""
    table: QualifiedName | None = None
    relationship: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        """Identity across rebuilds: (type, name)."""
        return (self.type, self.name)

    def describe(self) -> str:
        """How a dependency error names it: `relationship article.author in source …`."""
        if self.type == "computed_field" and self.table is not None:
            return f'computed field {self.table}.{self.relationship} in source "default"'
        if self.relationship is not None and self.table is not None:
            kind = "relationship" if self.type.endswith("_relation") else "permission"
            return f'{kind} {self.table}.{self.relationship} in source "default"'
        if self.type == "function":
            return self.name.replace(" in source default", ' in source "default"')
        return f'table {self.table or self.name} in source "default"'

    def to_json(self) -> dict[str, Any]:
        """The `get_inconsistent_metadata` entry."""
        return {"definition": self.definition, "reason": self.reason, "type": self.type}


@dataclass(frozen=True, slots=True)
class Ir:
    """Tracked tables by name, plus what did not resolve.

    `cache` records how the tables were built, for the next `build_ir(…, previous=this)`;
    it is not part of the IR's value.
    """

    tables: dict[QualifiedName, Table]
    inconsistencies: tuple[Inconsistency, ...] = ()
    functions: dict[QualifiedName, Function] = field(default_factory=dict)
    cache: IrCache | None = field(default=None, compare=False, repr=False)
