"""The cron generator: the rows of `hdb_catalog.hdb_cron_events` that each cron trigger's
schedule asks for (reference-notes §"Scheduled triggers": at least the next 100
times per trigger).

Times come from croniter (`svc.metadata.cron_triggers.schedule_times`), continuing after
the latest time stored for the trigger (or now), and are inserted `ON CONFLICT DO
NOTHING` on the unique `(trigger_name, scheduled_time)`: processes generating at once
compute the same times and each time is stored once. The metadata operations generate
in their own transaction (create, replace, `replace_metadata`); the delivery worker tops
a trigger up after each of its events, so a trigger always has `KEEP` future events.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from svc.catalog.scheduled import (
    CRON_HORIZON_SQL,
    DROP_CRON_EVENTS_SQL,
    INSERT_CRON_EVENTS_IF_STORED_SQL,
    INSERT_CRON_EVENTS_SQL,
)
from svc.metadata.cron_triggers import CronTrigger, schedule_times

KEEP = 100  # future events kept per trigger (the reference's generator keeps 100)


def _parse(text: str) -> datetime:
    """A timestamptz as Postgres prints it (`2026-01-01 10:00:00+00`) → aware datetime."""
    return datetime.fromisoformat(text.replace(" ", "T"))


async def top_up(
    conn: Any, trigger: CronTrigger, now: datetime | None = None, *, if_stored: bool = False
) -> int:
    """Store the next times of `trigger` until it has `KEEP` undelivered future events;
    returns how many times were computed (rows another process stored first are
    skipped). `conn`: an asyncpg connection (in the caller's transaction, if any); `now`:
    an aware UTC datetime, default the current time; `if_stored`: store nothing unless
    the stored metadata still has the trigger (the delivery worker, outside any
    metadata transaction)."""
    now = now or datetime.now(UTC)
    row = await conn.fetchrow(CRON_HORIZON_SQL, trigger.name)
    missing = KEEP - int(row[0])
    if missing <= 0:
        return 0
    after = now if row[1] is None else max(now, _parse(row[1]))
    times = schedule_times(trigger.schedule, after, missing)
    insert = INSERT_CRON_EVENTS_IF_STORED_SQL if if_stored else INSERT_CRON_EVENTS_SQL
    await conn.execute(insert, trigger.name, [t.isoformat() for t in times])
    return len(times)


async def drop_events(conn: Any, name: str, *, future_only: bool = False) -> None:
    """Delete the undelivered events of trigger `name` that no process holds (with
    `future_only`, only those after now). A held one is finished by its holder."""
    await conn.execute(DROP_CRON_EVENTS_SQL, name, "true" if future_only else "false")


async def regenerate(conn: Any, trigger: CronTrigger) -> None:
    """A created or changed trigger: its future events dropped, the next `KEEP` stored
    (strictly after now, as `create_cron_trigger` with `replace` does in the reference)."""
    await drop_events(conn, trigger.name, future_only=True)
    await top_up(conn, trigger)


async def follow_replace(
    conn: Any, old: tuple[CronTrigger, ...], new: tuple[CronTrigger, ...]
) -> None:
    """Events after the cron triggers went from `old` to `new` (`replace_metadata`,
    `clear_metadata`): a trigger gone loses its undelivered events, a new or changed
    one is regenerated, an unchanged one is topped up."""
    before = {t.name: t for t in old}
    names = {t.name for t in new}
    for name in before.keys() - names:
        await drop_events(conn, name)
    for trigger in new:
        if before.get(trigger.name) == trigger:
            await top_up(conn, trigger)
        else:
            await regenerate(conn, trigger)
