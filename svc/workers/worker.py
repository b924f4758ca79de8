"""One background worker: a loop that claims due rows of a queue table and processes
them with bounded concurrency (ARCHITECTURE.md "Seams").

Lifecycle of a row: claimed (its lock set to the claim's stamp, `svc.sql.claim`) → held
(waiting for a concurrency slot) → running (`WorkerSpec.handle`) → finished. While
held, the worker renews its locks every third of `lock_timeout`, so only a row whose
holder died (SIGKILL, lost machine) goes stale and is claimed again by another process
(at-least-once). `stop()` stops claiming, unlocks rows not started, waits up to its
bound for running ones, cancels the rest and unlocks them too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from svc.execute.db import Database
from svc.sql.claim import QueueTable, claim_sql, release_sql, touch_sql


@dataclass(frozen=True, slots=True)
class Claimed:
    """A claimed row: `key` (as text) and `row` (the whole row as claimed, JSON bytes:
    decode it with msgspec into the caller's type)."""

    key: str
    row: bytes


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What a worker does. `handle(item)` processes one row and records its result; its
    last write makes the row not due, or sets its lock to NULL to have it claimed again
    (e.g. `UPDATE … SET delivered = true, locked = NULL WHERE id = $1`; by key: the lock
    value changes as the worker renews it). A handle that raises has the row unlocked
    (claimed again at a later fetch). `fetch_interval`:
    seconds between claims while the queue is drained; `batch_size`: most rows held at
    once; `concurrency`: most handles running at once; `lock_timeout`: seconds after
    which a lock not renewed is stale (its holder is presumed dead)."""

    name: str
    queue: QueueTable
    handle: Callable[[Claimed], Awaitable[None]]
    fetch_interval: float = 1.0
    batch_size: int = 100
    concurrency: int = 10
    lock_timeout: float = 60.0
    db: Database | None = None  # where its queue is (None: the runtime's database)


def _log(worker: str, message: str) -> None:
    """One JSON line on stderr (the reference logs `event-trigger` / `scheduled-trigger`)."""
    line = {"type": "worker-log", "level": "error", "worker": worker, "message": message}
    logging.getLogger(__name__).error(line)


class Worker:
    """Runs one `WorkerSpec` on `db` from `start()` until `stop()`."""

    def __init__(self, db: Database, spec: WorkerSpec) -> None:
        """Raises ValueError for a non-positive batch size, concurrency or lock timeout."""
        if spec.batch_size < 1 or spec.concurrency < 1 or spec.lock_timeout <= 0:
            raise ValueError("batch_size, concurrency and lock_timeout must be positive")
        self.db = db
        self.spec = spec
        self.held: dict[str, str] = {}  # key → stamp, every row this worker holds
        self.processed = 0  # handles that returned normally
        self._claim, self._touch, self._release = (
            claim_sql(spec.queue),
            touch_sql(spec.queue),
            release_sql(spec.queue),
        )
        self._slots = asyncio.Semaphore(spec.concurrency)
        self._waiting: dict[str, asyncio.Task[None]] = {}  # claimed, not started
        self._running: dict[str, asyncio.Task[None]] = {}
        self._stopping = asyncio.Event()
        self._freed = asyncio.Event()  # set when held rows fall to the refill mark
        self._refill = spec.batch_size // 2
        self._loops: list[asyncio.Task[None]] = []

    def start(self) -> None:
        """Start claiming (the claim loop and the lock-renewal loop) on the running loop."""
        if not self._loops:
            self._loops = [
                asyncio.create_task(self._claim_loop(), name=f"worker {self.spec.name}"),
                asyncio.create_task(self._renew_loop(), name=f"worker {self.spec.name} locks"),
            ]

    async def stop(self, timeout: float) -> None:
        """Stop claiming; unlock rows not started; wait up to `timeout` seconds for
        running handles, cancel the rest and unlock their rows. Never raises (a failed
        unlock leaves the rows to go stale)."""
        self._stopping.set()
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        for task in list(self._waiting.values()):
            task.cancel()
        running = list(self._running.values())
        if running:
            await asyncio.wait(running, timeout=timeout)
        for task in list(self._running.values()):
            task.cancel()
        await asyncio.gather(
            *self._waiting.values(), *self._running.values(), return_exceptions=True
        )
        await self._unlock(list(self.held))

    # -- claiming ---------------------------------------------------------------------
    async def _claim_loop(self) -> None:
        spec = self.spec
        while not self._stopping.is_set():
            self._freed.clear()
            room = spec.batch_size - len(self.held)
            got = await self._claim_some(room) if room > 0 else 0
            # A full batch: more rows may be due, so claim again as soon as half the batch
            # is done (one claim per half batch, not per row). Drained: after the interval.
            full = room <= 0 or got == room
            await self._sleep(self._freed if full else None, spec.fetch_interval)

    async def _sleep(self, wake: asyncio.Event | None, seconds: float) -> None:
        """Until stop, `wake` is set, or `seconds` pass."""
        waits = [asyncio.ensure_future(self._stopping.wait())]
        if wake is not None:
            waits.append(asyncio.ensure_future(wake.wait()))
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def _claim_some(self, room: int) -> int:
        """Claim up to `room` rows and schedule them; 0 after logging a failed claim
        (Postgres away: the loop tries again after the interval)."""
        try:
            async with self.db.pool.acquire() as conn:
                rows = await conn.fetch(self._claim, str(room), str(self.spec.lock_timeout))
        except Exception as exc:  # a worker outlives Postgres restarts
            _log(self.spec.name, f"claim failed: {exc}")
            return 0
        for key, stamp, row in rows:
            self.held[key] = stamp
            self._waiting[key] = asyncio.create_task(self._process(Claimed(key, row)))
        return len(rows)

    async def _process(self, item: Claimed) -> None:
        try:
            async with self._slots:
                task = self._waiting.pop(item.key)
                self._running[item.key] = task
                await self.spec.handle(item)
            self.processed += 1
        except asyncio.CancelledError:
            return  # stop(): the row is unlocked there, with every other one still held
        except Exception as exc:  # one bad row must not stop the worker
            _log(self.spec.name, f"handle failed for {item.key}: {exc!r}")
            await self._unlock([item.key])
        finally:
            self._waiting.pop(item.key, None)
            self._running.pop(item.key, None)
        self.held.pop(item.key, None)
        if len(self.held) <= self._refill:
            self._freed.set()

    # -- locks ------------------------------------------------------------------------
    async def _renew_loop(self) -> None:
        every = self.spec.lock_timeout / 3
        while True:
            await asyncio.sleep(every)
            keys = list(self.held)
            if not keys:
                continue
            try:
                rows = await self._by_stamp(self._touch, keys)
            except Exception as exc:  # renewal is retried next time
                _log(self.spec.name, f"lock renewal failed: {exc}")
                continue
            # A row not renewed was unlocked by its handle, or reclaimed by another
            # process after this one stalled past the bound: its stamp no longer matches,
            # so nothing this worker does later can touch it.
            for key, stamp in rows:
                if key in self.held:
                    self.held[key] = stamp

    async def _unlock(self, keys: list[str]) -> None:
        held = [k for k in keys if k in self.held]
        if not held:
            return
        try:
            await self._by_stamp(self._release, held)
        except Exception as exc:  # the rows go stale and are reclaimed
            _log(self.spec.name, f"unlock failed: {exc}")
            return
        for key in held:
            self.held.pop(key, None)

    async def _by_stamp(self, sql: str, keys: list[str]) -> list[Any]:
        stamps = [self.held[k] for k in keys]
        async with self.db.pool.acquire() as conn:
            return list(await conn.fetch(sql, keys, stamps))
