"""Point-in-time figures of one engine for `/v1/metrics`, read without
changing anything: the database connections (the asyncpg pool and the read path's
slots, `svc.execute.db`), live queries (`svc.api.live.registry.LiveQueries.counts`) and
the installed metadata version."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.api.live.registry import LiveQueries
from svc.catalog.queue_stats import EXISTING_SQL, QUEUES
from svc.execute.db import Database


@dataclass(frozen=True, slots=True)
class EngineStats:
    """`connections_open`: Postgres connections this process holds (pool + read path);
    `connections_in_use`: those running a statement or checked out now;
    `live_queries`, `cohorts`, `subscribers`: what the live-query engine holds now;
    `metadata_version`: the `resource_version` of the metadata being served;
    `inconsistent_objects`: how many objects of it are inconsistent;
    `replica_failures`: statements a read replica could not take since start."""

    connections_open: int
    connections_in_use: int
    live_queries: int
    cohorts: int
    subscribers: int
    metadata_version: int
    inconsistent_objects: int
    replica_failures: int = 0


def engine_stats(db: Database, live: LiveQueries, version: int, inconsistent: int) -> EngineStats:
    """Read the figures from `db` and `live`; `version` and `inconsistent` come from the
    engine's installed state."""
    pool: Any = db.pool
    pool_size, pool_idle = pool.get_size(), pool.get_idle_size()
    read_open = len(db.reads.opened)
    # opened connections not waiting in the idle queue run a statement (or settle one)
    waiting = getattr(db.reads.idle, "_queue", ())
    read_busy = max(0, read_open - sum(1 for c in waiting if c is not None))
    queries, cohorts, subscribers = live.counts()
    return EngineStats(
        connections_open=pool_size + read_open,
        connections_in_use=(pool_size - pool_idle) + read_busy,
        live_queries=queries,
        cohorts=cohorts,
        subscribers=subscribers,
        metadata_version=version,
        inconsistent_objects=inconsistent,
        replica_failures=db.replica_failures,
    )


async def queue_counts(db: Database) -> dict[str, tuple[int, int]]:
    """`{kind: (pending, failed)}` of the background queues whose tables exist
    (`svc.catalog.queue_stats`: event triggers, cron and one-off scheduled events,
    asynchronous actions); read-only. Raises `SvcError` 500 `postgres-error` when
    Postgres cannot be reached."""
    out: dict[str, tuple[int, int]] = {}
    async with db.transaction(read_only=True) as conn:
        existing = await conn.fetchrow(EXISTING_SQL)
        for (kind, sql), present in zip(QUEUES.items(), existing, strict=True):
            if present:
                pending, failed = await conn.fetchrow(sql)
                out[kind] = (int(pending), int(failed))
    return out
