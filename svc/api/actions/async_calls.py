"""Asynchronous actions (reference-notes "Actions", wave-2 §4 "Async").

The mutation stores the call in `hdb_catalog.hdb_action_log` (status `created`) and
answers its id at once. A background worker (`svc.workers.async_actions`, started by
`svc.api.background`) claims `created` calls — and `processing` ones whose holder died
(their lock went stale; the claim's `FOR UPDATE SKIP LOCKED` keeps processes off each
other's rows) — and `deliver` calls the handler (`svc.api.actions.sync`) and checks the
answer against the output type; the worker stores `response_payload` (`completed`) or
`errors` `{code, path, error}` (`error`). The result
is read by `<action>(id)`; a role other than admin sees only calls whose stored session
variables equal its own (else null), as in the reference.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from svc.catalog.action_log import INSERT_CALL_SQL, READ_CALL_SQL
from svc.config import async_actions_lock_timeout
from svc.errors import SvcError
from svc.execute.db import Database
from svc.session_vars import ADMIN_ROLE, is_admin, session_json
from svc.workers.async_actions import async_action_spec
from svc.workers.worker import WorkerSpec

from . import sync
from .output import BadOutput, check

_encode = msgspec.json.encode
# Seconds after which a call held by a process that stopped renewing its claim (killed)
# is claimed again by another; README "Actions".
DEFAULT_LOCK_TIMEOUT_S = 60.0


async def store_call(
    db: Database, name: str, input_: Any, headers: list[tuple[str, str]], session: dict[str, str]
) -> str:
    """Insert a `created` call; returns its id (uuid text)."""
    async with db.transaction() as conn:
        found: str = await conn.fetchval(
            INSERT_CALL_SQL,
            name,
            _encode(input_).decode(),
            _encode([{"name": n, "value": v} for n, v in headers]).decode(),
            session_json(session),
        )
    return found


async def read_call(db: Database, call_id: str, session: dict[str, str], role: str) -> Any:
    """The stored call `{id, created_at, errors, output, …}` (decoded), or None when
    there is none or the role may not see it (another session's call)."""
    # the log is svc's catalog, written by the worker just now: a replica may lag
    (text,) = await db.query_json(READ_CALL_SQL, [call_id], 1, primary=True)
    row = msgspec.json.decode(text)
    if row is None:
        return None
    if not is_admin(role) and row.get("session_variables") != session:
        return None
    return row


def error_json(exc: SvcError) -> dict[str, Any]:
    """The stored form of a failed call's error (`{code, path, error}`)."""
    if isinstance(exc, sync.HandlerError):
        return exc.to_json()
    return {"code": str(exc.code), "path": "$", "error": exc.message}


StateOf = Callable[[], Awaitable[Any]]  # the engine's current `State`


def worker_spec(db: Database, state_of: StateOf) -> WorkerSpec:
    """The worker that delivers asynchronous calls with the engine's current state
    (`svc.workers.async_actions`; started by `svc.api.background`)."""

    async def deliver(row: dict[str, Any]) -> Any:
        return await _deliver(await state_of(), row)

    lock_timeout = async_actions_lock_timeout(DEFAULT_LOCK_TIMEOUT_S)
    return async_action_spec(db, deliver, _text, lock_timeout)


def _text(exc: SvcError) -> str:
    return _encode(error_json(exc)).decode()


async def _deliver(state: Any, row: dict[str, Any]) -> Any:
    """Call the handler for a stored call; its checked answer. Raises `SvcError` (the
    handler's, the call's, or `unexpected` for a missing action or a bad answer)."""
    name = row["action_name"]
    resolved = state.ir.actions.actions.get(name) if state.ir.actions is not None else None
    if resolved is None:
        raise SvcError("not-found", f'action "{name}" does not exist')
    headers = [(h["name"], h["value"]) for h in row.get("request_headers") or ()]
    session = row["session_variables"]
    call = sync.make_call(resolved.action, row["input_payload"], session, None, headers)
    value, _ = await sync.send(call)
    schema = state.schema(ADMIN_ROLE)
    output_type = schema.query_type.fields[name].type.fields["output"].type
    try:
        check(output_type, value)
    except BadOutput as exc:
        raise SvcError("unexpected", exc.message) from None
    return value
