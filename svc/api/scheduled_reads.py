"""Listing and deleting scheduled events and their invocation logs (the
reference's `get_scheduled_events`, `get_scheduled_event_invocations` and
`delete_scheduled_event`, Hasura `Hasura.RQL.DDL.ScheduledTrigger`).

`type` is `cron` or `one_off`; lists are paginated with `limit` (none: all) and `offset`
and carry `count` (every matching row) when `get_rows_count` is true.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from svc.api.op_context import Context, QueryBody
from svc.api.op_registry import SYNC_ONLY, Operation
from svc.catalog.scheduled import delete_event_sql, events_sql, invocations_sql
from svc.errors import ErrorCode, SvcError
from svc.metadata.args import parse_args

Kind = Literal["cron", "one_off"]


class Page(msgspec.Struct, frozen=True):
    """Pagination of a listing: `limit` rows (None: all) after `offset`; `get_rows_count`
    adds `count`."""

    limit: int | None = None
    offset: int = 0
    get_rows_count: bool = False


class GetScheduledEvents(Page, frozen=True):
    """`get_scheduled_events` args: `type`, `trigger_name` (cron), `status` (any of)."""

    type: Kind = "one_off"
    trigger_name: str | None = None
    status: tuple[str, ...] | None = None


class GetInvocations(Page, frozen=True):
    """`get_scheduled_event_invocations` args: `type`, `event_id`, `trigger_name` (cron)."""

    type: Kind = "one_off"
    event_id: str | None = None
    trigger_name: str | None = None


class DeleteScheduledEvent(msgspec.Struct, frozen=True):
    """`delete_scheduled_event` args."""

    type: Kind
    event_id: str


def _check_page(page: Page) -> None:
    if (page.limit is not None and page.limit < 0) or page.offset < 0:
        raise SvcError(
            ErrorCode.PARSE_FAILED, "limit and offset must not be negative", path="$.args"
        )


async def _listing(ctx: Context, sqls: tuple[str, str], key: str, page: Page, *filters: Any) -> Any:
    _check_page(page)
    limit = None if page.limit is None else str(page.limit)
    rows = await ctx.conn.fetchval(sqls[0], *filters, limit, str(page.offset))
    out: dict[str, Any] = {key: msgspec.json.decode(rows)}
    if page.get_rows_count:
        out["count"] = await ctx.conn.fetchval(sqls[1], *filters)
    return out


async def get_scheduled_events(ctx: Context, body: QueryBody) -> Any:
    """`{events: [...], count?}`, ordered by scheduled time; 400 `parse-failed`."""
    args = parse_args(GetScheduledEvents, body.args)
    statuses = None if args.status is None else list(args.status)
    return await _listing(ctx, events_sql(args.type), "events", args, args.trigger_name, statuses)


async def get_invocations(ctx: Context, body: QueryBody) -> Any:
    """`{invocations: [...], count?}`, newest first; 400 `parse-failed`."""
    args = parse_args(GetInvocations, body.args)
    return await _listing(
        ctx, invocations_sql(args.type), "invocations", args, args.event_id, args.trigger_name
    )


async def delete_scheduled_event(ctx: Context, body: QueryBody) -> Any:
    """Delete one event and its invocation logs; 400 `not-exists` when there is none."""
    args = parse_args(DeleteScheduledEvent, body.args)
    if await ctx.conn.fetchval(delete_event_sql(args.type), args.event_id) is None:
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"scheduled event with id: {args.event_id} does not exist",
            path="$.args",
        )
    return {"message": "success"}


# They take the metadata row lock as every writing operation does (`read_only=False`):
# `delete_scheduled_event` writes, and the listings have always run that way.
READ_OPERATIONS = [
    Operation(
        name="get_scheduled_events",
        handler=get_scheduled_events,
        args=GetScheduledEvents,
        read_only=False,
        checks=SYNC_ONLY,
    ),
    Operation(
        name="get_scheduled_event_invocations",
        handler=get_invocations,
        args=GetInvocations,
        read_only=False,
        checks=SYNC_ONLY,
    ),
    Operation(
        name="delete_scheduled_event",
        handler=delete_scheduled_event,
        args=DeleteScheduledEvent,
        read_only=False,
        checks=SYNC_ONLY,
    ),
]
