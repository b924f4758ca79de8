"""The process's live queries: one `LiveQuery` per (role, multiplexed statement,
time limit), created with its first subscriber and closed with its last.

Bounds: each live query holds one poller task and its cohorts; each subscriber a handle
(and a sender task only while a push is pending). Nothing caps the number of subscribers
per worker: the transport's per-connection operation limit and the number of connections
bound them; `bench.subscriptions` measures 5,000 on one worker.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from svc.api.live.handle import LiveHandle
from svc.api.live.poller import LiveQuery
from svc.api.live.watch import WriteWatch, parse_payload
from svc.execute.db import Database
from svc.sql.live import LiveStatement


class LiveQueries:
    """Live queries of one engine. `interval`: seconds between polls
    (`--live-queries-multiplexed-refetch-interval` / 1000); `batch_size`: cohorts per
    statement (`--live-queries-multiplexed-batch-size`); `stream_interval` and
    `stream_batch_size`: the same for streams (the live queries' until
    `svc.api.live.stream.configure_streams` sets them)."""

    def __init__(
        self, db: Database, *, interval: float, batch_size: int, skip_idle: str = "off"
    ) -> None:
        """`skip_idle`: `SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE` (`svc.api.live.watch.MODES`;
        ValueError otherwise); with `mutations`, this engine's mutations announce the
        tables they wrote."""
        self.db = db
        self.interval = interval
        self.batch_size = batch_size
        self.stream_interval = interval
        self.stream_batch_size = batch_size
        self.queries: dict[Any, LiveQuery] = {}
        self.watch = WriteWatch(skip_idle)
        if skip_idle == "mutations":
            db.announces_writes = True

    @property
    def listens(self) -> bool:
        """Whether the listener should `LISTEN svc_live` and hand notifications to
        `touched` (a skip-idle mode is on)."""
        return self.watch.mode != "off"

    def touched(self, payload: str | None) -> None:
        """A `svc_live` notification's payload (None: the listener connected or lost its
        connection, so anything may have been missed): mark the live queries reading a
        named table as written."""
        tables = None if payload is None else parse_payload(payload)
        for query in self.queries.values():
            query.touched(tables)

    def add(
        self,
        role: str,
        live: LiveStatement,
        timeout: float | None,
        vars_text: str,
        handle: LiveHandle,
        *,
        admin: bool,
        db: Database,
    ) -> None:
        """Subscribe `handle` to `live` with the cohort variables `vars_text`
        (`svc.api.live.cohort.cohort_vars`), polled on `db` (its plan's source's);
        `handle.stop()` unsubscribes it."""
        key = (role, live.sql, timeout, db)
        query = self.queries.get(key)
        if query is None:
            query = LiveQuery(
                db,
                live,
                timeout=timeout,
                admin=admin,
                interval=self.interval,
                batch_size=self.batch_size,
                watch=self.watch,
            )
            self.queries[key] = query
        cohort = query.join(vars_text, handle)

        def release(h: LiveHandle) -> Awaitable[None] | None:
            if query.leave(cohort, h) and self.queries.get(key) is query:
                del self.queries[key]
                return query.close()
            return None

        handle.release = release

    def skipped(self) -> int:
        """Interval polls skipped as idle so far by the live queries held now (tests)."""
        return sum(q.skipped for q in self.queries.values())

    def counts(self) -> tuple[int, int, int]:
        """(live queries, cohorts, subscribers) held now (tests and leak checks)."""
        queries = list(self.queries.values())
        cohorts = sum(len(q.cohorts) for q in queries)
        return len(queries), cohorts, sum(q.subscribers for q in queries)

    async def close(self) -> None:
        """Stop every poller (the engine is closing); subscribers get nothing more."""
        queries, self.queries = list(self.queries.values()), {}
        for query in queries:
            await query.close()
