"""A job run every so often (not a queue): the runtime's `PeriodicSpec`, e.g. deleting
old events once an hour (`svc.workers.events.cleanup`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PeriodicSpec:
    """`run()` at start, then every `every` seconds; a run that raises is dropped (the
    next one tries again: e.g. Postgres was away)."""

    name: str
    every: float
    run: Callable[[], Awaitable[object]]


class Periodic:
    """Runs one `PeriodicSpec` from `start()` until `stop()`."""

    def __init__(self, spec: PeriodicSpec) -> None:
        self.spec = spec
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the loop on the running loop (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=f"periodic {self.spec.name}")

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(Exception):
                await self.spec.run()
            await asyncio.sleep(self.spec.every)

    async def stop(self, timeout: float) -> None:
        """Cancel the loop (a run in progress is cancelled; `timeout` is not needed: a
        periodic job holds no rows). Never raises."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
