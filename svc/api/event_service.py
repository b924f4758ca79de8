"""Event delivery in one process: runs the `svc.workers.events` worker while the
current metadata has event triggers (the event tables exist only then: `clear_metadata`
drops them), and answers the worker's trigger lookups from the engine's current state.

`start(engine)` after the engine started (every `svc serve` worker process runs one:
claims use `FOR UPDATE SKIP LOCKED`, so processes and instances share the queue);
`await stop(engine)` first thing at shutdown (the worker stops claiming, unlocks rows
not started, lets running deliveries finish for up to 10 s).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from svc.metadata.event_triggers import all_triggers
from svc.workers.events import EventOptions, TriggerInfo, cleanup, event_worker_spec
from svc.workers.runtime import DEFAULT_STOP_TIMEOUT
from svc.workers.worker import Worker

if TYPE_CHECKING:
    from svc.api.engine import Engine

_running: dict[int, EventDelivery] = {}
CLEANUP_EVERY = 3600.0  # seconds between two automatic cleanups (`--events-retention`)


def options_of(config: Any) -> EventOptions:
    """The worker options from the server configuration (`svc.config.Config`)."""
    return EventOptions(
        fetch_interval=config.events_fetch_interval,
        batch_size=config.events_fetch_batch_size,
        concurrency=config.events_http_pool_size,
        lock_timeout=config.events_lock_timeout,
    )


class EventDelivery:
    """The supervisor of one engine's event worker."""

    def __init__(self, engine: Engine, options: EventOptions) -> None:
        self.engine = engine
        self.options = options
        self.worker: Worker | None = None
        self._task: asyncio.Task[None] | None = None
        self._cache: tuple[Any, dict[str, TriggerInfo]] = (None, {})
        self._cleaned = -CLEANUP_EVERY

    def lookup(self, name: str) -> TriggerInfo | None:
        """The trigger called `name` in the current metadata (None when unknown)."""
        state = self.engine.state
        if self._cache[0] is not state:
            self._cache = (state, self._infos(state))
        return self._cache[1].get(name)

    def _infos(self, state: Any) -> dict[str, TriggerInfo]:
        stringify = self.engine.config.stringify_numeric_types
        out: dict[str, TriggerInfo] = {}
        for table, trigger in all_triggers(state.metadata):
            ir_table = state.ir.tables.get(table)
            names: frozenset[str] = frozenset()
            if stringify and ir_table is not None:
                names = frozenset(c.name for c in ir_table.columns if c.stringifiable)
            out[trigger.name] = TriggerInfo(trigger, names)
        return out

    def start(self) -> None:
        """Start supervising on the running loop."""
        self._task = asyncio.create_task(self._loop(), name="event delivery")

    async def _loop(self) -> None:
        spec = event_worker_spec(self.engine.db, self.lookup, self.options)
        while True:
            wanted = any(e.event_triggers for e in self.engine.state.metadata.tables)
            if wanted and self.worker is None:
                self.worker = Worker(self.engine.db, spec)
                self.worker.start()
            elif not wanted and self.worker is not None:
                worker, self.worker = self.worker, None
                await worker.stop(DEFAULT_STOP_TIMEOUT)
            await self._cleanup()
            await asyncio.sleep(min(self.options.fetch_interval, 1.0))

    async def _cleanup(self) -> None:
        """Delete old finished events once per `CLEANUP_EVERY` when a retention is set."""
        retention = self.engine.config.events_retention
        now = asyncio.get_running_loop().time()
        if retention <= 0 or now - self._cleaned < CLEANUP_EVERY or self.worker is None:
            return
        self._cleaned = now
        with contextlib.suppress(Exception):  # Postgres away: the next hour tries again
            await cleanup(self.engine.db, retention)

    async def stop(self) -> None:
        """Stop the supervisor, then the worker (see `Worker.stop`)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.worker is not None:
            worker, self.worker = self.worker, None
            await worker.stop(DEFAULT_STOP_TIMEOUT)


def start(engine: Engine) -> EventDelivery:
    """Start event delivery for `engine` (idempotent)."""
    found = _running.get(id(engine))
    if found is None:
        found = _running[id(engine)] = EventDelivery(engine, options_of(engine.config))
        found.start()
    return found


async def stop(engine: Engine) -> None:
    """Stop `engine`'s event delivery, if any."""
    found = _running.pop(id(engine), None)
    if found is not None:
        await found.stop()
