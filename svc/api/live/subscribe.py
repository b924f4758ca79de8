"""`subscribe`: start one websocket operation (`Engine.subscribe` calls it).

Pre-execution errors raise `SvcError` (the transport answers `error` then `complete`):
the request's shape (`parse-failed`), validation (`validation-failed`), the role's API
limits, the allow-list, a role without a `subscription_root` ("no subscriptions exist":
its permissions hide every root field), a subscription selecting more than one root
field without `@_multiple_top_level_fields` ("subscriptions must select one top level field", as the
reference), and a session variable the subscription's statement needs but the session
lacks (`not-found`). A query or mutation then runs once through the ordinary pipeline
and its answer (data or errors) is pushed; a subscription joins its cohort
(`svc.api.live.registry`) and gets its current result at once; a streaming one
(`x_stream`) starts at its initial cursor (`svc.api.live.stream`) and gets its first
batch at once when there are rows after it.
"""

from __future__ import annotations

from typing import Any

from graphql import OperationType

from svc.api.graphql import GraphQLService, decode_request, errors_body
from svc.api.live.cohort import cohort_vars
from svc.api.live.handle import LiveHandle, Push
from svc.api.live.registry import LiveQueries
from svc.api.live.stream import add_stream, stream_vars
from svc.api.state import State
from svc.errors import SvcError, validation_failed
from svc.plan.namespaces import split_alias
from svc.session_vars import is_admin
from svc.sql.stream import StreamStatement


async def subscribe(
    service: GraphQLService,
    live: LiveQueries,
    state: State,
    raw: Any,
    role: str,
    session: dict[str, str],
    push: Push,
) -> LiveHandle:
    """Start the operation of the GraphQL request object `raw` (a `start`/`subscribe`
    payload) for `role` with `session`; see the module docstring. Returns its handle."""
    req = decode_request(raw)
    prepared = await service.prepared(state, role, req)
    handle = LiveHandle(push)
    if prepared.operation.operation != OperationType.SUBSCRIPTION:
        try:
            answer = await service.run(state, role, session, req)
        except SvcError as exc:
            answer = errors_body(exc, role)
        await handle.push_once(answer)
        return handle
    if state.schema(role).subscription_type is None:  # every root field hidden
        # Hasura `Hasura.GraphQL.Execute`, `getExecPlanPartial`: `throwVE`
        raise validation_failed("no subscriptions exist", "$")
    service.admit(state, role, session, req)
    compiled, variables, statement = service.compile_live(state, role, req, prepared)
    # Counted at the top level: a source's namespace is one field (`svc.plan.namespaces`).
    top = {split_alias(root.alias)[0] or root.alias for root in compiled.plan.roots}
    if len(top) > 1 and not prepared.multiple_roots:
        raise validation_failed("subscriptions must select one top level field")
    timeout = service.limits(state, role).timeout
    if isinstance(statement, StreamStatement):  # `x_stream` (svc.api.live.stream)
        vars_text = stream_vars(statement, variables, session)
        add_stream(
            live, role, statement, timeout, vars_text, handle, admin=is_admin(role), db=compiled.db
        )
        return handle
    vars_text = cohort_vars(statement, variables, session)
    live.add(role, statement, timeout, vars_text, handle, admin=is_admin(role), db=compiled.db)
    return handle
