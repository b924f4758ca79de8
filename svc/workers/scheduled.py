"""Delivery of cron events and one-off scheduled events (spec 6.2,
reference-notes-wave2 §3): two `WorkerSpec`s over `hdb_cron_events` and
`hdb_scheduled_events`, run by the worker runtime (claims `FOR UPDATE SKIP LOCKED`).

Per claimed event: an event whose due time lies more than `tolerance_seconds` in the past
is marked `dead` without a call; otherwise one attempt goes through
`svc.workers.delivery.deliver` (the body below, the configured headers, the retry
configuration's timeout), its invocation log and outcome are written in one transaction
(`delivered`; `scheduled` again with `next_retry_at` while retries are left; `error`),
and a cron trigger is topped up to its next 100 times (`svc.workers.cron_events`).

Bodies (Hasura `ScheduledEventWebhookPayload`, null keys left out): cron `{id, name,
scheduled_time, payload, comment}`; one-off `{id, scheduled_time, payload, comment,
created_at}`; times in UTC ISO 8601 with `Z`. Invocation logs are version "1".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from svc.catalog.scheduled import (
    DROP_ORPHAN_CRON_EVENT_SQL,
    DUE,
    dead_sql,
    finish_sql,
    log_sql,
)
from svc.errors import SvcError
from svc.execute.db import Database
from svc.metadata.cron_triggers import CronTrigger, RetryConfST, UrlFromEnv, find_cron_trigger
from svc.metadata.model import Metadata
from svc.outbound import HeaderConf, env_value, render_template, resolve_headers, transform
from svc.sql.claim import QueueTable
from svc.workers.cron_events import top_up
from svc.workers.delivery import DeliveryResult, RetryPolicy, deliver
from svc.workers.worker import Claimed, WorkerSpec

FETCH_INTERVAL = 1.0  # seconds between claims when nothing is due (the reference's 1 s)
LOCK_TIMEOUT = 20.0  # a SIGKILLed holder's events are claimed again after this
CRON_QUEUE = QueueTable(
    "hdb_catalog", "hdb_cron_events", due=DUE, order=("scheduled_time", "created_at")
)
ONE_OFF_QUEUE = QueueTable(
    "hdb_catalog", "hdb_scheduled_events", due=DUE, order=("scheduled_time", "created_at")
)


class CronRow(msgspec.Struct):
    """A claimed `hdb_cron_events` row (timestamps as `row_to_json` prints them)."""

    id: str
    trigger_name: str
    scheduled_time: str
    tries: int


class OneOffRow(msgspec.Struct):
    """A claimed `hdb_scheduled_events` row."""

    id: str
    webhook_conf: str | UrlFromEnv
    scheduled_time: str
    created_at: str
    tries: int
    retry_conf: RetryConfST | None = None
    payload: Any = None
    header_conf: tuple[HeaderConf, ...] | None = None
    comment: str | None = None
    request_transform: dict[str, Any] | None = None
    response_transform: Any = None


def utc_text(timestamp: str) -> str:
    """`2026-01-01T10:00:00.5+00:00` (UTC, as svc's connections print it) → `…0.5Z`."""
    return timestamp.removesuffix("+00:00") + "Z" if timestamp.endswith("+00:00") else timestamp


def webhook_url(webhook: str | UrlFromEnv) -> str:
    """The URL to call now: a `{{ENV}}` template rendered, or `{from_env}` read. Raises
    SvcError (400 `unexpected` / `not-found`, `svc.outbound.templates`) when the
    environment lacks a variable."""
    if isinstance(webhook, UrlFromEnv):
        return env_value(webhook.from_env)
    return render_template(webhook)


def _without_nulls(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


async def _attempt(
    webhook: str | UrlFromEnv,
    headers: tuple[HeaderConf, ...],
    body: dict[str, Any],
    tries: int,
    retry: RetryConfST,
    request_transform: Any = None,
    response_transform: Any = None,
) -> DeliveryResult:
    """One call; an environment variable missing for the URL or a header is a failed
    attempt logged as `client_error` (retried like any other failure). A
    `request_transform` (the stored JSON) is applied by `deliver`; one that fails ends
    the event `error` (the reference's `SESError`); a `response_transform` rewrites the
    logged answer."""
    policy = RetryPolicy(
        num_retries=retry.num_retries,
        interval_sec=float(retry.retry_interval_seconds),
        timeout_sec=float(max(retry.timeout_seconds, 1)),
    )
    try:
        url, pairs = webhook_url(webhook), resolve_headers(headers)
        rt, rs = None, None
        if isinstance(request_transform, dict):
            rt = transform.parse_request_transform(request_transform)
        if isinstance(response_transform, dict):
            rs = transform.parse_response_transform(response_transform)
    except SvcError as exc:
        request = {"payload": body, "headers": [], "version": "1"}
        response = {"type": "client_error", "data": {"message": exc.message}, "version": "1"}
        if tries > retry.num_retries:
            return DeliveryResult("error", None, None, request, response, 0.0)
        return DeliveryResult("retry", None, policy.interval(tries), request, response, 0.0)
    return await deliver(
        url,
        pairs,
        body,
        tries=tries,
        policy=policy,
        log_version="1",
        request_transform=rt,
        response_transform=rs,
    )


async def _record(db: Database, table: str, event_id: str, tries: int, r: DeliveryResult) -> None:
    """The invocation log and the event's new state, in one transaction."""
    status = {"success": "delivered", "retry": "scheduled", "error": "error"}[r.outcome]
    retry_in = None if r.retry_in is None else str(r.retry_in)
    logs = (
        "hdb_cron_event_invocation_logs"
        if table == "hdb_cron_events"
        else ("hdb_scheduled_event_invocation_logs")
    )
    async with db.transaction() as conn:
        await conn.execute(
            log_sql(logs),
            event_id,
            None if r.status is None else str(r.status),
            msgspec.json.encode(r.request_log).decode(),
            msgspec.json.encode(r.response_log).decode(),
        )
        await conn.execute(finish_sql(table), event_id, status, str(tries), retry_in)


async def _dead(db: Database, table: str, event_id: str, tolerance: int) -> bool:
    async with db.pool.acquire() as conn:
        return await conn.fetchval(dead_sql(table), event_id, str(tolerance)) is not None


def cron_handler(db: Database, metadata: Callable[[], Metadata]) -> Callable[[Claimed], Any]:
    """The handle of the cron worker; `metadata()` gives the process's current document
    (the trigger's webhook, headers, payload and retries are read from it when the event
    is delivered, as the reference reads its schema cache)."""

    async def handle(item: Claimed) -> None:
        row = msgspec.json.decode(item.row, type=CronRow)
        trigger = find_cron_trigger(metadata().cron_triggers, row.trigger_name)
        if trigger is None:
            await _orphan(db, row)
            return
        if not await _dead(db, "hdb_cron_events", row.id, trigger.retry.tolerance_seconds):
            body: dict[str, Any] = {
                "id": row.id,
                "name": trigger.name,
                "scheduled_time": utc_text(row.scheduled_time),
                "payload": None if trigger.payload is msgspec.UNSET else trigger.payload,
                "comment": None if trigger.comment is msgspec.UNSET else trigger.comment,
            }
            tries = row.tries + 1
            rt = None if trigger.request_transform is msgspec.UNSET else trigger.request_transform
            rs = None if trigger.response_transform is msgspec.UNSET else trigger.response_transform
            result = await _attempt(
                trigger.webhook, trigger.headers, _without_nulls(body), tries, trigger.retry, rt, rs
            )
            await _record(db, "hdb_cron_events", row.id, tries, result)
        await _top_up(db, trigger)

    return handle


async def _orphan(db: Database, row: CronRow) -> None:
    """An event of a trigger this process does not know: deleted when the stored metadata
    has no such trigger either; otherwise this process has not loaded it yet, and the
    event is released to be claimed again (raising unlocks it)."""
    async with db.pool.acquire() as conn:
        gone = await conn.fetchval(DROP_ORPHAN_CRON_EVENT_SQL, row.id, row.trigger_name)
    if gone is None:
        raise RuntimeError(f"cron trigger {row.trigger_name!r} is not loaded yet")


async def _top_up(db: Database, trigger: CronTrigger) -> None:
    async with db.pool.acquire() as conn:
        await top_up(conn, trigger, if_stored=True)


def one_off_handler(db: Database) -> Callable[[Claimed], Any]:
    """The handle of the one-off worker: everything it needs is stored with the event."""

    async def handle(item: Claimed) -> None:
        row = msgspec.json.decode(item.row, type=OneOffRow)
        retry = row.retry_conf or RetryConfST()
        if await _dead(db, "hdb_scheduled_events", row.id, retry.tolerance_seconds):
            return
        body = {
            "id": row.id,
            "scheduled_time": utc_text(row.scheduled_time),
            "payload": row.payload,
            "comment": row.comment,
            "created_at": utc_text(row.created_at),
        }
        tries = row.tries + 1
        result = await _attempt(
            row.webhook_conf,
            row.header_conf or (),
            _without_nulls(body),
            tries,
            retry,
            row.request_transform,
            row.response_transform,
        )
        await _record(db, "hdb_scheduled_events", row.id, tries, result)

    return handle


def worker_specs(db: Database, metadata: Callable[[], Metadata]) -> list[WorkerSpec]:
    """The two workers (`scheduled-cron`, `scheduled-one-off`; `svc.api.background`)."""
    common: dict[str, Any] = {
        "fetch_interval": FETCH_INTERVAL,
        "batch_size": 100,
        "concurrency": 20,
        "lock_timeout": LOCK_TIMEOUT,
    }
    return [
        WorkerSpec("scheduled-cron", CRON_QUEUE, cron_handler(db, metadata), **common),
        WorkerSpec("scheduled-one-off", ONE_OFF_QUEUE, one_off_handler(db), **common),
    ]
