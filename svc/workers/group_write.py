"""Group writes: many handles' result records written by one statement (one commit).

A delivery worker records each attempt as it finishes. Written one statement per event,
every record is its own transaction, and at a few hundred events per second the commits
(one WAL flush each) and round trips were a large share of a delivery (measured
with `bench.events`). `GroupWriter.write(record)` queues the record and returns once the
statement that holds it has committed: while one statement is in flight, the records
that arrive meanwhile gather for the next, so a busy worker writes in batches and an
idle one still writes at once (no timer, no added latency).

    writer = GroupWriter(flush, max_batch=200)   # flush(records) -> awaitable, one statement
    await writer.write(record)                   # raises what flush raised for its batch

A failed statement fails every record of its batch (each caller handles it as its own
failure: the worker unlocks that row and it is claimed again later, at-least-once).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

R = TypeVar("R")


class GroupWriter(Generic[R]):
    """Writes records of type `R` through `flush(records)` in batches of at most
    `max_batch` (>= 1; ValueError otherwise). One flush runs at a time per writer."""

    def __init__(
        self, flush: Callable[[Sequence[R]], Awaitable[None]], *, max_batch: int = 200
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be positive")
        self._flush = flush
        self._max = max_batch
        self._queue: list[tuple[R, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self.statements = 0  # flushes run (for tests and figures)

    async def write(self, record: R) -> None:
        """Queue `record`; return when its batch is written. Raises the batch's error.
        A caller cancelled while waiting leaves its record in the batch: it may still be
        written, as an attempt whose process died after it is still recorded."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((record, future))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain(), name="group write")
        await future

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self._max], self._queue[self._max :]
            self.statements += 1
            try:
                await self._flush([record for record, _ in batch])
            except Exception as exc:  # every waiter of the batch gets it
                _settle(batch, exc)
                continue
            except BaseException:  # cancelled: no waiter may wait for a drain that is gone
                _settle(batch + self._queue, None, cancel=True)
                self._queue = []
                raise
            _settle(batch, None)


def _settle(
    waiters: list[tuple[R, asyncio.Future[None]]], error: Exception | None, cancel: bool = False
) -> None:
    for _, future in waiters:
        if future.done():
            continue
        if cancel:
            future.cancel()
        elif error is not None:
            future.set_exception(error)
        else:
            future.set_result(None)
