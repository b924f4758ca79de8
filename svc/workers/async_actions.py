"""The worker delivering asynchronous action calls (`hdb_catalog.hdb_action_log`; README
"Actions"): claims `created` calls, and `processing` ones whose holder died (their lock
went stale), marks each `processing`, asks `deliver(row)` for the checked answer and
stores it (`completed`) or the error (`error`). What a delivery does (calling the
handler, checking the output type) is the API's (`svc.api.actions.async_calls.deliver`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from svc.catalog.action_log import COMPLETE_SQL, FAIL_SQL, PROCESSING_SQL
from svc.errors import SvcError
from svc.execute.db import Database
from svc.sql.claim import QueueTable
from svc.workers.worker import Claimed, WorkerSpec

_encode = msgspec.json.encode
QUEUE = QueueTable(
    "hdb_catalog",
    "hdb_action_log",
    key="id",
    key_type="uuid",
    due="status IN ('created', 'processing')",
    order=("created_at",),
)
FETCH_INTERVAL_S = 1.0  # the reference's ASYNC_ACTIONS_FETCH_INTERVAL default (1,000 ms)
BATCH = 10  # calls claimed at once (the reference claims 10)

# The stored call (decoded) → the checked answer; raises `SvcError` for a failed call.
Deliver = Callable[[dict[str, Any]], Awaitable[Any]]
# A failed call's error → its stored JSON text (`{code, path, error}`).
ErrorText = Callable[[SvcError], str]


async def _execute(db: Database, sql: str, *args: str) -> None:
    async with db.transaction() as conn:
        await conn.execute(sql, *args)


def async_action_spec(
    db: Database, deliver: Deliver, error_text: ErrorText, lock_timeout: float
) -> WorkerSpec:
    """The `async_actions` worker: `lock_timeout` seconds after which a call held by a
    process that stopped renewing its claim (killed) is claimed again by another."""

    async def handle(item: Claimed) -> None:
        row = msgspec.json.decode(item.row)
        await _execute(db, PROCESSING_SQL, item.key)
        try:
            output = await deliver(row)
        except SvcError as exc:
            await _execute(db, FAIL_SQL, item.key, error_text(exc))
            return
        await _execute(db, COMPLETE_SQL, item.key, _encode(output).decode())

    return WorkerSpec(
        "async_actions",
        QUEUE,
        handle,
        fetch_interval=FETCH_INTERVAL_S,
        batch_size=BATCH,
        concurrency=BATCH,
        lock_timeout=lock_timeout,
    )
