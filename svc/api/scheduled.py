"""Metadata operations of cron triggers and one-off scheduled events (spec 4.9,
reference-notes-wave2 §3; their delivery workers are `svc.workers.scheduled`).

Cron triggers live in the metadata document (`svc.metadata.cron_triggers`); their events
and the one-off events are rows of `hdb_catalog` (`svc.catalog.scheduled`), written in
the request's own transaction, so a refused operation leaves both unchanged. The IR does
not depend on cron triggers: an operation swaps the document without rebuilding it.
Two checks (`svc.api.op_registry.Check`) give other operations the reference's rules:
`export_metadata` leaves out triggers created with `include_in_metadata: false`
(`CRON_EXPORT`), and `replace_metadata`/`clear_metadata` keep them (an export never had
them), dropping the events of the triggers that went and regenerating those that are new
or changed (`CRON_KEEP`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from svc.api.op_context import SUCCESS, Before, Context, QueryBody
from svc.api.op_registry import SYNC_ONLY, Operation
from svc.api.scheduled_reads import READ_OPERATIONS
from svc.catalog.scheduled import INSERT_SCHEDULED_EVENT_SQL
from svc.errors import ErrorCode, SvcError
from svc.metadata import cron_triggers as ct
from svc.metadata.args import parse_args
from svc.outbound.transform import check_transforms
from svc.workers import cron_events

_encode = msgspec.json.encode


def _set_triggers(ctx: Context, triggers: tuple[ct.CronTrigger, ...]) -> None:
    ctx.metadata = msgspec.structs.replace(ctx.metadata, cron_triggers=triggers)
    ctx.metadata_changed = True


def _given(value: Any) -> Any:
    return None if value is msgspec.UNSET else value


async def create_cron_trigger(ctx: Context, body: QueryBody) -> Any:
    """Add a trigger (or replace one with `replace: true`) and store its next 100 times.
    Errors: 400 `parse-failed` (shape, cron expression, headers), `already-exists`,
    `not-exists` (`ct.add_cron_trigger`)."""
    args = parse_args(ct.CreateCronTrigger, body.args)
    check_transforms(_given(args.request_transform), _given(args.response_transform))
    trigger = ct.normalise(args)
    _set_triggers(ctx, ct.add_cron_trigger(ctx.metadata.cron_triggers, trigger, args.replace))
    await cron_events.regenerate(ctx.conn, trigger)
    return SUCCESS


async def delete_cron_trigger(ctx: Context, body: QueryBody) -> Any:
    """Remove a trigger and its undelivered events (spec 3); 400 `not-exists`."""
    args = parse_args(ct.DeleteCronTrigger, body.args)
    _set_triggers(ctx, ct.drop_cron_trigger(ctx.metadata.cron_triggers, args.name))
    await cron_events.drop_events(ctx.conn, args.name)
    return SUCCESS


def _schedule_at(text: str) -> datetime:
    """An ISO 8601 time (`Z` or an offset; none means UTC); 400 `parse-failed` at
    `$.args.schedule_at` otherwise."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            f"could not parse timestamp: {text!r}",
            path="$.args.schedule_at",
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


async def create_scheduled_event(ctx: Context, body: QueryBody) -> Any:
    """Store a one-off event; answers `{message: "success", event_id}` (Hasura
    `runCreateScheduledEvent`). A time in the past is accepted (beyond its tolerance the
    event ends `dead`). Errors: 400 `parse-failed`."""
    args = parse_args(ct.CreateScheduledEvent, body.args)
    ct.check_scheduled_event(args)
    when = _schedule_at(args.schedule_at)
    event_id = await ctx.conn.fetchval(
        INSERT_SCHEDULED_EVENT_SQL,
        _encode(args.webhook).decode(),
        when.isoformat(),
        _encode(args.retry_conf).decode(),
        _encode(args.payload).decode(),
        _encode(args.headers).decode(),
        args.comment,
        None if args.request_transform is None else _encode(args.request_transform).decode(),
        None if args.response_transform is None else _encode(args.response_transform).decode(),
    )
    return {**SUCCESS, "event_id": event_id}


async def get_cron_triggers(ctx: Context, body: QueryBody) -> Any:
    """`{cron_triggers: [...]}`: every trigger, exported or not, with its `retry_conf`
    filled with the defaults (`ct.listed`)."""
    return {"cron_triggers": [ct.listed(t) for t in ctx.metadata.cron_triggers]}


async def export_crons(ctx: Context, body: QueryBody, before: Before, result: Any) -> Any:
    """`Check.CRON_EXPORT`: the exported document (or version 2's `metadata`) without the
    triggers created with `include_in_metadata: false`."""
    doc = result.get("metadata") if isinstance(result.get("metadata"), dict) else result
    ct.exported(doc)
    return result


async def keep_crons(ctx: Context, body: QueryBody, before: Before, result: Any) -> Any:
    """`Check.CRON_KEEP`: triggers not exported survive a replace; events of the triggers
    that went are dropped, those of new or changed ones regenerated."""
    old = before.metadata.cron_triggers
    kept = ct.keep_unexported(old, ctx.metadata.cron_triggers)
    if kept != ctx.metadata.cron_triggers:
        _set_triggers(ctx, kept)
    await cron_events.follow_replace(ctx.conn, old, kept)
    return result


def _op(name: str, kind: Any, handler: Any) -> Operation:
    return Operation(name=name, handler=handler, args=kind, read_only=False, checks=SYNC_ONLY)


OPERATIONS = [
    _op("create_cron_trigger", ct.CreateCronTrigger, create_cron_trigger),
    _op("delete_cron_trigger", ct.DeleteCronTrigger, delete_cron_trigger),
    _op("create_scheduled_event", ct.CreateScheduledEvent, create_scheduled_event),
    _op("get_cron_triggers", None, get_cron_triggers),
    *READ_OPERATIONS,
]
"""The scheduled-trigger operations (no `pg_` spelling)."""
