"""One live query's poller: its cohorts, fetched in batches by one statement each
(ARCHITECTURE.md "Live queries").

Every `interval` seconds the poller runs the multiplexed statement (`svc.sql.live`) once
per batch of at most `batch_size` cohorts (batches of one poll run concurrently; the read
path's connection queue bounds them), and each cohort pushes its result only when it
changed. A new cohort is fetched at once (with the other cohorts created meanwhile, in the
same batches), so a subscriber's first result does not wait for the interval. A failed
statement (Postgres unreachable, the role's time limit) pushes the error to the batch's
subscribers once; polling goes on, and the first good result afterwards is pushed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import Any

import msgspec

from svc.api.live.cohort import Cohort
from svc.api.live.handle import LiveHandle, _log
from svc.api.live.watch import Tables, WriteWatch, watched_tables
from svc.errors import ErrorCode, SvcError
from svc.execute.db import Database
from svc.sql.live import LiveStatement

_encode = msgspec.json.encode
LOOKUP_RETRY_S = 30.0  # a live query whose tables could not be looked up tries again after


class LiveQuery:
    """The cohorts of one (role, multiplexed statement, time limit), and the task polling
    them. `timeout`: the statement's limit in seconds (None: the server's; 0: none);
    `admin`: whether errors show their internal detail."""

    def __init__(
        self,
        db: Database,
        live: LiveStatement,
        *,
        timeout: float | None,
        admin: bool,
        interval: float,
        batch_size: int,
        watch: WriteWatch | None = None,
    ) -> None:
        self.db = db
        self.live = live
        self.timeout = timeout
        self.admin = admin
        self.interval = interval
        self.batch_size = max(1, batch_size)
        self.cohorts: dict[str, Cohort] = {}  # by variables text
        self._by_id: dict[str, Cohort] = {}
        self._new: list[Cohort] = []  # cohorts not fetched yet
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Idle polls (`svc.api.live.watch`): the tables whose writes are heard (None:
        # unknown, always poll), whether one was written since the last poll, when to
        # look the tables up (again), and how many interval polls were skipped.
        self.watch = watch
        self.tables: Tables | None = None
        self.dirty = True
        self._lookup_at = 0.0
        self._lookup_failed = False
        self.skipped = 0

    @property
    def subscribers(self) -> int:
        """How many subscribers the cohorts hold."""
        return sum(len(c.subscribers) for c in self.cohorts.values())

    def join(self, vars_text: str, handle: LiveHandle) -> Cohort:
        """Add `handle` to the cohort of `vars_text` (created, and fetched at once, when
        new); starts the poller with the first cohort."""
        cohort = self.cohorts.get(vars_text)
        if cohort is None:
            cohort = Cohort(vars_text)
            self.cohorts[vars_text] = cohort
            self._by_id[cohort.id] = cohort
            self._new.append(cohort)
            self._wake.set()
        cohort.join(handle)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        return cohort

    def leave(self, cohort: Cohort, handle: LiveHandle) -> bool:
        """Remove `handle`; a cohort without subscribers is dropped. Returns whether the
        live query has no cohort left (the caller then `close`s it)."""
        cohort.subscribers.discard(handle)
        if not cohort.subscribers and self.cohorts.get(cohort.vars) is cohort:
            del self.cohorts[cohort.vars]
            del self._by_id[cohort.id]
        return not self.cohorts

    async def close(self) -> None:
        """Stop polling (a statement in flight is cancelled in Postgres)."""
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.wait((task,))

    async def _run(self) -> None:
        try:
            await self._loop()
        finally:
            if self._task is asyncio.current_task():
                self._task = None

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        next_poll = loop.time() + self.interval
        while self.cohorts:
            remaining = next_poll - loop.time()
            if remaining > 0 and not self._new:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), remaining)
            if loop.time() < next_poll:  # woken by new cohorts: fetch only those
                await asyncio.sleep(0)  # let subscribers arriving together join this fetch
                new, self._new = self._new, []
                await self.poll([c for c in new if c.subscribers])
                continue
            next_poll = loop.time() + self.interval
            self._new = []
            await self.poll(await self._due())

    async def _due(self) -> list[Cohort]:
        """The cohorts an interval's poll fetches: all of them, unless writes are heard
        (`self.watch` active) and none of this query's tables was written since the last
        poll; then only those fetched regardless (never fetched, failed, clock-reading)."""
        cohorts = list(self.cohorts.values())
        watch = self.watch
        if watch is None or watch.mode == "off":
            return cohorts
        now = asyncio.get_running_loop().time()
        if self.tables is None and now >= self._lookup_at:
            self._lookup_at = now + LOOKUP_RETRY_S
            try:
                self.tables = await watched_tables(self.db, self.live.sql, watch.mode)
            except Exception as exc:  # unreachable, or no privilege for a trigger
                if not self._lookup_failed:
                    _log(f"svc: live query polls every interval, tables unknown: {exc!r}")
                self._lookup_failed = True
            else:
                if self.tables is None:
                    self._lookup_at = math.inf  # functions or views: never skippable
            self.dirty = True  # heard only from now on
        if not self.dirty and self.tables is not None and watch.active:
            due = [c for c in cohorts if c.payload is None or c.error is not None or c.clock]
            self.skipped += len(due) < len(cohorts)
            cohorts = due
        # Cleared before the statement runs: a write its snapshot misses notifies after.
        self.dirty = False
        return cohorts

    def touched(self, tables: Tables | None) -> None:
        """A notification named `tables` (None: anything) as written: poll next time."""
        if tables is None or self.tables is None or not tables.isdisjoint(self.tables):
            self.dirty = True

    async def poll(self, cohorts: list[Cohort]) -> None:
        """Fetch `cohorts` in batches (one statement each, concurrently) and publish."""
        size = self.batch_size
        batches = [cohorts[i : i + size] for i in range(0, len(cohorts), size)]
        if len(batches) == 1:
            await self._fetch(batches[0])
        elif batches:
            await asyncio.gather(*(self._fetch(b) for b in batches))

    async def _fetch(self, batch: list[Cohort]) -> None:
        ids = [c.id for c in batch]
        texts = [c.vars for c in batch]
        try:
            row = await self.db.query_json(self.live.sql, [ids, texts], 2, self.timeout)
        except SvcError as exc:
            self._fail(batch, exc)
            return
        except Exception as exc:  # a bug: keep polling, tell the subscribers
            _log(f"svc: live query poll failed: {exc!r}")
            self._fail(batch, SvcError(ErrorCode.UNEXPECTED, "live query poll failed"))
            return
        out_ids: Any = row[0]
        results: Any = row[1]
        for cohort_id, result in zip(out_ids or (), results or (), strict=True):
            cohort = self._by_id.get(cohort_id)
            if cohort is not None:
                cohort.publish(b'{"data":' + bytes(result) + b"}")

    def _fail(self, batch: list[Cohort], exc: SvcError) -> None:
        payload = _encode({"errors": [exc.to_graphql_error(admin=self.admin)]})
        for cohort in batch:
            cohort.fail((exc.code, exc.message), payload)
