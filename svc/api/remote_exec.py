"""Send root fields to a remote schema: one `HttpStep` of kind `REMOTE_SCHEMA`
(`svc.plan.steps`), run by the step executor (`svc.api.steps`).

The fields go as one GraphQL request (their selections, fragments and variables, aliases
kept), in the remote's own names when it is customized (`svc.api.remote_translate`), with
the role's presets applied (`svc.api.remote_presets`). A subscription on a remote field
is refused with `not-supported` (`NOT_SUPPORTED`, the reference's message).
"""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    OperationDefinitionNode,
    OperationType,
)

from svc.api.remote_call import post_graphql, request_headers
from svc.api.remote_presets import apply_presets
from svc.api.remote_translate import translate_call
from svc.errors import ErrorCode, SvcError
from svc.metadata.remote_schemas import find_remote
from svc.outbound import forwarded
from svc.plan.operation import root_type
from svc.plan.remote_fields import remote_document, strip_nodes
from svc.schema.remote_custom import Customization

NOT_SUPPORTED = "subscription to remote server is not supported"


async def call_remote(
    state: Any,
    name: str,
    op: OperationDefinitionNode,
    nodes: list[FieldNode],
    fragments: dict[str, FragmentDefinitionNode],
    req: Any,
    session: dict[str, str],
    client_headers: list[tuple[str, str]] | None,
    schema: Any,
    role: str,
) -> dict[str, Any]:
    """Send root fields `nodes` to remote `name` (in its own names when customized,
    `svc.api.remote_translate`); its decoded answer, `data` in the client's names."""
    entry = find_remote(state.metadata, name)
    if entry is None:
        raise SvcError(ErrorCode.NOT_EXISTS, f"remote schema {name} does not exist")
    if entry.remote_relationships and schema is not None:
        # relationships of the remote's types: their join fields are asked for instead
        nodes, fragments, _ = strip_nodes(schema, fragments, root_type(schema, op), nodes)
    custom = Customization.of(entry)
    back = None
    if custom is not None and schema is not None:
        found = state.remotes.lookup(entry)
        types = [t["name"] for t in found.data["__schema"]["types"]] if found and found.data else []
        nodes, fragments, defs, back = translate_call(
            schema,
            root_type(schema, op),
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
    # The role view decides whether presets apply (`apply_presets`).
    mutation = op.operation == OperationType.MUTATION
    nodes, fragments = apply_presets(
        entry,
        role,
        session,
        nodes,
        fragments,
        mutation=mutation,
        parents=state.ir.inherited_roles,
        variables=req.variables or {},
        definitions=tuple(op.variable_definitions or ()),
    )
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
