"""Operations that select action fields (issue 16; ARCHITECTURE "Operations are planned
as steps").

`uses_actions(state, role, prepared)` is cheap: False at once when the metadata has no
action, else a look at the operation's root selections. `run_with_actions` answers such
an operation in steps:

1. the root fields that are not actions, as one derived operation (the request's text
   without the action fields, unused variables and fragments dropped) through the
   ordinary pipeline (`GraphQLService.run`: one statement for a query, one transaction
   for a mutation), so they keep their plan cache;
2. each action root field in order: a synchronous action calls its handler
   (`svc.api.actions.sync`), checks the answer (`output.check`) and cuts it to the
   selection; an asynchronous action's mutation stores the call and answers its id; the
   query `<action>(id)` reads the stored call (`async_calls`);
3. relationships from the answers' custom objects to tables, as ONE statement
   (`svc.plan.action_rels`).

The answers are assembled in the request's order. An error of any step fails the
operation (`{"errors": [...]}`; `extensions.internal` for admins only).
"""

from __future__ import annotations

from typing import Any

import msgspec
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentSpreadNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    Visitor,
    print_ast,
    visit,
)
from graphql.execution.collect_fields import collect_fields
from graphql.execution.values import get_argument_values

from svc.errors import ErrorCode, SvcError
from svc.execute.params import resolve
from svc.outbound.forwarded import client_headers
from svc.plan.action_rels import Hole, distribute, plan_relations
from svc.session_vars import handler_session
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
            return True  # fragments: decided by `run_with_actions`
    return False


async def run_with_actions(
    service: Any,
    state: Any,
    role: str,
    session: dict[str, str],
    req: Any,
    prepared: Any,
    timeout: float | None,
) -> bytes:
    """The `{"data": …}` body of an operation with action fields; raises `SvcError`."""
    from svc.api.graphql import GraphQLRequest, coerce_variables  # graphql imports this

    schema = state.schema(role)
    op = prepared.operation
    variables = coerce_variables(schema, prepared, req.variables)
    mutation = op.operation == OperationType.MUTATION
    root_type = schema.mutation_type if mutation else schema.query_type
    fields = collect_fields(schema, prepared.fragments, variables, root_type, op.selection_set)
    others = {a: n for a, n in fields.items() if "action" not in _extensions(root_type, n)}
    answers: dict[str, Any] = {}
    if others:
        text, used = _derived(op, prepared.fragments, others)
        raw = {k: v for k, v in (req.variables or {}).items() if k in used}
        derived = GraphQLRequest(text, raw, req.operationName)
        # The request was admitted (rate, allow-list) as a whole: not counted again, and
        # the allow-list compares its own text.
        body = await service.run(state, role, session, derived, allow_text=req.query, counted=True)
        answers.update(_decode(body)["data"])
    projector = Projector(schema, prepared.fragments, variables)
    session_vars = handler_session(session, role)
    for alias, nodes in fields.items():
        if alias not in others:
            field = root_type.fields[nodes[0].name.value]
            answers[alias] = await _action_root(
                service, field, nodes, variables, session_vars, role, req.query, projector
            )
    if projector.pending:
        await _fill(service, state, role, session, prepared, variables, projector.pending, timeout)
    return _encode({"data": {alias: answers.get(alias) for alias in fields}})


def _extensions(root_type: Any, nodes: list[FieldNode]) -> dict[str, Any]:
    field = root_type.fields.get(nodes[0].name.value)
    return field.extensions if field is not None else {}


async def _action_root(
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
    if field.extensions["svc"].kind == "action_result":
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


async def _fill(
    service: Any,
    state: Any,
    role: str,
    session: dict[str, str],
    prepared: Any,
    variables: dict[str, Any],
    pending: list[Pending],
    timeout: float | None,
) -> None:
    """Answer every relationship hole with one statement (`svc.plan.action_rels`)."""
    holes = [Hole(p.field, p.nodes, p.parent) for p in pending]
    plan, groups = plan_relations(
        state.schema(role),
        state.ir.tables,
        prepared.fragments,
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
    texts = await service.db.query_json(statement.sql, args, len(aliases), timeout)
    for alias, text in zip(aliases, texts, strict=True):
        group = groups[int(alias[1:])]
        for i, answer in distribute(holes, group, _decode(text)):
            pending[i].holder[pending[i].alias] = answer


def _derived(
    op: OperationDefinitionNode, fragments: dict[str, Any], kept: dict[str, list[FieldNode]]
) -> tuple[str, set[str]]:
    """The text of `op` with only the root fields `kept`, and the variables it uses."""
    selections = tuple(n for nodes in kept.values() for n in nodes)
    used_vars: set[str] = set()
    used_fragments: dict[str, Any] = {}

    class Uses(Visitor):
        def enter_variable(self, node: VariableNode, *_: Any) -> None:
            used_vars.add(node.name.value)

        def enter_fragment_spread(self, node: FragmentSpreadNode, *_: Any) -> None:
            name = node.name.value
            if name not in used_fragments and name in fragments:
                used_fragments[name] = fragments[name]
                visit(fragments[name], self)

    visit(SelectionSetNode(selections=selections), Uses())
    # A subscription's other fields are answered as a query at each poll (`live`).
    kind = OperationType.QUERY if op.operation == OperationType.SUBSCRIPTION else op.operation
    derived = OperationDefinitionNode(
        operation=kind,
        name=op.name,
        variable_definitions=tuple(
            d for d in op.variable_definitions or () if d.variable.name.value in used_vars
        ),
        directives=op.directives,
        selection_set=SelectionSetNode(selections=selections),
    )
    document = DocumentNode(definitions=(derived, *used_fragments.values()))
    return print_ast(document), used_vars
