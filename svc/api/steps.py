"""The step executor: runs an `OperationPlan` (`svc.plan.steps`) whose steps are not all
database steps (an operation with only database fields takes the pipeline's cached path
in `svc.api.graphql`, which runs its one step itself).

Root steps first: the database step (one statement, or a mutation's transaction), one
request per remote schema, one call per action field. A query's root steps run
concurrently (`asyncio.gather`; the first failing step in plan order decides the error);
a mutation's run in plan order, one after the other, as GraphQL runs mutation fields.
Then the joins, which read the root steps' answers: action relationships to tables (ONE
statement for all, `svc.api.actions.run.fill`), remote relationships (`svc.api.remote_join`).
The answer is `{"data": …}` in the operation's field order, with the `errors` remote
schemas returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from graphql import FieldNode, OperationType
from graphql.execution.collect_fields import collect_fields

from svc.api.actions.output import Projector
from svc.api.actions.run import action_root, fill
from svc.api.answer_limits import check_bytes
from svc.api.input_validation import validate_mutation
from svc.api.mutation import execute_mutation
from svc.api.remote_exec import NOT_SUPPORTED, call_remote
from svc.api.remote_join import JoinWork, stitch
from svc.api.request import coerce_variables
from svc.errors import ErrorCode, SvcError
from svc.execute.params import resolve
from svc.outbound import forwarded
from svc.plan.nodes import QueryPlan
from svc.plan.operation import root_type
from svc.plan.steps import (
    ActionLogStep,
    DatabaseStep,
    HttpStep,
    JoinStep,
    OperationPlan,
    Step,
    StepKind,
)
from svc.session_vars import handler_session
from svc.sql.render import render_query

_decode = msgspec.json.decode


def calls_remote(planned: OperationPlan) -> bool:
    """Whether a step of `planned` sends a request to a remote schema."""
    return any(s.kind in (StepKind.REMOTE_SCHEMA, StepKind.REMOTE_JOIN) for s in planned.steps)


@dataclass
class Run:
    """One execution of an operation's steps: what every step reads, and the answers
    (`data` by root alias, `errors` from remote schemas) they write."""

    service: Any  # svc.api.graphql.GraphQLService (its database, renderer, assembler)
    state: Any
    role: str
    session: dict[str, str]
    req: Any  # svc.api.request.GraphQLRequest
    prepared: Any  # svc.api.graphql.Prepared
    variables: dict[str, Any]
    timeout: float | None
    client: list[tuple[str, str]] | None
    fields: dict[str, list[FieldNode]] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    errors: list[Any] = field(default_factory=list)
    projector: Projector | None = None


async def run_steps(
    service: Any,
    state: Any,
    role: str,
    session: dict[str, str],
    req: Any,
    prepared: Any,
    planned: OperationPlan,
    variables: dict[str, Any],
    timeout: float | None,
    client: list[tuple[str, str]] | None = None,
) -> bytes:
    """The `{"data": …}` body of `planned` (see the module); raises `SvcError`
    (`not-supported` for a subscription that calls a remote schema)."""
    op = prepared.operation
    if op.operation == OperationType.SUBSCRIPTION and calls_remote(planned):
        raise SvcError(ErrorCode.NOT_SUPPORTED, NOT_SUPPORTED)
    schema = state.schema(role)
    root = root_type(schema, op)
    run = Run(service, state, role, session, req, prepared, variables, timeout, client)
    if run.client is None:  # the HTTP layer recorded them (svc.outbound.forwarded)
        run.client = forwarded.client_headers()
    run.fields = collect_fields(schema, prepared.fragments, variables, root, op.selection_set)
    run.projector = Projector(schema, prepared.fragments, variables)
    firsts = [s for s in planned.steps if not isinstance(s, JoinStep)]
    if op.operation == OperationType.MUTATION:
        await validate_mutation(schema, prepared, variables, role, session, timeout)
        for step in firsts:
            await _run_step(run, step)
    else:
        await _together([_run_step(run, step) for step in firsts])
    kinds = {s.kind for s in planned.steps}
    if StepKind.ACTION_JOIN in kinds and run.projector.pending:
        await fill(
            service, state, role, session, prepared, variables, run.projector.pending, timeout
        )
    if StepKind.REMOTE_JOIN in kinds:
        work = JoinWork(
            schema,
            prepared.fragments,
            variables,
            op,
            session,
            run.client,
            service,
            role,
            req.variables or {},
        )
        await stitch(state, work, run.data, root, run.fields)
    body: dict[str, Any] = {"data": {a: run.data.get(a) for a in run.fields}}
    if run.errors:
        body["errors"] = run.errors
    return msgspec.json.encode(body)


async def _together(runs: list[Awaitable[None]]) -> None:
    """Await `runs` concurrently; raise the first failure in their order."""
    if len(runs) == 1:
        await runs[0]
        return
    results = await asyncio.gather(*runs, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result


async def _run_step(run: Run, step: Step) -> None:
    """Run one root step, writing its answers into `run.data` (`run.errors`)."""
    if isinstance(step, DatabaseStep):
        run.data.update(await _database(run, step))
    elif isinstance(step, HttpStep) and step.kind == StepKind.REMOTE_SCHEMA:
        nodes = [n for a in step.aliases for n in run.fields[a]]
        answer = await call_remote(
            run.state,
            step.name,
            run.prepared.operation,
            nodes,
            run.prepared.fragments,
            run.req,
            run.session,
            run.client,
            run.state.schema(run.role),
            run.role,
        )
        if isinstance(answer.get("data"), dict):
            run.data.update(answer["data"])
        run.errors += answer.get("errors") or []
    elif isinstance(step, HttpStep | ActionLogStep):
        alias = step.alias if isinstance(step, ActionLogStep) else step.aliases[0]
        nodes = run.fields[alias]
        schema = run.state.schema(run.role)
        fdef = root_type(schema, run.prepared.operation).fields[nodes[0].name.value]
        assert run.projector is not None
        run.data[alias] = await action_root(
            run.service,
            fdef,
            nodes,
            run.variables,
            handler_session(run.session, run.role),
            run.role,
            run.req.query,
            run.projector,
        )


async def _database(run: Run, step: DatabaseStep) -> dict[str, Any]:
    """The answers of the database step's root fields (remote relationship fields as
    their hidden join columns), decoded; run on the step's source's database."""
    service, plan = run.service, step.plan
    db = service.sources.database(step.source)
    if isinstance(plan, QueryPlan):
        statement, aliases = render_query(plan)
        values: dict[str, bytes] = {}
        if aliases:
            bound = await service.check_answer(db, plan, run.variables, run.role)
            args = resolve(statement.params, run.variables, run.session)
            columns = len(aliases)
            texts = await db.query_json(statement.sql, args, columns, run.timeout)
            check_bytes(sum(map(len, texts)), bound, run.role)
            values = dict(zip(aliases, texts, strict=True))
        answers = await service.introspection(
            run.state, run.role, run.prepared, plan, run.variables
        )
        body = service._assemble(plan, values, answers)
    else:
        tables = run.state.ir.tables
        body = await execute_mutation(
            db, tables, plan.roots, run.variables, run.session, run.timeout
        )
    decoded = _decode(body)
    if "errors" in decoded:
        raise SvcError(ErrorCode.UNEXPECTED, str(decoded["errors"][0].get("message")))
    return dict(decoded.get("data") or {})


async def answer_steps(
    service: Any,
    state: Any,
    role: str,
    session: dict[str, str],
    req: Any,
    prepared: Any,
    timeout: float | None,
) -> bytes:
    """Plan (cached in `prepared`, `GraphQLService.plan_steps`) and run the operation
    `prepared` under `state`: a subscription with action fields polls this, its other
    fields answered as a query. Raises `SvcError`."""
    schema = state.schema(role)
    variables = coerce_variables(schema, prepared, req.variables, service.defaults.list_items)
    planned = service.plan_steps(state, role, req, prepared, variables)
    return await run_steps(
        service, state, role, session, req, prepared, planned, variables, timeout
    )
