"""The one entry to planning: `plan_operation(PlanInput) -> OperationPlan`.

The GraphQL pipeline (`svc.api.graphql`, and explain through it) and `svc compile` plan
every operation here; the result is the operation's steps (`svc.plan.steps`): the
database roots as one `DatabaseStep`, remote-schema and action roots as HTTP (or stored
call) steps, their relationships as join steps (`svc.plan.outside`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLObjectType,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    get_named_type,
)
from graphql.execution.collect_fields import collect_fields

from svc.ir.model import Table
from svc.metadata.model import QualifiedName
from svc.metadata.remote_schemas import RemoteSchema
from svc.plan.build import plan_query
from svc.plan.mutation import MutationRoot
from svc.plan.namespaces import NAMESPACE_EXTENSION, flat_alias
from svc.plan.nested_update import NestedUpdatePlanner
from svc.plan.outside import (
    action_joins,
    action_step,
    outside_kind,
    remote_joins,
    remote_step,
    selects_outside,
)
from svc.plan.relay import RelayMutationPlanner, RelayPlanner
from svc.plan.remote_fields import remote_relationships, strip_holes, strip_nodes
from svc.plan.sources import mutation_steps, query_steps
from svc.plan.steps import DatabaseStep, MutationPlan, OperationPlan, Step, StepKind
from svc.schema.relay import is_relay_schema


@dataclass(frozen=True, slots=True)
class PlanInput:
    """Everything planning reads: the role's schema (its `RoleView` decides permissions),
    the IR's tables, the validated operation with its document's fragments, the coerced
    variables, whether numeric types are answered as strings
    (`--stringify-numeric-types`), the role, the metadata's remote schemas (their
    URLs and headers; with none, no field is looked at for remote relationships) and the
    longest regular expression operand the role may send (0: any)."""

    schema: GraphQLSchema
    tables: dict[QualifiedName, Table]
    operation: OperationDefinitionNode
    fragments: dict[str, FragmentDefinitionNode]
    variables: dict[str, Any]
    stringify: bool
    role: str
    remotes: tuple[RemoteSchema, ...] = ()
    pattern_limit: int = 0  # the longest regular expression operand (0: any)
    # Whether tables have relationships to other sources (`Ir.source_joins`): joined
    # after their step like remote relationships.
    source_joins: bool = False


def plan_operation(given: PlanInput) -> OperationPlan:
    """The steps of `given.operation` (one `DatabaseStep` when it selects only tables and
    functions). Raises `SvcError` for arguments the planner refuses
    (`validation-failed`, `not-supported`, …)."""
    op = given.operation
    root = root_type(given.schema, op)
    outside = selects_outside(given.schema, root, op, given.fragments, given.variables)
    if given.remotes or given.source_joins:
        _, _, rels = remote_relationships(given.schema, given.fragments, op)
        outside = outside or bool(rels)
    if outside:
        return _with_outside(given, root)
    return _database(given, op, given.fragments)


def root_type(schema: GraphQLSchema, op: OperationDefinitionNode) -> GraphQLObjectType:
    """The root type `op`'s fields are selected on (validation accepted the operation, so
    it exists)."""
    if op.operation == OperationType.MUTATION:
        found = schema.mutation_type
    elif op.operation == OperationType.SUBSCRIPTION:
        found = schema.subscription_type
    else:
        found = schema.query_type
    assert found is not None  # validation accepted the operation
    return found


def _database(
    given: PlanInput, op: OperationDefinitionNode, fragments: dict[str, FragmentDefinitionNode]
) -> OperationPlan:
    """The database step of `op` (its root fields all database fields)."""
    if op.operation == OperationType.MUTATION:
        roots = _mutation_roots(given, op, fragments)
        steps = tuple(DatabaseStep(MutationPlan(r), s) for s, r in mutation_steps(roots))
        return OperationPlan("mutation", steps)
    plan, structural, leaf_vars = plan_query(
        given.schema,
        given.tables,
        op,
        fragments,
        given.variables,
        stringify=given.stringify,
        role=given.role,
        pattern_limit=given.pattern_limit,
        kind=RelayPlanner if is_relay_schema(given.schema) else None,
    )
    steps = tuple(DatabaseStep(p, s) for s, p in query_steps(plan, given.tables))
    return OperationPlan(plan.kind, steps, structural, leaf_vars)


def _with_outside(given: PlanInput, root: GraphQLObjectType) -> OperationPlan:
    """Steps of an operation with remote or action fields: the database roots (remote
    relationships replaced by their join columns) first, then one request per remote
    schema, one step per action field, then the joins."""
    op = given.operation
    fields = collect_fields(given.schema, given.fragments, given.variables, root, op.selection_set)
    kinds = {a: outside_kind(root.fields.get(ns[0].name.value)) for a, ns in fields.items()}
    steps: list[Step] = []
    joins: list[Step] = []
    structural: frozenset[str] = frozenset()
    leaf_vars: frozenset[str] = frozenset()
    local = [n for a, ns in fields.items() if kinds[a] is None for n in ns]
    if local:
        # A subscription's database fields are polled as a query beside its actions.
        kind = OperationType.QUERY if op.operation == OperationType.SUBSCRIPTION else op.operation
        only = OperationDefinitionNode(
            operation=kind,
            name=op.name,
            variable_definitions=op.variable_definitions,
            directives=(),
            selection_set=SelectionSetNode(selections=tuple(local)),
        )
        fragments = given.fragments
        if given.remotes or given.source_joins:
            only, fragments, rels = remote_relationships(given.schema, fragments, only)
            joins += remote_joins(rels, given.remotes, 0)
        planned = _database(given, only, fragments)
        steps += planned.steps
        structural, leaf_vars = planned.structural, planned.leaf_vars
    by_name = {r.name: r for r in given.remotes}
    remote_of = {
        a: root.fields[ns[0].name.value].extensions["svc_remote"]
        for a, ns in fields.items()
        if kinds[a] == StepKind.REMOTE_SCHEMA
    }
    for name in dict.fromkeys(remote_of.values()):
        aliases = tuple(a for a, n in remote_of.items() if n == name)
        nodes: list[FieldNode] = [n for a in aliases for n in fields[a]]
        entry = by_name.get(name)
        if entry is not None:
            frags = given.fragments
            if entry.remote_relationships:  # relationships of the remote's own types
                nodes, frags, found = strip_nodes(given.schema, frags, root, nodes)
                joins += remote_joins(found, given.remotes, len(steps))
            steps.append(remote_step(entry, aliases, nodes, op, frags))
    for alias, nodes in fields.items():
        if kinds[alias] == StepKind.ACTION:
            field = root.fields[nodes[0].name.value]
            steps.append(action_step(field, alias, nodes, op))
            joins += action_joins(
                given.schema, given.fragments, given.variables, field, nodes, len(steps) - 1
            )
            if given.remotes or given.source_joins:  # relationships of rows it reads
                *_, found = strip_holes(given.schema, given.fragments, [(field, nodes)])
                joins += remote_joins(found, given.remotes, len(steps) - 1)
    kind_name = "mutation" if op.operation == OperationType.MUTATION else op.operation.value
    return OperationPlan(kind_name, (*steps, *joins), structural, leaf_vars)


def _mutation_roots(
    given: PlanInput, op: OperationDefinitionNode, fragments: dict[str, FragmentDefinitionNode]
) -> tuple[tuple[str, MutationRoot | str | None], ...]:
    """(alias, plan) per root field in order; `None` for `__typename`."""
    schema = given.schema
    root_type = schema.mutation_type
    assert root_type is not None  # validation accepted a mutation
    kind = RelayMutationPlanner if is_relay_schema(schema) else NestedUpdatePlanner
    planner = kind(
        schema,
        given.tables,
        fragments,
        given.variables,
        stringify=given.stringify,
        role=given.role,
        pattern_limit=given.pattern_limit,
    )
    out: list[tuple[str, MutationRoot | str | None]] = []
    fields = collect_fields(schema, fragments, given.variables, root_type, op.selection_set)
    for alias, nodes in fields.items():
        name = nodes[0].name.value
        if name == "__typename":
            out.append((alias, None))
        elif NAMESPACE_EXTENSION in root_type.fields[name].extensions:
            space = get_named_type(root_type.fields[name].type)
            inner = [s for n in nodes if n.selection_set for s in n.selection_set.selections]
            found = collect_fields(
                schema, fragments, given.variables, space, SelectionSetNode(selections=tuple(inner))
            )
            for key, group in found.items():
                flat, field_name = flat_alias(alias, key), group[0].name.value
                if field_name == "__typename":
                    out.append((flat, space.name))
                else:
                    out.append((flat, planner.mutation_root(flat, space.fields[field_name], group)))
        else:
            out.append((alias, planner.mutation_root(alias, root_type.fields[name], nodes)))
    return tuple(out)
