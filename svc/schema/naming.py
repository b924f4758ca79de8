"""A role's schema under the `graphql-default` naming convention (`svc.naming`).

The builder makes every type, argument, field and enum value with svc's generated
(`hasura-default`) names; `apply_naming` then gives the root fields of each
`graphql-default` source's tables and functions (`Table.naming`, `Function.naming`)
copies of their types, named by the convention (the reference's
`Hasura.RQL.Types.SourceCustomization`, `mkCustomizedTypename`, `applyFieldNameCaseCust`,
`applyEnumValueCase`):

- every type reached from them is PascalCased (`type_case`: `author_local_bool_exp` ->
  `AuthorLocalBoolExp`, `String_comparison_exp` -> `StringComparisonExp`, `order_by` ->
  `OrderBy`); scalars keep their names. A type other sources also reach is copied, not
  renamed, so each source's fields keep their own names (the reference builds each
  source's parsers with its own `NamingCase`); a type the convention leaves as it is
  (its name, and leaf fields of unchanged names: Relay's `PageInfo`) is shared;
- every generated argument, input field and output field name is camelCased
  (`field_case`: `distinct_on` -> `distinctOn`, `order_by` -> `orderBy`, `pk_columns`,
  `on_conflict`, `affected_rows`, `stddev_pop`, `<rel>_aggregate`, `_is_null` ->
  `_isNull`, `_delete_key`, `batch_size`, `initial_value`); names that are the user's
  stay as the IR has them: columns (already converted by the IR unless custom,
  `svc.ir.source_tables`), relationships (and Relay's `<rel>_connection`), computed
  fields, function arguments, and the root fields themselves (converted, then prefixed
  and suffixed, by the IR);
- the values of `order_by` and of enum tables' enums are upper-cased (`enum_case`:
  `ASC_NULLS_FIRST`, `FRIDAY`); the column enums (`select_column`, `update_column`) and
  constraint enums keep their values (the column field names and constraint names).

Planning reads the converted schema unchanged: fields by their `FieldInfo`, arguments and
input fields by `out_name` (each renamed one carries the generated name there, which is
also what variable coercion keys values by), enum values by their `value` (the generated
name or the enum table's text). Types and fields not reached from a `graphql-default`
root field are the builder's own objects, and so are the fields answered elsewhere
(remote relationships: their types are the remote schema's).
An action's output types keep their names; their relationships to a `graphql-default`
table are converted as the table's fields are (copies of the action's types hold them).
A feature that adds generated fields, arguments or types to the builder gets them
converted here without a change, as long as its planner reads them as above.
"""

from __future__ import annotations

import re
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLEnumValue,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    get_named_type,
)

from svc.errors import ErrorCode, SvcError
from svc.ir.enums import enum_type_name
from svc.ir.model import Ir
from svc.naming import GRAPHQL_DEFAULT, enum_case, field_case, type_case
from svc.schema.info import FieldInfo, FieldKind

# Fields named by the user (or by the IR's conversion): never renamed here.
_OWN_NAMES = frozenset(
    {
        FieldKind.COLUMN,
        FieldKind.COMPUTED_SCALAR,
        FieldKind.COMPUTED_SET,
        FieldKind.OBJECT_REL,
        FieldKind.ARRAY_REL,
        FieldKind.AGG_COLUMN,
        FieldKind.ARRAY_CONNECTION,  # `<rel>_connection`, as the reference's `relationshipField`
    }
)
# Fields answered elsewhere (a remote schema's, an action's types): kept as they are.
_FOREIGN = frozenset(
    {
        FieldKind.REMOTE_RELATIONSHIP,
        FieldKind.REMOTE_SCHEMA,
        FieldKind.ACTION,
        FieldKind.ACTION_RESULT,
        FieldKind.ACTION_REL,
        FieldKind.ACTION_AGG,
    }
)
# An action's relationships to tables: converted when the table's source is
# `graphql-default` (their types and arguments; the action's own types keep their names).
_ACTION_RELS = frozenset({FieldKind.ACTION_REL, FieldKind.ACTION_AGG})
# Generated enums whose values are upper-cased (besides enum tables' enums).
_UPPER_ENUMS = frozenset({"order_by", "cursor_ordering"})
_G = GRAPHQL_DEFAULT


def _owner_naming(field: GraphQLField) -> str | None:
    """The naming convention of the table or function a field is generated for."""
    info = field.extensions.get("svc") if field.extensions else None
    if not isinstance(info, FieldInfo):
        return None
    owner = info.function if info.function is not None else info.table
    return getattr(owner, "naming", None)


