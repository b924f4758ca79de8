"""Execute operations that touch remote schemas (issue 17).

`run_remote` is called by the GraphQL pipeline only when the document has remote
schemas (`Metadata.remote_schemas`): it answers None when the operation uses neither a
remote root field nor a remote relationship, so database-only operations keep the
cached path. Otherwise: the database root fields are planned and run as usual (remote
relationship fields replaced by their join columns, `svc.api.remote_join`), the root
fields of each remote are sent to it as one GraphQL request (their selections,
fragments and variables, aliases kept), relationships are fetched and stitched in, and
the answers are assembled in the operation's order. A subscription on a remote field
is refused with `not-supported` (the reference's message).
"""

from __future__ import annotations

from typing import Any

import msgspec
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLObjectType,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    Visitor,
    print_ast,
    visit,
)
from graphql.execution.collect_fields import collect_fields

from svc.api.remote_call import post_graphql, request_headers
from svc.api.remote_join import JoinWork, has_remote_relationships, stitch, strip_relationships
from svc.api.remote_presets import apply_presets
from svc.api.remote_translate import translate_call
from svc.errors import ErrorCode, SvcError
from svc.metadata.remote_schemas import find_remote
from svc.outbound import forwarded
from svc.plan.operation import PlanInput, plan_operation
from svc.schema.remote_custom import Customization
from svc.schema.remote_registry import lookup
from svc.sql.render import render_query

NOT_SUPPORTED = "subscription to remote server is not supported"
_DATABASE_ONLY = object()  # plan-cache keys of documents that touch no remote


def _root_type(schema: Any, op: OperationDefinitionNode) -> GraphQLObjectType:
    if op.operation == OperationType.MUTATION:
        return schema.mutation_type  # type: ignore[no-any-return]
    if op.operation == OperationType.SUBSCRIPTION:
        return schema.subscription_type  # type: ignore[no-any-return]
    return schema.query_type  # type: ignore[no-any-return]


def used_names(
    nodes: list[Any], fragments: dict[str, FragmentDefinitionNode]
) -> tuple[list[FragmentDefinitionNode], set[str]]:
    """The fragment definitions `nodes` use (transitively) and the variables they read."""
    frags: dict[str, FragmentDefinitionNode] = {}
    names: set[str] = set()

    class Finder(Visitor):
        def enter_fragment_spread(self, node: Any, *_: Any) -> None:
            name = node.name.value
            if name not in frags and name in fragments:
                frags[name] = fragments[name]
                visit(fragments[name], self)

        def enter_variable(self, node: VariableNode, *_: Any) -> None:
            names.add(node.name.value)

    finder = Finder()
    for node in nodes:
        visit(node, finder)
    return list(frags.values()), names


def remote_document(
    op: OperationDefinitionNode,
    nodes: list[FieldNode],
    fragments: dict[str, FragmentDefinitionNode],
) -> tuple[str, set[str]]:
    """The text of the request sending `nodes` (root fields of `op`) to a remote, and the
    variables it reads."""
    frags, names = used_names(nodes, fragments)
    defs = tuple(d for d in op.variable_definitions or () if d.variable.name.value in names)
    only = OperationDefinitionNode(
        operation=op.operation,
        name=op.name,
        variable_definitions=defs,
        directives=(),
        selection_set=SelectionSetNode(selections=tuple(nodes)),
    )
    return print_ast(DocumentNode(definitions=(only, *frags))), names


def refuse_remote(schema: Any, md: Any, prepared: Any, variables: dict[str, Any]) -> None:
    """Raise 400 `not-supported` when an operation that only the database can answer
    (a subscription, explain) selects a remote root field or a remote relationship:
    "subscription to remote server is not supported" for a subscription (the
    reference's), "explain of remote fields is not supported" otherwise."""
    op: OperationDefinitionNode = prepared.operation
    root = _root_type(schema, op)
    fields = collect_fields(schema, prepared.fragments, variables, root, op.selection_set)
    remote = any(
        "svc_remote" in root.fields[ns[0].name.value].extensions
        for ns in fields.values()
        if ns[0].name.value in root.fields
    )
    if not remote and has_remote_relationships(md):
        remote = strip_relationships(schema, prepared, op)[2]
    if remote:
        subscription = op.operation == OperationType.SUBSCRIPTION
        message = NOT_SUPPORTED if subscription else "explain of remote fields is not supported"
        raise SvcError(ErrorCode.NOT_SUPPORTED, message)


