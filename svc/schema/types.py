"""Constructors of graphql-core schema elements for the builder, with or without checks.

graphql-core's constructors re-check every argument (types, names character by character)
and each type's `fields` property re-checks all its fields on first access; for 1,000
tables that was most of the schema build. The builder's arguments are right by
construction, and the names it takes from the IR are checked once per build
(`svc.schema.names`), so `Types` sets on genuine graphql-core objects exactly the
attributes graphql-core's constructors would set, without the checks
(`tests/test_schema_build.py` compares the two). When a name fails that check, the builder
uses `CheckedTypes`, graphql-core's own constructors, so graphql-core raises or reports
exactly what it always did.

Named types are created empty and filled once every type exists (`Types.finish`): a
relationship may point back at a type still being built, which graphql-core solves with
thunks that it resolves (and checks) while collecting the schema's types. `Types.schema`
then collects the types as `GraphQLSchema` would, and marks the schema valid unless a type
was left empty (validation's one finding that names cannot rule out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLEnumValue,
    GraphQLError,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    Undefined,
    introspection_types,
)

from svc.schema.directives import DIRECTIVES
from svc.schema.lazy import LazyDict, LazyTypeMap, filled, lazy, new_fill_lock

FieldsThunk = Callable[[], dict[str, Any]]
# Fields now, or a thunk giving them once every type exists. The builder passes fields now
# wherever graphql-core used to get them so: `CheckedTypes` then fails where it always did.
Fields = dict[str, Any] | FieldsThunk

_new = object.__new__
_WRAPPERS = (GraphQLList, GraphQLNonNull)


class Types:
    """graphql-core objects made without graphql-core's checks; see the module docstring.

    `valid` stays True while every filled type has at least one field (the one property
    of a valid schema that depends on permissions rather than names): the schema can then
    skip graphql-core's validation.
    """

    def __init__(self) -> None:
        self.valid = True
        self._pending: list[tuple[Any, FieldsThunk]] = []

    def object_type(
        self, name: str, fields: Fields, description: str | None = None
    ) -> GraphQLObjectType:
        """An object type."""
        t = _named(GraphQLObjectType, name, description)
        own = self._own(t, fields)
        t._fields = own
        t._interfaces = None
        t.is_type_of = None
        t.fields = own  # graphql-core's `fields` is a cached property: this is its value
        t.interfaces = ()
        return t  # type: ignore[no-any-return]

    def input_type(
        self, name: str, fields: Fields, description: str | None = None
    ) -> GraphQLInputObjectType:
        """An input object type."""
        t = _named(GraphQLInputObjectType, name, description)
        own = self._own(t, fields)
        t._fields = own
        t.is_one_of = False
        t.fields = own
        return t  # type: ignore[no-any-return]

    def _own(self, t: Any, fields: Fields) -> dict[str, Any]:
        """The dict that will hold the fields of `t`: `fields`, or one that `finish` fills."""
        if callable(fields):
            self._pending.append((t, fields))
            return {}
        if not fields:
            self.valid = False
        return fields

    def enum_type(
        self, name: str, values: dict[str, GraphQLEnumValue], description: str | None = None
    ) -> GraphQLEnumType:
        """An enum type."""
        t = _named(GraphQLEnumType, name, description)
        t.values = values
        if not values:
            self.valid = False
        return t  # type: ignore[no-any-return]

    def enum_value(self, value: Any, description: str | None = None) -> GraphQLEnumValue:
        """An enum value."""
        v = _new(GraphQLEnumValue)
        v.value = value
        v.description = description
        v.deprecation_reason = None
        v.extensions = {}
        v.ast_node = None
        return v

    def field(
        self,
        type_: Any,
        args: dict[str, GraphQLArgument] | None = None,
        description: str | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> GraphQLField:
        """A field; `args` and `extensions` are kept, not copied (schemas are immutable)."""
        f = _new(GraphQLField)
        f.type = type_
        f.args = args or {}
        f.resolve = None
        f.subscribe = None
        f.description = description
        f.deprecation_reason = None
        f.extensions = {} if extensions is None else extensions
        f.ast_node = None
        return f

    def argument(
        self, type_: Any, description: str | None = None, default_value: Any = Undefined
    ) -> GraphQLArgument:
        """A field argument."""
        a = _new(GraphQLArgument)
        a.type = type_
        a.default_value = default_value
        a.description = description
        a.deprecation_reason = None
        a.out_name = None
        a.extensions = {}
        a.ast_node = None
        return a

    def input_field(self, type_: Any, default_value: Any = Undefined) -> GraphQLInputField:
        """A field of an input object type."""
        f = _new(GraphQLInputField)
        f.type = type_
        f.default_value = default_value
        f.description = None
        f.deprecation_reason = None
        f.out_name = None
        f.extensions = {}
        f.ast_node = None
        return f

    def non_null(self, type_: Any) -> GraphQLNonNull[Any]:
        """`T!`."""
        w: GraphQLNonNull[Any] = _new(GraphQLNonNull)
        w.of_type = type_
        return w

    def list_of(self, type_: Any) -> GraphQLList[Any]:
        """`[T]`."""
        w: GraphQLList[Any] = _new(GraphQLList)
        w.of_type = type_
        return w

    def schema(
        self,
        query: GraphQLObjectType,
        mutation: GraphQLObjectType | None,
        subscription: GraphQLObjectType | None,
    ) -> GraphQLSchema:
        """What `GraphQLSchema(query, mutation, subscription, assume_valid=self.valid)`
        makes, its types collected in the same order by a walk that knows only the kinds
        of types the builder makes: a third faster than graphql-core's, which took a third
        of the build."""
        return _schema(
            whole_map(query, mutation, subscription), query, mutation, subscription, self.valid
        )

    def finish(self) -> None:
        """Fill every type created so far, and those their fields create, in order."""
        pending = self._pending
        i = 0
        while i < len(pending):
            t, fields = pending[i]
            i += 1
            try:
                own = fields()
            except Exception as error:
                # graphql-core's message for a thunk that fails
                cls = GraphQLError if isinstance(error, GraphQLError) else TypeError
                raise cls(f"{t.name} fields cannot be resolved. {error}") from error
            if not own:
                self.valid = False
            t.fields.update(own)
        pending.clear()


class LazyTypes(Types):
    """`Types` whose thunk-made types fill themselves on first read and whose schema's type
    map is filled on lookup (`svc.schema.lazy`), with the builder's finder; `lock` guards
    every fill and lookup of this build."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = new_fill_lock()

    def object_type(
        self, name: str, fields: Fields, description: str | None = None
    ) -> GraphQLObjectType:
        """An object type, filled on first read when `fields` is a thunk; a root's fields
        found by name (`LazyDict`) are taken as they are."""
        if isinstance(fields, LazyDict):
            t = _named(GraphQLObjectType, name, description)
            t._fields = t.fields = fields
            t._interfaces = None
            t.is_type_of = None
            t.interfaces = ()
            return t  # type: ignore[no-any-return]
        if not callable(fields):
            return super().object_type(name, fields, description)
        t = _named(GraphQLObjectType, name, description)
        t._interfaces = None
        t.is_type_of = None
        t.interfaces = ()
        lazy(GraphQLObjectType, t, fields, self.lock)
        return t  # type: ignore[no-any-return]

    def input_type(
        self, name: str, fields: Fields, description: str | None = None
    ) -> GraphQLInputObjectType:
        """An input object type, filled on first read when `fields` is a thunk."""
        if not callable(fields):
            return super().input_type(name, fields, description)
        t = _named(GraphQLInputObjectType, name, description)
        t.is_one_of = False
        lazy(GraphQLInputObjectType, t, fields, self.lock)
        return t  # type: ignore[no-any-return]

    def schema(
        self,
        query: GraphQLObjectType,
        mutation: GraphQLObjectType | None,
        subscription: GraphQLObjectType | None,
    ) -> GraphQLSchema:
        """A schema whose type map starts with the roots and the introspection types and
        finds the rest on lookup (`LazyTypeMap`); valid (the module docstring of
        `svc.schema.lazy`)."""
        roots = [r for r in (query, mutation, subscription) if r is not None]
        known = {t.name: t for t in _referenced_types(None)}
        known.update((r.name, r) for r in roots)
        type_map = LazyTypeMap(
            known, lambda: whole_map(query, mutation, subscription), lock=self.lock
        )
        return _schema(type_map, query, mutation, subscription, True)

    def finish(self) -> None:
        """Nothing: types fill themselves."""


