"""Event delivery (spec 4.10; Hasura `Eventing/EventTrigger.hs`): the `svc.workers` spec
whose rows are `hdb_catalog.event_log` events. Each claimed event is POSTed to its
trigger's webhook (`svc.workers.delivery`), the attempt is logged in
`event_invocation_logs` and the event is marked delivered, due again after the retry
interval, or errored, in one statement that also releases its lock.

The body is the reference's: `{"id", "table": {"schema", "name"}, "trigger": {"name"},
"event": {"op", "data": {"old", "new"}, "session_variables"}, "delivery_info":
{"current_retry", "max_retries"}, "created_at"}`; with `--stringify-numeric-types` the
values of bigint/numeric columns are sent as strings (as the API returns them; numbers
are read as decimals, so no digit is lost). An event whose trigger this process does not
know (metadata not yet synced) or that is paused is put back for later without an
attempt.
"""

from __future__ import annotations

import asyncio
import decimal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from svc.catalog.event_log import (
    CLEANUP_SQL,
    DUE,
    EVENT_LOG_EXISTS_SQL,
    POSTPONE_SQL,
    RECORD_ATTEMPTS_SQL,
)
from svc.errors import SvcError
from svc.execute.db import TRANSIENT_ERRORS, Database
from svc.metadata.event_triggers import EventTrigger
from svc.metadata.model import Metadata
from svc.outbound import env_value, render_template, resolve_headers, transform
from svc.sql.claim import QueueTable
from svc.workers.delivery import DeliveryResult, RetryPolicy, deliver
from svc.workers.group_write import GroupWriter
from svc.workers.periodic import PeriodicSpec
from svc.workers.worker import Claimed, WorkerSpec

QUEUE = QueueTable(
    "hdb_catalog",
    "event_log",
    key="id",
    key_type="text",
    due=DUE,
    order=("next_retry_at", "created_at"),
)
RECORD_RETRY_PAUSES = (0.05, 0.2, 1.0)  # seconds before each rerun of a failed record
_decode_row = msgspec.json.Decoder(float_hook=decimal.Decimal)
_encode = msgspec.json.Encoder(decimal_format="number")


@dataclass(frozen=True, slots=True)
class TriggerInfo:
    """What delivery needs of a trigger: the metadata `trigger` and `stringified` (the
    columns of its table whose values are sent as strings; empty without
    `--stringify-numeric-types`)."""

    trigger: EventTrigger
    stringified: frozenset[str] = frozenset()


Lookup = Callable[[str], Awaitable[TriggerInfo | None]]


@dataclass(frozen=True, slots=True)
class EventOptions:
    """Worker options: `fetch_interval` (seconds, `--events-fetch-interval`),
    `batch_size` (`--events-fetch-batch-size`), `concurrency` (deliveries at once,
    `--events-http-pool-size`), `lock_timeout` (seconds before a lock not renewed is
    stale and the event is claimed again), `postpone` (seconds before an event of an
    unknown or paused trigger is tried again)."""

    fetch_interval: float = 1.0
    batch_size: int = 100
    concurrency: int = 100
    lock_timeout: float = 60.0
    postpone: float = 5.0


def _stringify(row: Any, names: frozenset[str]) -> Any:
    if not isinstance(row, dict) or not names:
        return row
    return {
        k: str(v)
        if k in names and isinstance(v, int | decimal.Decimal) and not isinstance(v, bool)
        else v
        for k, v in row.items()
    }


def event_body(row: dict[str, Any], info: TriggerInfo) -> dict[str, Any]:
    """The webhook body of an `event_log` row (as `row_to_json` gave it)."""
    event = dict(row["payload"])
    data = event.get("data")
    if isinstance(data, dict) and info.stringified:
        event["data"] = {k: _stringify(v, info.stringified) for k, v in data.items()}
    return {
        "id": row["id"],
        "table": {"schema": row["schema_name"], "name": row["table_name"]},
        "trigger": {"name": row["trigger_name"]},
        "event": event,
        "delivery_info": {
            "current_retry": row["tries"],
            "max_retries": info.trigger.retry_conf.num_retries,
        },
        "created_at": row["created_at"],
    }


def policy_of(trigger: EventTrigger) -> RetryPolicy:
    """The trigger's `retry_conf` as a delivery policy."""
    conf = trigger.retry_conf
    backoff = "constant" if conf.backoff is msgspec.UNSET else conf.backoff
    cap = None if conf.max_interval_sec is msgspec.UNSET else float(conf.max_interval_sec)
    return RetryPolicy(
        num_retries=conf.num_retries,
        interval_sec=float(conf.interval_sec),
        timeout_sec=float(conf.timeout_sec),
        backoff=backoff,
        max_interval_sec=cap,
    )


def webhook_url(trigger: EventTrigger) -> str:
    """The URL now: a `{{ENV}}` template rendered, or `webhook_from_env` read. Raises
    SvcError when a variable is not set."""
    if trigger.webhook_from_env is not msgspec.UNSET:
        return env_value(trigger.webhook_from_env)
    return render_template(str(trigger.webhook))


