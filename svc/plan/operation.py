"""The one entry to planning: `plan_operation(PlanInput) -> OperationPlan` (issue 12).

The GraphQL pipeline (`svc.api.graphql`, and explain through it) and `svc compile` plan
every operation here; the result is the operation's steps (`svc.plan.steps`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import (
    FragmentDefinitionNode,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
)
from graphql.execution.collect_fields import collect_fields

from svc.ir.model import Table
from svc.metadata.model import QualifiedName
from svc.plan.action_rels import refuse_actions
from svc.plan.build import plan_query
from svc.plan.mutation import MutationPlanner, MutationRoot
from svc.plan.sources import mutation_source, query_source
from svc.plan.steps import DatabaseStep, MutationPlan, OperationPlan


@dataclass(frozen=True, slots=True)
class PlanInput:
    """Everything planning reads: the role's schema (its `RoleView` decides permissions),
    the IR's tables, the validated operation with its document's fragments, the coerced
    variables, whether numeric types are answered as strings
    (`--stringify-numeric-types`) and the role."""

    schema: GraphQLSchema
    tables: dict[QualifiedName, Table]
    operation: OperationDefinitionNode
    fragments: dict[str, FragmentDefinitionNode]
    variables: dict[str, Any]
    stringify: bool
    role: str


def plan_operation(given: PlanInput) -> OperationPlan:
    """The steps of `given.operation` (today one `DatabaseStep`). Raises `SvcError` for
    arguments the planner refuses (`validation-failed`, `not-supported`, …)."""
    op = given.operation
    root = given.schema.mutation_type if op.operation == OperationType.MUTATION else None
    root = root or given.schema.query_type
    refuse_actions(given.schema, root, op, given.fragments, given.variables)  # issue 16
    if op.operation == OperationType.MUTATION:
        roots = _mutation_roots(given)
        step = DatabaseStep(MutationPlan(roots), mutation_source(roots))
        return OperationPlan("mutation", (step,))
    plan, structural, leaf_vars = plan_query(
        given.schema,
        given.tables,
        op,
        given.fragments,
        given.variables,
        stringify=given.stringify,
        role=given.role,
    )
    step = DatabaseStep(plan, query_source(plan, given.tables))
    return OperationPlan(plan.kind, (step,), structural, leaf_vars)


def _mutation_roots(given: PlanInput) -> tuple[tuple[str, MutationRoot | None], ...]:
    """(alias, plan) per root field in order; `None` for `__typename`."""
    schema = given.schema
    root_type = schema.mutation_type
    assert root_type is not None  # validation accepted a mutation
    planner = MutationPlanner(
        schema,
        given.tables,
        given.fragments,
        given.variables,
        stringify=given.stringify,
        role=given.role,
    )
    out: list[tuple[str, MutationRoot | None]] = []
    fields = collect_fields(
        schema, given.fragments, given.variables, root_type, given.operation.selection_set
    )
    for alias, nodes in fields.items():
        name = nodes[0].name.value
        if name == "__typename":
            out.append((alias, None))
        else:
            out.append((alias, planner.mutation_root(alias, root_type.fields[name], nodes)))
    return tuple(out)
