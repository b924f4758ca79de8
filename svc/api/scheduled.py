"""Metadata operations of cron triggers and one-off scheduled events (issue 15; spec 4.9,
reference-notes-wave2 §3), and the start of their delivery workers.

Cron triggers live in the metadata document (`svc.metadata.cron_triggers`); their events
and the one-off events are rows of `hdb_catalog` (`svc.catalog.scheduled`), written in
the request's own transaction, so a refused operation leaves both unchanged. The IR does
not depend on cron triggers: an operation swaps the document without rebuilding it.
`with_scheduled_operations` also wraps three existing operations with the reference's
rules: `export_metadata` leaves out triggers created with `include_in_metadata: false`,
and `replace_metadata`/`clear_metadata` keep them (an export never had them), dropping
the events of the triggers that went and regenerating those that are new or changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from svc.api.scheduled_reads import READ_OPERATIONS
from svc.catalog.scheduled import INIT_LOCK_SQL, INIT_SQL, INSERT_SCHEDULED_EVENT_SQL
from svc.errors import ErrorCode, SvcError
from svc.execute.db import Database
from svc.metadata import cron_triggers as ct
from svc.metadata.args import parse_args
from svc.metadata.model import Metadata
from svc.workers import cron_events
from svc.workers.scheduled import worker_specs

if TYPE_CHECKING:
    from svc.api.engine import Engine
    from svc.api.metadata import Context, QueryBody

    Handler = Callable[[Context, QueryBody], Awaitable[Any]]

SUCCESS = {"message": "success"}
_encode = msgspec.json.encode


def _set_triggers(ctx: Context, triggers: tuple[ct.CronTrigger, ...]) -> None:
    ctx.metadata = msgspec.structs.replace(ctx.metadata, cron_triggers=triggers)
    ctx.metadata_changed = True


async def create_cron_trigger(ctx: Context, body: QueryBody) -> Any:
    """Add a trigger (or replace one with `replace: true`) and store its next 100 times.
    Errors: 400 `parse-failed` (shape, cron expression, headers), `already-exists`,
    `not-exists` (`ct.add_cron_trigger`)."""
    args = parse_args(ct.CreateCronTrigger, body.args)
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
    )
    return {**SUCCESS, "event_id": event_id}


async def get_cron_triggers(ctx: Context, body: QueryBody) -> Any:
    """`{cron_triggers: [...]}`: every trigger, exported or not, with its `retry_conf`
    filled with the defaults (`ct.listed`)."""
    return {"cron_triggers": [ct.listed(t) for t in ctx.metadata.cron_triggers]}


def _exporting(inner: Handler) -> Handler:
    async def handler(ctx: Context, body: QueryBody) -> Any:
        out = await inner(ctx, body)
        doc = out.get("metadata") if isinstance(out.get("metadata"), dict) else out
        ct.exported(doc)
        return out

    return handler


def _keeping(inner: Handler) -> Handler:
    async def handler(ctx: Context, body: QueryBody) -> Any:
        old = ctx.metadata.cron_triggers
        out = await inner(ctx, body)
        kept = ct.keep_unexported(old, ctx.metadata.cron_triggers)
        if kept != ctx.metadata.cron_triggers:
            _set_triggers(ctx, kept)
        await cron_events.follow_replace(ctx.conn, old, kept)
        return out

    return handler


def with_scheduled_operations(ops: dict[str, Handler]) -> dict[str, Handler]:
    """The scheduled-trigger operations, and `export_metadata`, `replace_metadata` and
    `clear_metadata` of `ops` wrapped with the cron-trigger rules (module doc); for
    `OPERATIONS.update(...)`."""
    return {
        "create_cron_trigger": create_cron_trigger,
        "delete_cron_trigger": delete_cron_trigger,
        "create_scheduled_event": create_scheduled_event,
        "get_cron_triggers": get_cron_triggers,
        **READ_OPERATIONS,
        "export_metadata": _exporting(ops["export_metadata"]),
        "replace_metadata": _keeping(ops["replace_metadata"]),
        "clear_metadata": _keeping(ops["clear_metadata"]),
    }


async def start_scheduled(engine: Engine) -> None:
    """Create the `hdb_catalog` tables of scheduled triggers if missing (serialised
    across processes starting at once) and start the two delivery workers on `engine`
    (`svc.workers.scheduled`; each reads the engine's current metadata)."""
    db: Database = engine.db
    async with db.transaction() as conn:
        await conn.execute(INIT_LOCK_SQL)
        await conn.execute(INIT_SQL)

    def metadata() -> Metadata:
        return engine.state.metadata

    engine.start_workers(worker_specs(db, metadata))
