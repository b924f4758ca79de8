"""`svc.workers.group_write.GroupWriter`: records arriving while a statement is in flight
are written together by the next one; a failed statement fails each of its records."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from svc.workers.group_write import GroupWriter


class Sink:
    """A flush that takes a little time, like a statement, and keeps what it got."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.batches: list[list[int]] = []
        self.fail_on = fail_on

    async def __call__(self, records: Sequence[int]) -> None:
        self.batches.append(list(records))
        await asyncio.sleep(0.01)
        if self.fail_on is not None and self.fail_on in records:
            raise RuntimeError("statement failed")


async def test_concurrent_writes_share_statements() -> None:
    sink = Sink()
    writer = GroupWriter(sink, max_batch=50)
    await asyncio.gather(*(writer.write(n) for n in range(200)))
    assert sorted(n for batch in sink.batches for n in batch) == list(range(200))
    assert max(len(batch) for batch in sink.batches) == 50
    assert writer.statements == len(sink.batches) <= 5  # 200 records, not 200 statements


async def test_a_lone_write_is_written_at_once() -> None:
    sink = Sink()
    writer = GroupWriter(sink)
    await asyncio.wait_for(writer.write(7), timeout=1)
    await asyncio.wait_for(writer.write(8), timeout=1)
    assert sink.batches == [[7], [8]]


async def test_a_failed_statement_fails_its_records_only() -> None:
    sink = Sink(fail_on=3)
    writer = GroupWriter(sink, max_batch=4)
    results = await asyncio.gather(*(writer.write(n) for n in range(8)), return_exceptions=True)
    failed = {n for n, r in enumerate(results) if isinstance(r, RuntimeError)}
    bad = next(batch for batch in sink.batches if 3 in batch)
    assert failed == set(bad)
    assert all(r is None for n, r in enumerate(results) if n not in failed)


def test_max_batch_must_be_positive() -> None:
    async def flush(records: Sequence[int]) -> None:
        return None

    with pytest.raises(ValueError):
        GroupWriter(flush, max_batch=0)


async def test_a_cancelled_drain_releases_every_waiter() -> None:
    """Waiters never outlive the drain: when it is cancelled (loop shutdown), every
    record waiting on it, in its batch or queued behind it, is cancelled too."""
    started = asyncio.Event()

    async def stuck(records: Sequence[int]) -> None:
        started.set()
        await asyncio.sleep(60)

    writer = GroupWriter(stuck, max_batch=2)
    waits = [asyncio.ensure_future(writer.write(n)) for n in range(5)]
    await started.wait()
    assert writer._task is not None
    writer._task.cancel()
    results = await asyncio.wait_for(asyncio.gather(*waits, return_exceptions=True), 2)
    assert all(isinstance(r, asyncio.CancelledError) for r in results), results
