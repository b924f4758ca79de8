"""Action root fields and their relationships, as steps of an operation
("Operations are planned as steps"; `svc.api.steps` runs them).

`uses_actions(state, prepared)` is cheap: False at once when the metadata has no action,
else a look at the operation's root selections. Each action root field is one step
(`action_root`): a synchronous action calls its handler (`svc.api.actions.sync`), checks
the answer (`output.check`) and cuts it to the selection; an asynchronous action's
mutation stores the call and answers its id; the query `<action>(id)` reads the stored
call (`async_calls`). Relationships from the answers' custom objects to tables are then
answered by ONE statement (`fill`, `svc.plan.action_rels`). An error of any step fails
the operation (`{"errors": [...]}`; `extensions.internal` for admins only).
"""

from __future__ import annotations

from typing import Any

import msgspec
from graphql import (
    FieldNode,
)
from graphql.execution.values import get_argument_values

from svc.errors import ErrorCode, SvcError
from svc.execute.params import resolve
from svc.outbound.forwarded import client_headers
from svc.plan.action_rels import Hole, distribute, plan_relations
from svc.plan.remote_fields import strip_holes
from svc.plan.sources import query_source
from svc.schema.info import FieldKind
from svc.sql.render import render_query

from . import async_calls, sync
from .output import BadOutput, Pending, Projector, check

_encode = msgspec.json.encode
_decode = msgspec.json.decode


def uses_actions(state: Any, prepared: Any) -> bool:
    """Whether the prepared operation selects an action root field (any role's: names
    the role cannot see never pass validation)."""
    resolved = state.ir.actions
    if resolved is None or not resolved.actions:
        return False
    names = resolved.actions.keys()
    for sel in prepared.operation.selection_set.selections:
        if not isinstance(sel, FieldNode) or sel.name.value in names:
            return True  # fragments: decided by planning (`svc.plan.outside`)
    return False


async def action_root(
    service: Any,
    field: Any,
    nodes: list[FieldNode],
    variables: dict[str, Any],
    session: dict[str, str],
    role: str,
    query: str,
    projector: Projector,
) -> Any:
    """The answer of one action root field (sync call, async store or async read)."""
    resolved = field.extensions["action"]
    args = get_argument_values(field, nodes[0], variables)
    if field.extensions["svc"].kind == FieldKind.ACTION_RESULT:
        row = await async_calls.read_call(service.db, args["id"], session, role)
        if row is None:
            return None
        return projector.value(field.type, row, nodes)
    action = resolved.action
    client = client_headers()
    if action.definition.asynchronous:
        kept = sync.forwarded(client) if action.definition.forward_client_headers else []
        return await async_calls.store_call(service.db, action.name, args, kept, session)
    call = sync.make_call(action, args, session, query, client)
    value, response = await sync.send(call)
    try:
        check(field.type, value)
    except BadOutput as exc:
        internal = call.internal("unexpected response", sync._response(response, value))
        raise SvcError(ErrorCode.UNEXPECTED, exc.message, internal=internal) from None
    return projector.value(field.type, value, nodes)


async def fill(
    service: Any,
    state: Any,
    role: str,
    session: dict[str, str],
    prepared: Any,
    variables: dict[str, Any],
    pending: list[Pending],
    timeout: float | None,
) -> None:
    """Answer every relationship hole with one statement (`svc.plan.action_rels`); the
    remote relationships of the rows it reads are selected as their join columns (the
    operation's join step fills them in after)."""
    schema = state.schema(role)
    fragments = prepared.fragments
    nodes = [p.nodes for p in pending]
    if state.metadata.remote_schemas:
        nodes, fragments, _ = strip_holes(schema, fragments, [(p.field, p.nodes) for p in pending])
    holes = [Hole(p.field, n, p.parent) for p, n in zip(pending, nodes, strict=True)]
    plan, groups = plan_relations(
        schema,
        state.ir.tables,
        fragments,
        variables,
        holes,
        stringify=service.stringify,
        role=role,
    )
    for p, hole in zip(pending, holes, strict=True):
        if hole.empty:
            p.holder[p.alias] = hole.empty_answer
    statement, aliases = render_query(plan)
    if not aliases:
        return
    args = resolve(statement.params, variables, session)
    db = service.sources.database(query_source(plan, state.ir.tables))
    texts = await db.query_json(statement.sql, args, len(aliases), timeout)
    for alias, text in zip(aliases, texts, strict=True):
        group = groups[int(alias[1:])]
        for i, answer in distribute(holes, group, _decode(text)):
            pending[i].holder[pending[i].alias] = answer
