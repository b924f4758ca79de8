"""A handler's answer checked against the action's output type, then cut to the
selection (reference behaviour: Hasura `Execute/Action.hs` `validateResponse`, the
messages of reference-notes-wave2 §4 "Response handling").

`check(type, value)` raises `BadOutput(message)` for the first mismatch: `null` for a
non-null type ("got null for the action webhook response"), a list where none is expected
("got array … expecting T") and the reverse ("expecting array …"), a scalar where an
object is expected ("got scalar String … expecting T"), a built-in scalar of the wrong
JSON kind, a missing non-null field ('field "x" expected in webhook response, but not
found'), a null non-null field ('expecting not null value for field "x"'). Extra fields
are ignored. Custom, `ID` and Postgres scalars take any JSON value.

`Projector.value(type, value, nodes)` then builds the answer with the request's aliases
and `__typename`s; a relationship field of a custom object (`extensions["action_rel"]`)
is left as a `Pending` hole for `svc.api.actions.relations` to fill from one SQL
statement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLEnumType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
)
from graphql.execution.collect_fields import collect_sub_fields

WEBHOOK = "for the action webhook response"
# What JSON kind each built-in scalar accepts (bool is not a number here).
_SCALAR_KINDS: dict[str, tuple[type, ...]] = {
    "Int": (int,),
    "Float": (int, float),
    "String": (str,),
    "Boolean": (bool,),
}


class BadOutput(Exception):
    """The handler's answer does not fit the output type; `message` is the reference's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _kind_name(value: Any) -> str:
    """How the reference names a JSON value's kind in its messages."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "scalar String"
    if isinstance(value, bool):
        return "scalar Boolean"
    return "scalar Number"


def check(type_: Any, value: Any) -> None:
    """Raise `BadOutput` when `value` does not fit `type_` (a graphql-core output type)."""
    if isinstance(type_, GraphQLNonNull):
        if value is None:
            raise BadOutput(f"got null {WEBHOOK}")
        check(type_.of_type, value)
        return
    if value is None:
        return
    if isinstance(type_, GraphQLList):
        if not isinstance(value, list):
            raise BadOutput(f"expecting array {WEBHOOK}")
        for item in value:
            check(type_.of_type, item)
        return
    if isinstance(value, list):
        raise BadOutput(f"got array {WEBHOOK}, expecting {type_.name}")
    if isinstance(type_, GraphQLObjectType):
        if not isinstance(value, dict):
            raise BadOutput(f"got {_kind_name(value)} {WEBHOOK}, expecting {type_.name}")
        _check_object(type_, value)
        return
    if isinstance(type_, GraphQLEnumType):
        if not isinstance(value, str) or value not in type_.values:
            raise BadOutput(f"got {_kind_name(value)} {WEBHOOK}, expecting {type_.name}")
        return
    kinds = _SCALAR_KINDS.get(type_.name)
    if kinds is None:
        return  # ID, custom and Postgres scalars: any JSON
    fits = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if not fits:
        raise BadOutput(f"got {_kind_name(value)} {WEBHOOK}, expecting {type_.name}")


def _check_object(type_: GraphQLObjectType, value: dict[str, Any]) -> None:
    for name, field in type_.fields.items():
        if "action_rel" in field.extensions:
            continue  # a relationship, answered from the database
        non_null = isinstance(field.type, GraphQLNonNull)
        if name not in value:
            if non_null:
                raise BadOutput(f'field "{name}" expected in webhook response, but not found')
            continue
        if value[name] is None and non_null:
            raise BadOutput(f'expecting not null value for field "{name}"')
        check(field.type, value[name])


@dataclass(slots=True)
class Pending:
    """A relationship field to fill: `holder[alias]` gets the rows of `field` (its
    schema field) for the object `parent` (the handler's object), selected by `nodes`."""

    holder: dict[str, Any]
    alias: str
    field: Any
    nodes: list[FieldNode]
    parent: dict[str, Any]


class Projector:
    """Cuts checked values to a selection; collects relationship holes in `pending`."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: dict[str, Any],
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.pending: list[Pending] = []

    def value(self, type_: Any, value: Any, nodes: list[FieldNode]) -> Any:
        """`value` (checked against `type_`) as the selection `nodes` asks for it."""
        if value is None:
            return None
        if isinstance(type_, GraphQLNonNull):
            return self.value(type_.of_type, value, nodes)
        if isinstance(type_, GraphQLList):
            return [self.value(type_.of_type, item, nodes) for item in value]
        if isinstance(type_, GraphQLObjectType):
            return self.object(type_, value, nodes)
        return value

    def object(self, type_: GraphQLObjectType, value: Any, nodes: list[FieldNode]) -> Any:
        """One object of a custom type: its selected fields by alias."""
        out: dict[str, Any] = {}
        fields = collect_sub_fields(self.schema, self.fragments, self.variables, type_, nodes)
        for alias, sub in fields.items():
            name = sub[0].name.value
            if name == "__typename":
                out[alias] = type_.name
                continue
            field = type_.fields[name]
            if "action_rel" in field.extensions:
                out[alias] = None
                self.pending.append(Pending(out, alias, field, sub, value))
                continue
            out[alias] = self.value(field.type, value.get(name), sub)
        return out
