"""The one path background jobs start and stop through: `WorkerRuntime.sync(jobs,
metadata)` starts what the metadata wants, stops the rest, and leaves workers started
by `start` alone (`svc.workers.runtime`; the engine's jobs: `svc.api.background`)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from svc.api.background import jobs
from svc.config import Config
from svc.metadata.model import Metadata
from svc.workers import Job, PeriodicSpec, WorkerRuntime
from svc.workers.events import has_triggers


async def test_sync_starts_and_stops_jobs_from_the_metadata() -> None:
    runs: list[str] = []

    async def run() -> None:
        runs.append("ran")

    on, off = Metadata(), Metadata()
    job = Job(PeriodicSpec("tick", 0.01, run), lambda md: md is on)
    runtime = WorkerRuntime(cast(Any, None))  # periodic jobs use no database
    runtime.start(PeriodicSpec("manual", 60.0, run))
    await runtime.sync([job], off)
    assert sorted(runtime.workers) == ["manual"]
    await runtime.sync([job], on)
    await asyncio.sleep(0.05)
    assert sorted(runtime.workers) == ["manual", "tick"] and len(runs) > 2
    await runtime.sync([job], on)  # already running: left as it is
    await runtime.sync([job], off)
    assert sorted(runtime.workers) == ["manual"]  # started by hand: not the metadata's
    await runtime.stop()
    assert runtime.workers == {}


def test_the_engine_jobs_and_when_they_run() -> None:
    """Scheduled events and async actions always; event delivery and its cleanup (with a
    retention) while the metadata has event triggers."""
    config = Config(database_url="postgresql://x/y", events_retention=60)
    state = cast(Any, None)
    found = jobs(cast(Any, None), config, lambda: state, cast(Any, None))
    names = {j.spec.name: j.wanted for j in found}
    assert list(names) == [
        "scheduled-cron",
        "scheduled-one-off",
        "event-triggers",
        "event-cleanup",
        "async_actions",
    ]
    assert names["event-triggers"] is has_triggers and names["event-cleanup"] is has_triggers
    assert names["scheduled-cron"](Metadata()) and names["async_actions"](Metadata())
    without = jobs(
        cast(Any, None), Config(database_url="postgresql://x/y"), lambda: state, cast(Any, None)
    )
    assert "event-cleanup" not in {j.spec.name for j in without}