def whole_map(*roots: GraphQLObjectType | None) -> dict[str, Any]:
    """Every type reachable from `roots`, by name, in `GraphQLSchema`'s order; TypeError
    (graphql-core's message) for two types of one name."""
    type_map: dict[str, Any] = {}
    for named in _referenced_types(*roots):
        if named.name in type_map:  # graphql-core's message
            raise TypeError(
                "Schema must contain uniquely named types"
                f" but contains multiple types named '{named.name}'."
            )
        type_map[named.name] = named
    return type_map


def _schema(
    type_map: dict[str, Any],
    query: GraphQLObjectType,
    mutation: GraphQLObjectType | None,
    subscription: GraphQLObjectType | None,
    valid: bool,
) -> GraphQLSchema:
    """A `GraphQLSchema` with these parts, without graphql-core's walk."""
    s: Any = _new(GraphQLSchema)
    s._validation_errors = [] if valid else None
    s.description = None
    s.extensions = {}
    s.ast_node = None
    s.extension_ast_nodes = ()
    s.query_type = query
    s.mutation_type = mutation
    s.subscription_type = subscription
    s.directives = DIRECTIVES  # @cached too
    s.type_map = type_map
    s._sub_type_map = {}
    s._implementations_map = {}
    return s  # type: ignore[no-any-return]


