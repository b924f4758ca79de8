"""Where a variable may be used: the reference's rule, in place of graphql-core's
`VariablesInAllowedPositionRule`.

Hasura checks a variable's usage with `isVariableUsageAllowed`
(`server/lib/schema-parsers/src/Hasura/GraphQL/Parser/Internal/TypeChecking.hs`): the
outermost nullability follows the spec (a nullable variable may fill a non-null
location only when the location or the variable has a non-null default), but the types
are then compared with every level made nullable, so list elements' nullability never
counts: a `[String]` variable may fill a `[String!]` argument (the reference's
`graphql_mutation/insert/basic/insert_into_array_col_with_array_input.yaml`), and a
`[Int!]` one a `[Int]` argument. Named types must be equal (no coercion between
variables, as the spec). The message is graphql-core's, code `validation-failed`.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    GraphQLError,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLType,
    NullValueNode,
    OperationDefinitionNode,
    ValueNode,
)
from graphql.pyutils import Undefined
from graphql.utilities import type_from_ast
from graphql.validation import VariablesInAllowedPositionRule


class ReferenceVariablePositionRule(VariablesInAllowedPositionRule):
    """graphql-core's rule with the reference's test (`usage_allowed`); the variable
    definitions are collected by the parent class."""

    def leave_operation_definition(self, operation: OperationDefinitionNode, *_args: Any) -> None:
        """Report each usage of a variable the reference would refuse."""
        schema = self.context.schema
        for usage in self.context.get_recursive_variable_usages(operation):
            node, location = usage.node, usage.type
            name = node.name.value
            definition = self.var_def_map.get(name)
            if definition is None or location is None:
                continue
            declared = type_from_ast(schema, definition.type)
            if declared is None:
                continue
            has_default = usage.default_value is not Undefined
            if not usage_allowed(declared, definition.default_value, location, has_default):
                self.report_error(
                    GraphQLError(
                        f"Variable '${name}' of type '{declared}' used"
                        f" in position expecting type '{location}'.",
                        [definition, node],
                    )
                )


def usage_allowed(
    declared: GraphQLType,
    declared_default: ValueNode | None,
    location: GraphQLType,
    location_has_default: bool,
) -> bool:
    """The reference's `isVariableUsageAllowed`: may a variable of type `declared` (with
    default `declared_default`) fill a location of type `location`?"""
    if not isinstance(location, GraphQLNonNull) or isinstance(declared, GraphQLNonNull):
        return _compatible(location, declared)
    non_null_default = declared_default is not None and not isinstance(
        declared_default, NullValueNode
    )
    return (location_has_default or non_null_default) and _compatible(location, declared)


def _compatible(location: GraphQLType, declared: GraphQLType) -> bool:
    """Equal shapes and named types, every level's nullability ignored (the reference's
    `areTypesCompatible`, which makes both sides nullable at each level)."""
    if isinstance(location, GraphQLNonNull):
        location = location.of_type
    if isinstance(declared, GraphQLNonNull):
        declared = declared.of_type
    if isinstance(location, GraphQLList) and isinstance(declared, GraphQLList):
        return _compatible(location.of_type, declared.of_type)
    if isinstance(location, GraphQLNamedType) and isinstance(declared, GraphQLNamedType):
        return location.name == declared.name
    return False