def apply_naming(schema: GraphQLSchema, ir: Ir) -> GraphQLSchema:
    """`schema` with the root fields of `graphql-default` tables and functions typed and
    named by the convention (the module docstring); `schema` itself when `ir` has none.
    Raises `SvcError` (500 `unexpected`, the reference's "Found conflicting definitions
    for GraphQL type") when two types' converted names are one."""
    tables = [t for t in ir.tables.values() if t.naming == _G]
    if not tables and not any(f.naming == _G for f in ir.functions.values()):
        return schema
    keep: set[str] = set()
    for table in tables:
        keep.update(c.gql_name for c in table.columns)
        keep.update(r.name for r in table.relationships)
        for cf in table.computed_fields:
            keep.add(cf.name)
            keep.update(a.gql_name for a in cf.args)
    for fn in ir.functions.values():
        if fn.naming == _G:
            keep.update(a.gql_name for a in fn.args)
    enums = {enum_type_name(t) for t in tables if t.enum_values is not None}
    renamer = _Renamer(frozenset(keep), frozenset(enums | _UPPER_ENUMS))
    roots = [renamer.root(root) for root in (schema.query_type, schema.mutation_type)]
    subscription = renamer.root(schema.subscription_type)
    if renamer.untouched:
        return schema
    try:
        # the builder's types not replaced by a copy (some reachable only so: the
        # implementations of Relay's `Node`)
        kept = [t for t in schema.type_map.values() if renamer.done.get(id(t), t) is t]
        return GraphQLSchema(
            roots[0],
            roots[1],
            subscription,
            types=kept,
            directives=schema.directives,
            extensions=schema.extensions,
        )
    except TypeError as exc:  # two types whose converted names are one (`authorLocal`, …)
        found = re.search(r"named '([^']*)'", str(exc))
        name = found.group(1) if found else str(exc)
        raise SvcError(
            ErrorCode.UNEXPECTED,
            f"Found conflicting definitions for GraphQL type '{name}'. "
            "Types must not be defined more than once across all sources.",
            status=500,
            path="$.args",
        ) from None