class CheckedTypes(Types):
    """graphql-core's own constructors and thunks: every check it makes, as it makes them."""

    def __init__(self) -> None:
        super().__init__()
        self.valid = False  # the schema gets graphql-core's validation too

    def object_type(
        self, name: str, fields: Fields, description: str | None = None
    ) -> GraphQLObjectType:
        """graphql-core's `GraphQLObjectType`."""
        return GraphQLObjectType(name, fields, description=description)

    def input_type(
        self, name: str, fields: Fields, description: str | None = None
    ) -> GraphQLInputObjectType:
        """graphql-core's `GraphQLInputObjectType`."""
        return GraphQLInputObjectType(name, fields, description=description)

    def enum_type(
        self, name: str, values: dict[str, GraphQLEnumValue], description: str | None = None
    ) -> GraphQLEnumType:
        """graphql-core's `GraphQLEnumType`."""
        return GraphQLEnumType(name, values, description=description)

    def enum_value(self, value: Any, description: str | None = None) -> GraphQLEnumValue:
        """graphql-core's `GraphQLEnumValue`."""
        return GraphQLEnumValue(value, description=description)

    def field(
        self,
        type_: Any,
        args: dict[str, GraphQLArgument] | None = None,
        description: str | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> GraphQLField:
        """graphql-core's `GraphQLField`."""
        return GraphQLField(type_, args, description=description, extensions=extensions)

    def argument(
        self, type_: Any, description: str | None = None, default_value: Any = Undefined
    ) -> GraphQLArgument:
        """graphql-core's `GraphQLArgument`."""
        return GraphQLArgument(type_, default_value, description)

    def input_field(self, type_: Any, default_value: Any = Undefined) -> GraphQLInputField:
        """graphql-core's `GraphQLInputField`."""
        return GraphQLInputField(type_, default_value)

    def non_null(self, type_: Any) -> GraphQLNonNull[Any]:
        """graphql-core's `GraphQLNonNull`."""
        return GraphQLNonNull(type_)

    def list_of(self, type_: Any) -> GraphQLList[Any]:
        """graphql-core's `GraphQLList`."""
        return GraphQLList(type_)

    def schema(
        self,
        query: GraphQLObjectType,
        mutation: GraphQLObjectType | None,
        subscription: GraphQLObjectType | None,
    ) -> GraphQLSchema:
        """graphql-core's `GraphQLSchema`, to be validated."""
        return GraphQLSchema(query, mutation, subscription, directives=DIRECTIVES)

    def finish(self) -> None:
        """Nothing: graphql-core resolves the thunks while collecting the schema's types."""


def _named(cls: type, name: str, description: str | None) -> Any:
    """A new, empty named type of class `cls` with the attributes all named types have."""
    t: Any = _new(cls)
    t.name = name
    t.description = description
    t.extensions = {}
    t.ast_node = None
    t.extension_ast_nodes = ()
    return t


def _unwrap(of: Any) -> Any:
    """The named type inside list and non-null wrappers."""
    while type(of) in _WRAPPERS:
        of = of.of_type
    return of


def _children(named: Any) -> Iterator[Any]:
    """The named types of `named`'s fields and their arguments, in order."""
    kind = type(filled(named))
    if kind is GraphQLObjectType:
        for field in named.fields.values():
            yield _unwrap(field.type)
            for arg in field.args.values():
                yield _unwrap(arg.type)
    elif kind is GraphQLInputObjectType:
        for input_field in named.fields.values():
            yield _unwrap(input_field.type)


def _referenced_types(*roots: GraphQLObjectType | None) -> dict[Any, None]:
    """The named types reachable from `roots`, then from the specified directives'
    arguments and from the introspection types, in the order graphql-core's
    `GraphQLSchema` collects them: depth first, each type before those its fields and
    their arguments refer to, in order. Object types here implement no interface."""
    found: dict[Any, None] = {}

    def reach(of: Any) -> None:
        # Depth first without recursion: a schema of many related tables is walked tens
        # of thousands of types deep. Each type's children are a generator that the walk
        # resumes after a child's own subtree, as the recursive walk would.
        of = _unwrap(of)
        if of is None or of in found:
            return
        found[of] = None
        stack = [_children(of)]
        while stack:
            for child in stack[-1]:
                if child not in found:
                    found[child] = None
                    stack.append(_children(child))
                    break
            else:
                stack.pop()

    for root in roots:
        reach(root)
    for directive in DIRECTIVES:
        for arg in directive.args.values():
            reach(arg.type)
    reach(introspection_types["__Schema"])
    return found
