"""What event delivery needs of the API: the worker options from the configuration, and
the trigger lookup answering the worker from the engine's current state
(`svc.workers.events`; the jobs are assembled by `svc.api.background`).

Every `svc serve` worker process runs an event worker while the metadata has event
triggers: claims use `FOR UPDATE SKIP LOCKED`, so processes and instances share the queue.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from svc.api.state import State
from svc.config import Config
from svc.errors import SvcError
from svc.metadata.event_triggers import all_triggers
from svc.metadata.model import DEFAULT_SOURCE
from svc.metadata.qualified import in_source
from svc.metadata.sources import source_view
from svc.workers.events import EventOptions, TriggerInfo


def options_of(config: Config) -> EventOptions:
    """The worker options from the server configuration."""
    return EventOptions(
        fetch_interval=config.events_fetch_interval,
        batch_size=config.events_fetch_batch_size,
        concurrency=config.events_http_pool_size,
        lock_timeout=config.events_lock_timeout,
    )


class TriggerLookup:
    """`await lookup(name)`: the trigger called `name` in the state a request would answer
    with now (`current()`: caught up with the metadata other workers committed, so a pause
    made through another worker holds at once), with the columns to stringify when
    `stringify` (`--stringify-numeric-types`); computed once per state."""

    def __init__(
        self,
        current: Callable[[], Awaitable[State]],
        stringify: bool,
        source: str = DEFAULT_SOURCE,
    ) -> None:
        """`source`: the source whose triggers it looks up (each source's event log is
        in its own database, delivered by a worker of its own)."""
        self.current = current
        self.stringify = stringify
        self.source = source
        self._cache: tuple[Any, dict[str, TriggerInfo]] = (None, {})

    async def __call__(self, name: str) -> TriggerInfo | None:
        """The trigger called `name` now (None when unknown)."""
        state = await self.current()
        if self._cache[0] is not state:
            self._cache = (state, self._infos(state))
        return self._cache[1].get(name)

    def _infos(self, state: State) -> dict[str, TriggerInfo]:
        out: dict[str, TriggerInfo] = {}
        try:
            md = source_view(state.metadata, self.source)
        except SvcError:
            return out  # the source is gone: its events wait (postponed) or go with it
        for table, trigger in all_triggers(md):
            ir_table = state.ir.tables.get(in_source(table, self.source))
            names: frozenset[str] = frozenset()
            if self.stringify and ir_table is not None:
                names = frozenset(c.name for c in ir_table.columns if c.stringifiable)
            out[trigger.name] = TriggerInfo(trigger, names)
        return out