def _failed_resolution(exc: SvcError, body: Any, tries: int, policy: RetryPolicy) -> DeliveryResult:
    """An attempt that could not be made (a variable not set): a failure like no answer."""
    request = {"payload": body, "headers": [], "version": "2"}
    response = {"type": "client_error", "data": {"message": exc.message}, "version": "2"}
    if tries > policy.num_retries:
        return DeliveryResult("error", None, None, request, response, 0.0)
    return DeliveryResult("retry", None, policy.interval(tries), request, response, 0.0)


async def attempt(info: TriggerInfo, row: dict[str, Any]) -> DeliveryResult:
    """One delivery of event `row` with its trigger's configuration and request transform
    (`svc.outbound.transform`, applied by `deliver`)."""
    trigger = info.trigger
    body: Any = event_body(row, info)
    policy = policy_of(trigger)
    tries = int(row["tries"]) + 1
    try:
        url = webhook_url(trigger)
        headers = resolve_headers(trigger.header_confs())
        rt, rs = None, None
        if isinstance(trigger.request_transform, dict):
            rt = transform.parse_request_transform(trigger.request_transform)
        if isinstance(trigger.response_transform, dict):
            rs = transform.parse_response_transform(trigger.response_transform)
    except SvcError as exc:
        return _failed_resolution(exc, body, tries, policy)
    payload = _encode.encode(body)
    key = str(row["id"])
    return await deliver(
        url,
        headers,
        payload,
        tries=tries,
        policy=policy,
        idempotency_key=key,
        request_transform=rt,
        response_transform=rs,
    )


def _attempt_record(key: str, result: DeliveryResult) -> tuple[str | None, ...]:
    """One row of `RECORD_ATTEMPTS_SQL`'s arrays."""
    return (
        key,
        None if result.status is None else str(result.status),
        _encode.encode(result.request_log).decode(),
        _encode.encode(result.response_log).decode(),
        str(result.outcome == "success").lower(),
        str(result.outcome == "error").lower(),
        None if result.retry_in is None else str(result.retry_in),
    )


def event_worker_spec(
    db: Database, lookup: Lookup, options: EventOptions, name: str = "event-triggers"
) -> WorkerSpec:
    """The worker spec delivering the `event_log` of `db` (a source's database); `await
    lookup(trigger name)` gives the trigger's configuration in the latest metadata (None:
    unknown to this process now), so a trigger paused a moment ago by another worker is
    not delivered; `name`: the worker's (one per source)."""

    async def record(attempts: Sequence[tuple[str | None, ...]]) -> None:
        columns = [list(column) for column in zip(*attempts, strict=True)]
        # The webhooks were called: a write that fails for a moment is written again, not
        # given up (the worker would unlock the events and they would be sent twice).
        for pause in RECORD_RETRY_PAUSES:
            try:
                async with db.pool.acquire() as conn:
                    await conn.execute(RECORD_ATTEMPTS_SQL, *columns)
                return
            except TRANSIENT_ERRORS:
                await asyncio.sleep(pause)
        async with db.pool.acquire() as conn:
            await conn.execute(RECORD_ATTEMPTS_SQL, *columns)

    writer = GroupWriter(record, max_batch=max(options.batch_size, 1))

    async def handle(item: Claimed) -> None:
        row = _decode_row.decode(item.row)
        info = await lookup(row["trigger_name"])
        if info is None or info.trigger.paused is True:
            async with db.pool.acquire() as conn:
                await conn.execute(POSTPONE_SQL, item.key, str(options.postpone))
            return
        result = await attempt(info, row)
        await writer.write(_attempt_record(item.key, result))

    return WorkerSpec(
        name=name,
        queue=QUEUE,
        handle=handle,
        fetch_interval=options.fetch_interval,
        batch_size=options.batch_size,
        concurrency=options.concurrency,
        lock_timeout=options.lock_timeout,
        db=db,
    )


async def cleanup(db: Database, older_than: float) -> int:
    """Delete delivered, errored and archived events created more than `older_than`
    seconds ago (their invocation logs go with them); returns how many. 0 when there
    are no event tables."""
    async with db.pool.acquire() as conn:
        if not await conn.fetchval(EVENT_LOG_EXISTS_SQL):
            return 0
        return int(await conn.fetchval(CLEANUP_SQL, str(older_than)))


CLEANUP_EVERY = 3600.0  # seconds between two automatic cleanups (`--events-retention`)


def has_triggers(md: Metadata) -> bool:
    """Whether `md` has event triggers: the event worker runs only then (the event tables
    exist only then: `clear_metadata` drops them)."""
    return any(entry.event_triggers for entry in md.tables)


def cleanup_spec(db: Database, retention: float) -> PeriodicSpec:
    """Delete events finished more than `retention` seconds ago, at start and then once
    per `CLEANUP_EVERY`."""
    return PeriodicSpec("event-cleanup", CLEANUP_EVERY, lambda: cleanup(db, retention))