class _Renamer:
    """Copies of the builder's types under the convention, one per original type."""

    def __init__(self, keep: frozenset[str], upper: frozenset[str]) -> None:
        self.keep = keep  # names used verbatim
        self.upper = upper  # enums whose values are upper-cased
        self.done: dict[int, Any] = {}
        self.reaching: dict[int, bool] = {}  # `_reaches`, by type
        self.untouched = True

    def root(self, root: GraphQLObjectType | None) -> GraphQLObjectType | None:
        """`root` with its `graphql-default` fields' arguments and types converted (their
        own names are the IR's); `root` itself when it has none."""
        if root is None:
            return None
        fields = dict(root.fields)
        changed = False
        for name, field in root.fields.items():
            if _owner_naming(field) == _G:
                fields[name] = self.field(field)
                changed = True
            elif self._reaches(field.type):  # an action's type with a relationship
                fields[name] = GraphQLField(
                    self._kept(field.type),
                    field.args,
                    field.resolve,
                    field.subscribe,
                    field.description,
                    field.deprecation_reason,
                    field.extensions,
                )
                changed = True
        if not changed:
            return root
        self.untouched = False
        new = GraphQLObjectType(
            root.name,
            fields,
            description=root.description,
            extensions=root.extensions,
        )
        self.done[id(root)] = new  # replaced (`apply_naming` keeps the others)
        return new

    def _reaches(self, of: Any) -> bool:
        """Whether object type `of` (an action's output type) has, or leads through its
        fields to, a relationship to a `graphql-default` table."""
        named = get_named_type(of)
        if not isinstance(named, GraphQLObjectType):
            return False
        found = self.reaching.get(id(named))
        if found is None:
            self.reaching[id(named)] = False  # a cycle adds nothing
            found = False
            for field in named.fields.values():
                info = field.extensions.get("svc") if field.extensions else None
                if isinstance(info, FieldInfo) and info.kind in _ACTION_RELS:
                    found = getattr(info.table, "naming", None) == _G
                else:
                    found = self._reaches(field.type)
                if found:
                    break
            self.reaching[id(named)] = found
        return found

    def _kept(self, of: Any) -> Any:
        """`of` with its own names (an action's types) and its relationships to
        `graphql-default` tables converted (`field`)."""
        if isinstance(of, GraphQLNonNull):
            return GraphQLNonNull(self._kept(of.of_type))
        if isinstance(of, GraphQLList):
            return GraphQLList(self._kept(of.of_type))
        if not self._reaches(of):
            return of
        found = self.done.get(id(of))
        if found is not None:
            return found

        def fields() -> dict[str, GraphQLField]:
            out: dict[str, GraphQLField] = {}
            for name, field in of.fields.items():
                info = field.extensions.get("svc") if field.extensions else None
                if isinstance(info, FieldInfo) and info.kind in _ACTION_RELS:
                    naming = getattr(info.table, "naming", None)
                    out[name] = self.field(field) if naming == _G else field
                elif self._reaches(field.type):
                    out[name] = GraphQLField(
                        self._kept(field.type),
                        field.args,
                        field.resolve,
                        field.subscribe,
                        field.description,
                        field.deprecation_reason,
                        field.extensions,
                    )
                else:
                    out[name] = field
            return out

        found = GraphQLObjectType(
            of.name,
            fields,
            interfaces=of.interfaces,
            description=of.description,
            extensions=of.extensions,
        )
        self.done[id(of)] = found
        return found

    def name(self, name: str) -> str:
        """A generated field, argument or input field name under the convention."""
        return name if name in self.keep else field_case(_G, name)

    def type(self, of: Any) -> Any:
        """The converted copy of type `of` (wrappers rewrapped)."""
        if isinstance(of, GraphQLNonNull):
            return GraphQLNonNull(self.type(of.of_type))
        if isinstance(of, GraphQLList):
            return GraphQLList(self.type(of.of_type))
        found = self.done.get(id(of))
        if found is not None:
            return found
        if isinstance(of, GraphQLObjectType | GraphQLInputObjectType) and self._unchanged(of):
            found = of  # shared as it is (Relay's `PageInfo`): no second type of its name
        elif isinstance(of, GraphQLObjectType):
            found = self._object(of)
        elif isinstance(of, GraphQLInputObjectType):
            found = self._input(of)
        elif isinstance(of, GraphQLEnumType):
            found = self._enum(of)
        else:
            found = of  # scalars (and anything else) keep their names
        self.done[id(of)] = found
        return found

    def _unchanged(self, of: GraphQLObjectType | GraphQLInputObjectType) -> bool:
        """Whether the convention changes nothing of `of`: its name, its fields' and
        their arguments' names, and fields of leaf types only (a shallow check: a type
        with object fields is copied)."""
        if type_case(_G, of.name) != of.name:
            return False
        for name, field in of.fields.items():
            named = get_named_type(field.type)
            if self.name(name) != name and not name.startswith("__"):
                return False
            if not isinstance(named, GraphQLScalarType) or any(
                self.name(a) != a for a in getattr(field, "args", None) or {}
            ):
                return False
        return True

    def field(self, field: GraphQLField) -> GraphQLField:
        """`field` with converted arguments and type (its name is the caller's)."""
        return GraphQLField(
            self.type(field.type),
            self.args(field.args),
            field.resolve,
            field.subscribe,
            field.description,
            field.deprecation_reason,
            field.extensions,
        )

    def args(self, args: dict[str, GraphQLArgument]) -> dict[str, GraphQLArgument]:
        """Arguments renamed, each renamed one keeping its generated name as `out_name`."""
        out: dict[str, GraphQLArgument] = {}
        for name, arg in args.items():
            new = self.name(name)
            out[new] = GraphQLArgument(
                self.type(arg.type),
                arg.default_value,
                arg.description,
                arg.deprecation_reason,
                name if new != name else arg.out_name,
                arg.extensions,
            )
        return out

    def _object(self, of: GraphQLObjectType) -> GraphQLObjectType:
        def fields() -> dict[str, GraphQLField]:
            out: dict[str, GraphQLField] = {}
            for name, field in of.fields.items():
                naming = _owner_naming(field)
                if naming is not None and naming != _G:
                    out[name] = field  # another source's (a relationship into it)
                    continue
                info = field.extensions.get("svc") if field.extensions else None
                if isinstance(info, FieldInfo) and info.kind in _FOREIGN:
                    out[name] = field
                    continue
                own = isinstance(info, FieldInfo) and info.kind in _OWN_NAMES
                out[name if own or name.startswith("__") else self.name(name)] = self.field(field)
            return out

        return GraphQLObjectType(
            type_case(_G, of.name),
            fields,
            interfaces=of.interfaces,
            description=of.description,
            extensions=of.extensions,
        )

    def _input(self, of: GraphQLInputObjectType) -> GraphQLInputObjectType:
        def fields() -> dict[str, GraphQLInputField]:
            out: dict[str, GraphQLInputField] = {}
            for name, field in of.fields.items():
                new = self.name(name)
                out[new] = GraphQLInputField(
                    self.type(field.type),
                    field.default_value,
                    field.description,
                    field.deprecation_reason,
                    name if new != name else field.out_name,
                    field.extensions,
                )
            return out

        return GraphQLInputObjectType(
            type_case(_G, of.name),
            fields,
            description=of.description,
            out_type=of.out_type,
            extensions=of.extensions,
        )

    def _enum(self, of: GraphQLEnumType) -> GraphQLEnumType:
        upper = of.name in self.upper
        name = type_case(_G, of.name)
        if name == of.name and not upper:
            return of
        values = {
            (enum_case(_G, key) if upper else key): GraphQLEnumValue(
                key if value.value is None else value.value,
                value.description,
                value.deprecation_reason,
                value.extensions,
            )
            for key, value in of.values.items()
        }
        return GraphQLEnumType(name, values, description=of.description, extensions=of.extensions)
