"""A source's root field namespace in a role's schema (`customization.root_fields.namespace`;
the reference's `customizeNamespace`, `Hasura.GraphQL.Namespace`): the source's root
fields move from each root type into one object type, `<namespace>_query`,
`<namespace>_mutation_frontend` or `<namespace>_subscription` (the source's type name
prefix and suffix around it), reached by one root field `<namespace>` (no root field
prefix or suffix on it), which the planner flattens (`svc.plan.namespaces`). Under the
source's `graphql-default` naming convention the type name is PascalCased
(`NsQuery`, `svc.naming`), as the reference's `mkTypename` does to every source type.
"""

from __future__ import annotations

from collections.abc import Mapping

from graphql import GraphQLField, GraphQLNonNull, GraphQLObjectType, GraphQLSchema

from svc.naming import HASURA_DEFAULT, type_case
from svc.schema.info import FieldInfo

NAMESPACE_EXTENSION = "svc_namespace"  # on the namespace field: the source's name
_SUFFIXES = {"query": "_query", "mutation": "_mutation_frontend", "subscription": "_subscription"}


def namespace_type_name(namespace: str, suffix: str, type_affixes: tuple[str, str]) -> str:
    """`<type prefix><namespace><suffix><type suffix>`."""
    return f"{type_affixes[0]}{namespace}{suffix}{type_affixes[1]}"


def _source_of(field: GraphQLField) -> str | None:
    info = field.extensions.get("svc")
    if not isinstance(info, FieldInfo):
        return None
    owner = info.function if info.function is not None else info.table
    return getattr(owner, "source", None)


def _naming_of(field: GraphQLField) -> str:
    """The naming convention of the source a root field belongs to (`svc.naming`)."""
    info = field.extensions.get("svc")
    owner = info.function or info.table if isinstance(info, FieldInfo) else None
    return getattr(owner, "naming", HASURA_DEFAULT)


def apply_namespaces(
    schema: GraphQLSchema, spaces: Mapping[str, tuple[str, tuple[str, str]]]
) -> GraphQLSchema:
    """`schema` with the root fields of each source of `spaces` (source → (namespace,
    type name affixes)) inside its namespace field; `schema` itself when none applies.
    A namespace with no field for the role (no permission) is left out."""
    if not spaces:
        return schema
    added: list[GraphQLObjectType] = []
    for kind, root in (
        ("query", schema.query_type),
        ("mutation", schema.mutation_type),
        ("subscription", schema.subscription_type),
    ):
        if root is None:
            continue
        for source, (namespace, affixes) in spaces.items():
            moved = {n: f for n, f in root.fields.items() if _source_of(f) == source}
            if not moved:
                continue
            for name in moved:
                del root.fields[name]
            name = namespace_type_name(namespace, _SUFFIXES[kind], affixes)
            name = type_case(_naming_of(next(iter(moved.values()))), name)  # `svc.naming`
            obj = GraphQLObjectType(name, moved)
            added.append(obj)
            root.fields[namespace] = GraphQLField(
                GraphQLNonNull(obj), extensions={NAMESPACE_EXTENSION: source}
            )
    if not added:
        return schema
    return GraphQLSchema(
        schema.query_type,
        schema.mutation_type,
        schema.subscription_type,
        types=[*schema.type_map.values(), *added],
        directives=schema.directives,
        extensions=schema.extensions,
    )
