"""Reading GraphQL argument values for planning, keeping variables symbolic.

A leaf value that comes from a variable becomes a `VarRef`, so the plan can be cached and
reused with other values. Variables that shape the plan (a whole `where` object, `@skip`,
`_is_null`, a null compared with `_eq`) are read concretely and recorded in `structural`;
the plan cache keys on their values (design brief 3).
"""

from __future__ import annotations

from typing import Any

from graphql import (
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    ListValueNode,
    NullValueNode,
    ObjectValueNode,
    Undefined,
    ValueNode,
    VariableNode,
    get_nullable_type,
    is_leaf_type,
    value_from_ast,
)

from svc.errors import validation_failed
from svc.plan.nodes import VarRef


def _variables_in(node: ValueNode) -> list[str]:
    """The names of the variables inside a literal (an object's or list's leaves)."""
    if isinstance(node, VariableNode):
        return [node.name.value]
    if isinstance(node, ObjectValueNode):
        return [n for f in node.fields for n in _variables_in(f.value)]
    if isinstance(node, ListValueNode):
        return [n for v in node.values for n in _variables_in(v)]
    return []


class OneItemList(list[Any]):
    """The list GraphQL input coercion makes of a single value given for a list type.

    For an array column a string so given is Postgres' array literal (`"{a,b}"`), as the
    reference's `columnParser` hands the string to `parsePGValue`, whose fallback
    (`PGValUnknown`) lets Postgres read it (`svc.execute.params.to_text`; the conformance
    case `graphql_mutation/update/basic/author_by_pk.yaml`)."""


class ValueReader:
    """Turns argument AST nodes into Python values with `VarRef` leaves."""

    def __init__(self, variables: dict[str, Any]) -> None:
        self.variables = variables
        self.structural: set[str] = set()
        self.leaf_vars: set[str] = set()

    def read(self, node: ValueNode | None, type_: Any) -> Any:
        """The value of `node` under input type `type_` (`None` for an absent/null value)."""
        if node is None or isinstance(node, NullValueNode):
            return None
        if isinstance(type_, GraphQLNonNull):
            type_ = type_.of_type
        if isinstance(node, VariableNode):
            name = node.name.value
            if is_leaf_type(type_):
                self.leaf_vars.add(name)
                return VarRef(name) if self.variables.get(name) is not None else None
            self.structural.add(name)
            return self.variables.get(name)
        if isinstance(type_, GraphQLList):
            inner = type_.of_type
            if isinstance(node, ListValueNode):
                items = [self.read(v, inner) for v in node.values]
                if is_leaf_type(get_nullable_type(inner)):
                    # a list of leaves is one parameter (`_in`, an array column's value)
                    items = [self.concrete(v) for v in items]
                return items
            return OneItemList([self.read(node, inner)])
        if isinstance(type_, GraphQLInputObjectType):
            if not isinstance(node, ObjectValueNode):
                raise validation_failed(f"expected an object for type {type_.name}")
            out: dict[str, Any] = {}
            for f in node.fields:
                field = type_.fields.get(f.name.value)
                if field is not None:  # keyed by the generated name (`svc.schema.naming`)
                    out[field.out_name or f.name.value] = self.read(f.value, field.type)
            return out
        return self._literal(node, type_)

    def _literal(self, node: ValueNode, type_: Any) -> Any:
        """A leaf literal: a jsonb object or list may hold variables (`{k: $v}`); their
        values are read concretely (recorded structural: the plan holds the whole value),
        an absent one as null. Raises `validation-failed` for a value the type refuses."""
        names = _variables_in(node)
        self.structural.update(names)
        variables = {**dict.fromkeys(names), **self.variables} if names else None
        value = value_from_ast(node, type_, variables)
        if value is Undefined:
            raise validation_failed(f"expected a value of type {type_.name}")
        return value

    def concrete(self, value: Any) -> Any:
        """The actual value of `value`, resolving a `VarRef` (and recording it structural)."""
        if isinstance(value, VarRef):
            self.structural.add(value.name)
            return self.variables.get(value.name)
        return value
