"""IR nodes: frozen dataclasses with slots; collections are tuples or read-only dicts.

An `Ir` is replaced as a whole on every metadata change, never mutated; the new one shares
the `Table` objects that the change did not affect (`svc.ir.cache`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from svc.errors import ErrorCode
from svc.ir.permissions import (
    DeletePermission,
    InsertPermission,
    SelectPermission,
    UpdatePermission,
)
from svc.metadata.drop import ObjectRef
from svc.metadata.model import DEFAULT_SOURCE, QualifiedName, qualify
from svc.naming import field_case

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
    # An array column's element scalar (`String` for `text[]`, `Int` for `integer[][]`:
    # Postgres does not record dimensions); None for other columns.
    elem_scalar: str | None = None

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
    """A resolved relationship: `mapping` pairs (local column, remote column).

    `target_source` is the source holding `target` (the owner's own: a relationship into
    another source is not something metadata can declare yet)."""

    name: str
    kind: str  # "object" | "array"
    target: QualifiedName
    mapping: tuple[tuple[str, str], ...]
    comment: str | None = None
    unique: bool = False  # at most one remote row per local row (a key of the target)
    # Every local row has its remote row: an object relationship over a foreign key of
    # this table whose columns are all NOT NULL (the reference then types it `target!`).
    required: bool = False
    target_source: str = DEFAULT_SOURCE
    # A table's remote relationship to a source (`definition.to_source`): selected as an
    # object or array relationship (with `_aggregate`), but, as the reference's
    # `RemoteSourceField`, not in `bool_exp`, `order_by`, inserts or permission filters.
    to_source: bool = False


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
    source: str = DEFAULT_SOURCE  # the source it is tracked in (`returns` is there too)
    type_affixes: tuple[str, str] = ("", "")  # as `Table.type_affixes` (`<fn>_args`)
    root_affixes: tuple[str, str] = ("", "")  # the source's root field prefix and suffix
    naming: str = "hasura-default"  # as `Table.naming`

    def root_name(self, suffix: str = "") -> str:
        """The name of a root field of the function (`fn`, `fn_aggregate`; under the
        source's naming convention `fnAggregate`, `svc.naming`), with the source's root
        field prefix and suffix around it."""
        name = field_case(self.naming, self.gql_name + suffix) if suffix else self.gql_name
        return f"{self.root_affixes[0]}{name}{self.root_affixes[1]}"

    def type_name(self, suffix: str) -> str:
        """The name of a type generated for the function (`fn_args`)."""
        return f"{self.type_affixes[0]}{self.gql_name}{suffix}{self.type_affixes[1]}"


@dataclass(frozen=True, slots=True)
class EnumValue:
    """One value of an enum table (Hasura's `is_enum`): the primary key's text, a valid
    GraphQL name, and the comment column's text as its description."""

    name: str
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class RootFields:
    """Names of a table's root fields (defaults from Hasura's scheme, or customised)."""

    select: str
    select_by_pk: str
    select_aggregate: str
    select_stream: str  # `x_stream` (svc.schema.stream)
    insert: str
    insert_one: str
    update: str
    update_by_pk: str
    update_many: str
    delete: str
    delete_by_pk: str


#: Every kind of table root field, in `RootFields`' order (`select`, …, `delete_by_pk`).
ROOT_FIELD_KINDS: tuple[str, ...] = tuple(f.name for f in fields(RootFields))


def default_root_fields(base: str) -> RootFields:
    """The root field names of a table whose GraphQL name is `base`, none customised
    (Hasura's scheme: `base`, `base_by_pk`, `insert_base_one`, ...)."""
    return RootFields(
        select=base,
        select_by_pk=f"{base}_by_pk",
        select_aggregate=f"{base}_aggregate",
        select_stream=f"{base}_stream",
        insert=f"insert_{base}",
        insert_one=f"insert_{base}_one",
        update=f"update_{base}",
        update_by_pk=f"update_{base}_by_pk",
        update_many=f"update_{base}_many",
        delete=f"delete_{base}",
        delete_by_pk=f"delete_{base}_by_pk",
    )


@dataclass(frozen=True, slots=True)
class Table:
    """A tracked table or view, resolved against the catalog.

    `column_map`, `relationship_map` and `computed_field_map` index `columns`,
    `relationships` and `computed_fields` by name; they are built once, with the table
    (`make_table`, `Table.with_parts`), and never changed: a `dataclasses.replace` that
    changes those tuples must go through `with_parts` instead.

    `source` is the metadata source the table is tracked in; `name` is unique within it
    (`Ir.tables`).
    """

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
    source: str = DEFAULT_SOURCE
    # An enum table's values (`is_enum` and valid, `svc.ir.enums`), else None.
    enum_values: tuple[EnumValue, ...] | None = None
    # Single-column foreign keys: (local column, target table, target column); a column
    # referencing an enum table's key takes its enum type (`svc.ir.enums.enum_references`).
    foreign_keys: tuple[tuple[str, QualifiedName, str], ...] = ()
    # The source's `customization.type_names` (prefix, suffix): around every type name
    # generated for the table (`type_name`; `svc.ir.source_tables`).
    type_affixes: tuple[str, str] = ("", "")
    # The source's naming convention (`svc.naming`): its root fields and columns are
    # already named by it; the schema names the table's generated types, arguments and
    # fields by it (`svc.schema.naming`).
    naming: str = "hasura-default"
    column_map: dict[str, Column] = field(default_factory=dict, compare=False)
    relationship_map: dict[str, Relationship] = field(default_factory=dict, compare=False)
    computed_field_map: dict[str, ComputedField] = field(default_factory=dict, compare=False)

    def with_parts(self, **changes: Any) -> Table:
        """A copy with `changes` (any fields but the maps); a map is rebuilt when its tuple
        changed, else shared (maps are never changed)."""
        columns = None if "columns" in changes else self.column_map
        return make_table(columns, **{**_fields(self), **changes})

    def type_name(self, suffix: str = "") -> str:
        """The name of a type generated for this table: `<prefix><gql_name><suffix><suffix
        of the source>` (`author`, `author_bool_exp`; with the source's type name prefix
        `t_`: `t_author_bool_exp`), the reference's `mkTypename` of a source's types."""
        prefix, after = self.type_affixes
        return f"{prefix}{self.gql_name}{suffix}{after}"

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


_MAPS = frozenset({"column_map", "relationship_map", "computed_field_map"})


def _fields(table: Table) -> dict[str, Any]:
    """The fields of `table` other than its maps."""
    return {f: getattr(table, f) for f in Table.__dataclass_fields__ if f not in _MAPS}


def make_table(column_map: dict[str, Column] | None = None, **fields: Any) -> Table:
    """A `Table` of `fields` (every field but the maps), with its name maps built
    (`column_map` when given: the map of these very columns)."""
    if column_map is None:
        column_map = {c.name: c for c in fields["columns"]}
    return Table(
        **fields,
        column_map=column_map,
        relationship_map={r.name: r for r in fields.get("relationships", ())},
        computed_field_map={c.name: c for c in fields.get("computed_fields", ())},
    )


@dataclass(frozen=True, slots=True)
class Inconsistency:
    """Something in metadata that does not resolve (spec 2.11: `{definition, reason, type}`).

    `code` is the error code to raise when a metadata write introduces it.
    """

    type: str
    definition: Any
    reason: str
    code: ErrorCode = ErrorCode.INVALID_CONFIGURATION
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
            named = {"remote_relationship": "remote relationship", "event_trigger": "event trigger"}
            kind = named.get(self.type) or (
                "relationship" if self.type.endswith("_relation") else "permission"
            )
            return f'{kind} {self.table}.{self.relationship} in source "default"'
        if self.type == "function":
            return self.name.replace(" in source default", ' in source "default"')
        return f'table {self.table or self.name} in source "default"'

    def to_json(self) -> dict[str, Any]:
        """The `get_inconsistent_metadata` entry."""
        return {"definition": self.definition, "reason": self.reason, "type": self.type}

    def target(self) -> ObjectRef:
        """The metadata object this is about, for `svc.metadata.drop` (a function is named
        by its definition's `function`; whole-document issues name nothing)."""
        if self.type == "function" and isinstance(self.definition, dict):
            return ObjectRef("function", function=qualify(self.definition.get("function")))
        return ObjectRef(self.type, self.table, self.relationship)


@dataclass(frozen=True, slots=True)
class Ir:
    """Tracked tables by name, plus what did not resolve.

    `tables` and `functions` hold every served source's, keyed by `QualifiedName` in
    `default` and by `SourcedName` in the others (`svc.ir.source_tables`); each entry
    carries its `source`.

    `cache` records how the tables were built, for the next `build_ir(…, previous=this)`;
    `derived` holds what later layers compute once from this IR (the schema-name check,
    the admin schema metadata checks query against), keyed by their module's name. Neither
    is part of the IR's value: an IR is never changed once built, so what is derived from
    it stays true (`derived` is not an init field, so `dataclasses.replace` starts a copy
    with none).
    """

    tables: dict[QualifiedName, Table]
    inconsistencies: tuple[Inconsistency, ...] = ()
    functions: dict[QualifiedName, Function] = field(default_factory=dict)
    cache: IrCache | None = field(default=None, compare=False, repr=False)
    derived: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    actions: Any = None  # `svc.ir.actions.ActionsIr`, None without actions
    # Each inherited role → its role set (`svc.ir.inherited`; cycles refused before).
    inherited_roles: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Each other served source's own IR, by name (`svc.ir.source_tables`: its tables are
    # in `tables` too, under source-qualified names).
    sources: dict[str, Ir] = field(default_factory=dict, compare=False, repr=False)
    # Relationships from a table to a table of another source (`svc.ir.source_joins`:
    # `svc.metadata.remote_schemas.SourceJoin`s owned by the table's IR key).
    source_joins: tuple[Any, ...] = ()


def tables_not_shared(before: Ir, after: Ir) -> tuple[list[Table], list[Table]]:
    """`(gone, new)`: the tables with a GraphQL name of `before` that `after` does not
    hold (by identity: a build over a previous IR keeps an unchanged table's object), and
    those of `after` that `before` does not hold. What a later layer's index carried from
    one IR to the next must take out and put in."""
    gone = [t for n, t in before.tables.items() if after.tables.get(n) is not t and t.gql_name]
    new = [t for n, t in after.tables.items() if before.tables.get(n) is not t and t.gql_name]
    return gone, new