async def run_remote(
    service: Any,
    state: Any,
    role: str,
    session: dict[str, str],
    req: Any,
    prepared: Any,
    timeout: float | None,
    client_headers: list[tuple[str, str]] | None = None,
) -> bytes | None:
    """The answer of an operation using remote fields, or None when it uses none (see
    the module). Raises `SvcError` (`not-supported` for a remote subscription)."""
    from svc.api.graphql import coerce_variables

    # A document found database-only before is again (unless @skip/@include variables
    # could change which fields it selects): one dict lookup, no walk.
    known = (_DATABASE_ONLY, role, req.query, req.operationName)
    if state.plans.get(known):
        return None
    schema = state.schema(role)
    op: OperationDefinitionNode = prepared.operation
    variables = coerce_variables(schema, prepared, req.variables)
    fields = collect_fields(
        schema, prepared.fragments, variables, _root_type(schema, op), op.selection_set
    )
    remote: dict[str, str] = {}
    for alias, nodes in fields.items():
        field = _root_type(schema, op).fields.get(nodes[0].name.value)
        if field is not None and "svc_remote" in field.extensions:
            remote[alias] = field.extensions["svc_remote"]
    rels = has_remote_relationships(state.metadata)
    if not remote and not (rels and strip_relationships(schema, prepared, op)[2]):
        if "@" not in req.query:
            state.remember(known, True)
        return None
    if op.operation == OperationType.SUBSCRIPTION:
        raise SvcError(ErrorCode.NOT_SUPPORTED, NOT_SUPPORTED)
    if client_headers is None:  # the HTTP layer recorded them (svc.outbound.forwarded)
        client_headers = forwarded.client_headers()
    data: dict[str, Any] = {}
    errors: list[Any] = []
    local = {a: n for a, n in fields.items() if a not in remote}
    if local:
        data.update(
            await _database(service, state, role, session, prepared, local, variables, timeout)
        )
    for name in dict.fromkeys(remote.values()):
        nodes = [n for a, ns in fields.items() if remote.get(a) == name for n in ns]
        answer = await _call_remote(
            state, name, op, nodes, prepared.fragments, req, session, client_headers, schema, role
        )
        if isinstance(answer.get("data"), dict):
            data.update(answer["data"])
        errors += answer.get("errors") or []
    if rels:
        work = JoinWork(schema, prepared.fragments, variables, op, session, client_headers)
        await stitch(state, work, data, _root_type(schema, op), fields)
    ordered = {a: data.get(a) for a in fields}
    body: dict[str, Any] = {"data": ordered}
    if errors:
        body["errors"] = errors
    return msgspec.json.encode(body)


async def _database(
    service: Any,
    state: Any,
    role: str,
    session: dict[str, str],
    prepared: Any,
    local: dict[str, list[FieldNode]],
    variables: dict[str, Any],
    timeout: float | None,
) -> dict[str, Any]:
    """The answers of the database root fields `local` (relationship fields replaced by
    their join columns), decoded."""
    from svc.api.mutation import execute_mutation
    from svc.execute.params import resolve

    schema = state.schema(role)
    op: OperationDefinitionNode = prepared.operation
    nodes = tuple(n for ns in local.values() for n in ns)
    only = OperationDefinitionNode(
        operation=op.operation,
        name=op.name,
        variable_definitions=op.variable_definitions,
        directives=(),
        selection_set=SelectionSetNode(selections=nodes),
    )
    only, fragments, _ = strip_relationships(schema, prepared, only)
    sub = type(prepared)(DocumentNode(definitions=(only, *fragments.values())), only, fragments)
    planned = plan_operation(
        PlanInput(schema, state.ir.tables, only, fragments, variables, service.stringify, role)
    )
    if op.operation == OperationType.MUTATION:
        roots = planned.mutation.roots
        body = await execute_mutation(
            service.db, state.ir.tables, roots, variables, session, timeout
        )
    else:
        plan = planned.query
        statement, aliases = render_query(plan)
        values: dict[str, bytes] = {}
        if aliases:
            args = resolve(statement.params, variables, session)
            texts = await service.db.query_json(statement.sql, args, len(aliases), timeout)
            values = dict(zip(aliases, texts, strict=True))
        body = service._assemble(state, role, sub, plan, values, variables)
    decoded = msgspec.json.decode(body)
    if "errors" in decoded:
        raise SvcError(ErrorCode.UNEXPECTED, str(decoded["errors"][0].get("message")))
    return dict(decoded.get("data") or {})


async def _call_remote(
    state: Any,
    name: str,
    op: OperationDefinitionNode,
    nodes: list[FieldNode],
    fragments: dict[str, FragmentDefinitionNode],
    req: Any,
    session: dict[str, str],
    client_headers: list[tuple[str, str]] | None,
    schema: Any = None,
    role: str = "",
) -> dict[str, Any]:
    """Send root fields `nodes` to remote `name` (in its own names when customized,
    `svc.api.remote_translate`); its decoded answer, `data` in the client's names."""
    entry = find_remote(state.metadata, name)
    if entry is None:
        raise SvcError(ErrorCode.NOT_EXISTS, f"remote schema {name} does not exist")
    custom = Customization.of(entry)
    back = None
    if custom is not None and schema is not None:
        found = lookup(entry)
        types = [t["name"] for t in found.data["__schema"]["types"]] if found and found.data else []
        nodes, fragments, defs, back = translate_call(
            schema,
            _root_type(schema, op),
            custom,
            types,
            nodes,
            fragments,
            tuple(op.variable_definitions or ()),
        )
        op = OperationDefinitionNode(
            operation=op.operation,
            name=op.name,
            variable_definitions=defs,
            directives=(),
            selection_set=op.selection_set,
        )
    if role:  # the role view decides whether presets apply (`apply_presets`)
        mutation = op.operation == OperationType.MUTATION
        nodes, fragments = apply_presets(entry, role, session, nodes, fragments, mutation=mutation)
    text, names = remote_document(op, nodes, fragments)
    body: dict[str, Any] = {"query": text}
    given = req.variables or {}
    if names:
        body["variables"] = {k: given[k] for k in names if k in given}
    if op.name is not None:
        body["operationName"] = op.name.value
    answer, response = await post_graphql(
        entry, body, request_headers(entry, session, client_headers)
    )
    for name, value in response.headers:
        if name == "set-cookie":  # the reference passes a remote's cookies to the client
            forwarded.pass_back("Set-Cookie", value)
    if not isinstance(answer, dict):
        raise SvcError(ErrorCode.UNEXPECTED, "Invalid response from remote")
    if back is not None and isinstance(answer.get("data"), dict):
        answer["data"] = back(answer["data"])
    return answer
