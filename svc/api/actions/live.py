"""Subscriptions that select action fields: `subscription { <action>(id:
$id) { output errors } }` follows an asynchronous call until its result is stored.

The live engine multiplexes SQL statements; an action field is no statement, so such a
subscription polls on its own: every refetch interval the operation is answered as a
query (`svc.api.steps.answer_steps`, so its table fields still go through the ordinary pipeline)
and the result is pushed when its bytes changed, as a live query's is. An error is pushed
(as `{"errors": …}`) when it differs from the last push; polling goes on until `stop()`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from graphql import OperationType

from svc.api.live.handle import LiveHandle, Push
from svc.api.request import decode_request, errors_body
from svc.api.steps import answer_steps
from svc.errors import SvcError

from .run import uses_actions


async def subscribe_actions(
    service: Any,
    state_of: Callable[[], Awaitable[Any]],
    raw: Any,
    role: str,
    session: dict[str, str],
    push: Push,
    interval: float,
) -> LiveHandle | None:
    """A handle polling the subscription `raw` when it selects an action field, else
    None (the live engine takes it). Raises what `GraphQLService.prepared` and `admit`
    raise (`parse-failed`, `validation-failed`, the role's limits)."""
    state = await state_of()
    if state.ir.actions is None or not state.ir.actions.actions:
        return None
    req = decode_request(raw)
    prepared = await service.prepared(state, role, req)
    if prepared.operation.operation != OperationType.SUBSCRIPTION:
        return None
    if not uses_actions(state, prepared):
        return None
    service.admit(state, role, session, req)
    handle = LiveHandle(push)
    timeout = service.limits(state, role).timeout

    async def poll() -> None:
        last: bytes | None = None
        while True:
            current = await state_of()
            try:
                body = await answer_steps(service, current, role, session, req, prepared, timeout)
            except SvcError as exc:
                body = errors_body(exc, role)
            if body != last:
                handle.deliver(body)
                last = body
            await asyncio.sleep(interval)

    task = asyncio.get_running_loop().create_task(poll())

    async def ended() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    handle.release = lambda _: ended()
    return handle
