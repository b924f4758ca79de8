"""Streaming subscriptions' cohorts and poller (the reference's streaming
poller: "every cohort of a streaming subscription is associated with a mutable latest
cursor value", re-keyed after each poll).

A streaming subscription runs like a live query (`svc.api.live.poller`: one poller per
(role, statement, time limit), batches of `--streaming-queries-multiplexed-batch-size`
cohorts per statement, every `--streaming-queries-multiplexed-refetch-interval` ms, both
set by `configure_streams`), with these differences:

- a cohort's variables include its cursor (`{"cursor": {"col": "text"}}`); after a poll
  that found rows the cohort moves to the last row's value, and it is filed again under
  its new variables text, so a subscriber starting later with the same initial value
  forms its own cohort (or joins one at exactly that position; two cohorts reaching the
  same position merge);
- a batch is pushed only when it has rows, and every batch reaches every subscriber in
  order (`LiveHandle.enqueue`, never replaced), since each holds rows not sent before;
- a cohort one of whose subscribers has `MAX_BACKLOG` batches not yet written to its
  socket is skipped by the poll until they are written, so a slow client bounds its
  queue instead of growing it;
- with `SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE` on, a cohort whose last poll found no row
  after its cursor is left alone until its tables are written, as a live query's
  (`svc.api.live.watch`); one that got rows, or was paused, is fetched next interval.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from svc.api.live.cohort import Cohort, cohort_vars
from svc.api.live.handle import LiveHandle, _log
from svc.api.live.poller import LiveQuery
from svc.api.live.registry import LiveQueries
from svc.errors import ErrorCode, SvcError, validation_failed
from svc.execute.db import Database
from svc.execute.params import resolve
from svc.sql.stream import StreamStatement

_encode = msgspec.json.encode
_decode = msgspec.json.decode

MAX_BACKLOG = 4  # batches a subscriber may have waiting before its cohort pauses
FETCHED = b""  # a streaming cohort's `payload` once polled (batches are not kept)


def stream_vars(
    live: StreamStatement, variables: Mapping[str, Any], session: Mapping[str, str]
) -> str:
    """A new subscriber's cohort variables: `cohort_vars` with `cursor` set to the initial
    value's text (`{column: text}`). Raises `SvcError` as `cohort_vars` does, and
    `validation-failed` "unexpected negative value for batch_size"."""
    assert live.cursor is not None
    base = _decode(cohort_vars(live, variables, session))
    start, size = resolve(
        (live.cursor.initial, live.batch_size or live.cursor.initial), variables, {}
    )
    if live.batch_size is not None and size is not None and int(size) < 0:
        raise validation_failed(
            "unexpected negative value for batch_size", "$.selectionSet.batch_size"
        )
    base["cursor"] = {live.cursor.column: start}
    return _encode(base).decode()


@dataclass(eq=False)
class StreamCohort(Cohort):
    """A streaming cohort: `vars` changes as its cursor advances (`StreamQuery.advance`)."""

    def join(self, handle: LiveHandle) -> None:
        """Add a subscriber; the batches before its position are not replayed to it."""
        self.subscribers.add(handle)

    def fetched(self, caught_up: bool) -> None:
        """A poll answered: a later error is pushed even if equal to one pushed before.
        With a skip-idle mode on, a cohort `caught_up` (no row after its cursor) is left
        alone until its tables are written (`LiveQuery._due` fetches cohorts without
        `payload`); one that got rows is fetched again, since the batch size may have
        left rows behind."""
        self.error, self.payload = None, FETCHED if caught_up else None

    def push_batch(self, payload: bytes) -> None:
        """Send a batch (`{"data": …}`) to every subscriber, in order, none replaced."""
        for handle in self.subscribers:
            handle.enqueue(payload)


class StreamQuery(LiveQuery):
    """The streaming cohorts of one (role, statement, time limit) and their poller (see
    the module docstring). `cohort_of` finds a subscriber's current cohort (cohorts
    merge)."""

    def __init__(self, db: Database, live: StreamStatement, **options: Any) -> None:
        super().__init__(db, live, **options)
        self.stream = live
        self.cohort_of: dict[LiveHandle, Cohort] = {}

    def join(self, vars_text: str, handle: LiveHandle) -> Cohort:
        """Add `handle` at the position `vars_text` (`stream_vars`); a new cohort is
        fetched at once."""
        cohort = self.cohorts.get(vars_text)
        if cohort is None:
            cohort = StreamCohort(vars_text)
            self.cohorts[vars_text] = cohort
            self._by_id[cohort.id] = cohort
            self._new.append(cohort)
            self._wake.set()
        cohort.join(handle)
        self.cohort_of[handle] = cohort
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        return cohort

    def leave_handle(self, handle: LiveHandle) -> bool:
        """Remove `handle` from its cohort; True when no cohort is left."""
        cohort = self.cohort_of.pop(handle, None)
        if cohort is None:
            return not self.cohorts
        return self.leave(cohort, handle)

    async def poll(self, cohorts: list[Cohort]) -> None:
        """Fetch `cohorts`, except those with a subscriber `MAX_BACKLOG` batches behind
        (left unfetched, so a skip-idle mode fetches them again next interval)."""
        ready: list[Cohort] = []
        for cohort in cohorts:
            if all(h.backlog < MAX_BACKLOG for h in cohort.subscribers):
                ready.append(cohort)
            else:
                cohort.payload = None
        await super().poll(ready)

    async def _fetch(self, batch: list[Cohort]) -> None:
        ids = [c.id for c in batch]
        texts = [c.vars for c in batch]
        try:
            row = await self.db.query_json(self.live.sql, [ids, texts], 3, self.timeout)
        except SvcError as exc:
            self._fail(batch, exc)
            return
        except Exception as exc:  # a bug: keep polling, tell the subscribers
            _log(f"svc: streaming subscription poll failed: {exc!r}")
            self._fail(batch, SvcError(ErrorCode.UNEXPECTED, "streaming poll failed"))
            return
        out_ids: Any = row[0]
        results: Any = row[1]
        cursors: Any = row[2]
        for cohort_id, result, cursor in zip(
            out_ids or (), results or (), cursors or (), strict=True
        ):
            cohort = self._by_id.get(cohort_id)
            if not isinstance(cohort, StreamCohort):  # gone meanwhile
                continue
            cohort.fetched(caught_up=cursor is None)
            if cursor is None:  # no row after its cursor: nothing to send
                continue
            cohort.push_batch(b'{"data":' + bytes(result) + b"}")
            self.advance(cohort, cursor)

    def advance(self, cohort: StreamCohort, cursor: str) -> None:
        """Move `cohort` to `cursor` (text) and file it under its new variables text,
        merging it into a cohort already there."""
        assert self.stream.cursor is not None
        if self.cohorts.get(cohort.vars) is cohort:
            del self.cohorts[cohort.vars]
        values = _decode(cohort.vars)
        values["cursor"] = {self.stream.cursor.column: cursor}
        cohort.vars = _encode(values).decode()
        other = self.cohorts.get(cohort.vars)
        if other is None:
            self.cohorts[cohort.vars] = cohort
            return
        for handle in cohort.subscribers:  # same position: one cohort from now on
            other.subscribers.add(handle)
            self.cohort_of[handle] = other
        cohort.subscribers.clear()
        self._by_id.pop(cohort.id, None)


def configure_streams(live: LiveQueries, *, interval: float, batch_size: int) -> None:
    """Set the polling of the streams `live` holds: `interval` seconds (> 0) between
    polls (`--streaming-queries-multiplexed-refetch-interval` / 1000), `batch_size`
    cohorts (>= 1) per statement (`--streaming-queries-multiplexed-batch-size`)."""
    live.stream_interval = interval
    live.stream_batch_size = batch_size


def add_stream(
    live: LiveQueries,
    role: str,
    statement: StreamStatement,
    timeout: float | None,
    vars_text: str,
    handle: LiveHandle,
    *,
    admin: bool,
    db: Database,
) -> None:
    """Subscribe `handle` to the streaming `statement` at the position `vars_text`
    (`stream_vars`), polled on `db` (its plan's source's); `handle.stop()` unsubscribes
    it (the last one stops the poller).
    The stream's poller is kept among `live.queries` (counted and closed with them)."""
    key = ("stream", role, statement.sql, timeout, db)
    query = live.queries.get(key)
    if not isinstance(query, StreamQuery):
        query = StreamQuery(
            db,
            statement,
            timeout=timeout,
            admin=admin,
            interval=live.stream_interval,
            batch_size=live.stream_batch_size,
            watch=live.watch,  # a skip-idle mode skips streams of unwritten tables too
        )
        live.queries[key] = query
    query.join(vars_text, handle)
    stream_query = query

    def release(h: LiveHandle) -> Awaitable[None] | None:
        if stream_query.leave_handle(h) and live.queries.get(key) is stream_query:
            del live.queries[key]
            return stream_query.close()
        return None

    handle.release = release
