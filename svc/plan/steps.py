"""What an operation is planned into: steps (issue 12, "Operations are planned as steps").

Today every operation is one `DatabaseStep`: a query or subscription is one SQL statement,
a mutation its root fields run in order in one transaction. The other kinds are declared
here so actions, remote schemas and remote relationships plug into one seam; nothing
produces them yet (`svc.plan.operation.plan_operation` returns a `DatabaseStep` only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.metadata.model import DEFAULT_SOURCE
from svc.plan.mutation import MutationRoot
from svc.plan.nodes import Param, QueryPlan


@dataclass(frozen=True, slots=True)
class MutationPlan:
    """A planned mutation operation: `(alias, root)` per root field in response order,
    `None` for `__typename` (`svc.api.mutation` runs them in one transaction)."""

    roots: tuple[tuple[str, MutationRoot | None], ...]


@dataclass(frozen=True, slots=True)
class DatabaseStep:
    """The database part of an operation, filled by the planner from every root field
    the schema backs with a table or function.

    `plan` is a `QueryPlan` (rendered to ONE statement by `svc.sql.render.render_query`,
    whose JSON columns are the answers of its roots) or a `MutationPlan`; `source` the
    metadata source whose connections run it (`svc.plan.sources`).
    """

    plan: QueryPlan | MutationPlan
    source: str = DEFAULT_SOURCE


@dataclass(frozen=True, slots=True)
class HttpStep:
    """One outbound HTTP call answering root fields (declared, not produced yet).

    Will be filled for root fields whose schema field names an action (its handler URL,
    method and headers from the action definition, `body` the `{action, input,
    session_variables}` payload) or a remote schema (its URL and headers, `body` the
    GraphQL request of the fields delegated to it). `url` and header values are templates
    (`{{ENV}}`) resolved by the shared outbound HTTP client; `body` values may be
    `Param`s read from variables or the session at run time. `aliases` are the root
    fields whose answers the response holds.
    """

    kind: str  # "action" | "remote_schema"
    name: str  # the action's or remote schema's metadata name
    url: str
    method: str
    headers: tuple[tuple[str, str], ...]
    body: Any  # JSON-shaped, with `Param` leaves
    aliases: tuple[str, ...]
    params: tuple[Param, ...] = ()


@dataclass(frozen=True, slots=True)
class JoinStep:
    """Join the results of two earlier steps (declared, not produced yet): a remote
    relationship from a table's rows to an action or remote schema.

    Will be filled for a field of a table type that the metadata declares as a remote
    relationship: `source` and `target` are indexes into `OperationPlan.steps` (the step
    answering the table's rows, the `HttpStep` fetching the related values), `path` the
    JSON path of the rows inside the source's answer, `mapping` pairs (source column,
    target argument) and `field` the alias the joined value is written under.
    """

    source: int
    target: int
    path: tuple[str, ...]
    mapping: tuple[tuple[str, str], ...]
    field: str


Step = DatabaseStep | HttpStep | JoinStep


@dataclass(frozen=True, slots=True)
class OperationPlan:
    """A planned operation: its steps in run order, and the variables planning read.

    `structural`: variables whose values shaped the plan (part of the plan-cache key);
    `leaf_vars`: variables read as parameters. Today `steps` is one `DatabaseStep`.
    """

    kind: str  # "query" | "mutation" | "subscription"
    steps: tuple[Step, ...]
    structural: frozenset[str] = frozenset()
    leaf_vars: frozenset[str] = frozenset()

    @property
    def database(self) -> DatabaseStep:
        """The operation's database step (the first; raises `ValueError` when none)."""
        for step in self.steps:
            if isinstance(step, DatabaseStep):
                return step
        raise ValueError("the operation has no database step")

    @property
    def query(self) -> QueryPlan:
        """The query plan of a query or subscription (`AssertionError` for a mutation)."""
        plan = self.database.plan
        assert isinstance(plan, QueryPlan)
        return plan

    @property
    def mutation(self) -> MutationPlan:
        """The mutation plan of a mutation (`AssertionError` for a query)."""
        plan = self.database.plan
        assert isinstance(plan, MutationPlan)
        return plan
