"""What an operation is planned into: steps ("Operations are planned as steps").

A query or subscription over tables and functions is one `DatabaseStep` (one SQL
statement); a mutation's database root fields run in order in one transaction. Root fields
answered elsewhere are steps of their own: an `HttpStep` per remote schema (one GraphQL
request for its root fields) and per synchronous action (its handler call), an
`ActionLogStep` per asynchronous action field (a stored call, written or read). A
`JoinStep` fills fields of one step's answer from another source after that step ran:
remote relationships (a table's rows → a remote schema) and action relationships (an
action's answer → a table). `svc.api.steps` runs them; `svc compile --print-sql` prints
every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from svc.metadata.model import DEFAULT_SOURCE
from svc.plan.mutation import MutationRoot
from svc.plan.nodes import QueryPlan


@dataclass(frozen=True, slots=True)
class MutationPlan:
    """A planned mutation operation: `(alias, root)` per root field in response order,
    `None` for `__typename` (`svc.api.mutation` runs them in one transaction)."""

    roots: tuple[tuple[str, MutationRoot | str | None], ...]


class StepKind(StrEnum):
    """What a step is: where its answers come from."""

    DATABASE = "database"  # one statement (query) or one transaction (mutation)
    REMOTE_SCHEMA = "remote_schema"  # a GraphQL request to a remote schema
    ACTION = "action"  # a synchronous action's handler call
    ACTION_LOG = "action_log"  # an asynchronous action's stored call (write or read)
    REMOTE_JOIN = "remote_join"  # remote relationships of a step's rows
    ACTION_JOIN = "action_join"  # action-output relationships to tables


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
    kind: StepKind = StepKind.DATABASE


@dataclass(frozen=True, slots=True)
class HttpStep:
    """One outbound HTTP call answering root fields `aliases`: an action's handler or a
    remote schema, as the request it sends.

    `url` and header values are templates (`{{ENV}}`) the shared outbound client renders
    when sending. `body` is JSON-shaped with `Param` leaves for what is known only at run
    time: an action's `{action: {name}, input, session_variables, request_query}` (input
    arguments read from variables are `Param(VarRef)`, the session `Param(SessionJson)`),
    a remote's `{query, variables?, operationName?}` (`query` the document sent: the
    client's root fields for that remote with their fragments and variables; a
    customized remote gets it in its own names, and role presets are applied, when sent).
    `name` is the action's or remote schema's metadata name.
    """

    kind: StepKind  # ACTION | REMOTE_SCHEMA
    name: str
    url: str
    method: str
    headers: tuple[tuple[str, str], ...]
    body: Any
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ActionLogStep:
    """An asynchronous action's root field `alias`: a mutation stores the call (answered
    by its id, delivered later by the async-action worker), the query `<action>(id)`
    reads a stored call's answer (`store` False)."""

    name: str
    alias: str
    store: bool
    kind: StepKind = StepKind.ACTION_LOG


@dataclass(frozen=True, slots=True)
class JoinStep:
    """Fill relationship fields inside the answer of step `source` (an index into
    `OperationPlan.steps`) once it ran.

    `REMOTE_JOIN`: a remote relationship `relationship` (`table.name`, or
    `remote.Type.name` for one of a remote schema's type) to remote schema `target`; per
    distinct set of join values ONE request to `url` (aliased fields `f0`, `f1`, …
    calling `field`, its `$column` arguments read from the rows); or, `target`
    `source <name>` (`remote_field` `{to_source: …}`), to a table: ONE statement with a
    root field per distinct set of join values.
    `ACTION_JOIN`: an action output type's relationship to table `target`, answered for
    every object of the action's answer by ONE statement (`svc.plan.action_rels`).
    `mapping` pairs (source field, target argument or column).
    """

    kind: StepKind  # REMOTE_JOIN | ACTION_JOIN
    source: int
    relationship: str
    target: str
    mapping: tuple[tuple[str, str], ...]
    url: str = ""
    remote_field: Any = None  # a remote join's `remote_field` (JSON)


Step = DatabaseStep | HttpStep | ActionLogStep | JoinStep


@dataclass(frozen=True, slots=True)
class OperationPlan:
    """A planned operation: its steps in run order, and the variables planning read.

    `structural`: variables whose values shaped the plan (part of the plan-cache key);
    `leaf_vars`: variables read as parameters. An operation over tables and functions
    only is one `DatabaseStep` (`database_only`).
    """

    kind: str  # "query" | "mutation" | "subscription"
    steps: tuple[Step, ...]
    structural: frozenset[str] = frozenset()
    leaf_vars: frozenset[str] = frozenset()

    @property
    def database_only(self) -> bool:
        """True when the one step is a `DatabaseStep` (the pipeline's cached byte path;
        several, one per source, run as steps)."""
        return len(self.steps) == 1 and isinstance(self.steps[0], DatabaseStep)

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
