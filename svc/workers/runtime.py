"""The process's background work: one `WorkerRuntime` per engine runs queue workers
(`WorkerSpec`) and periodic jobs (`PeriodicSpec`). `sync(jobs, metadata)` is the one path
that starts and stops them from the current metadata (each `Job` says when it is
wanted); `stop()` stops everything at shutdown (SIGTERM)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from svc.execute.db import Database
from svc.metadata.model import Metadata
from svc.workers.periodic import Periodic, PeriodicSpec
from svc.workers.worker import Worker, WorkerSpec

DEFAULT_STOP_TIMEOUT = 10.0  # seconds running handles get to finish at shutdown
Spec = WorkerSpec | PeriodicSpec
Running = Worker | Periodic


def always(md: Metadata) -> bool:
    """A job wanted whatever the metadata."""
    return True


@dataclass(frozen=True, slots=True)
class Job:
    """A background job of the engine: `spec`, run while `wanted(metadata)`."""

    spec: Spec
    wanted: Callable[[Metadata], bool] = always


class WorkerRuntime:
    """Every background worker of one process, on one `Database`.

    `stop_timeout`: seconds `stop()` waits for running handles before cancelling them and
    unlocking their rows (the graceful-shutdown period of `svc serve` is 30 s by default,
    so a worker's bound stays well inside it)."""

    def __init__(self, db: Database, *, stop_timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        self.db = db
        self.stop_timeout = stop_timeout
        self.workers: dict[str, Running] = {}
        self._lock = asyncio.Lock()  # one sync (or stop) at a time

    def start(self, spec: Spec) -> Running:
        """Start a worker for `spec` on the running loop. Raises ValueError when a worker
        of that name runs already, or for a bad spec (`Worker`)."""
        if spec.name in self.workers:
            raise ValueError(f"a worker named {spec.name!r} is running already")
        worker: Running = (
            Periodic(spec) if isinstance(spec, PeriodicSpec) else Worker(spec.db or self.db, spec)
        )
        self.workers[spec.name] = worker
        worker.start()
        return worker

    async def sync(self, jobs: Iterable[Job], metadata: Metadata) -> None:
        """Start each job wanted by `metadata` that is not running and stop each running
        one it no longer wants (`Worker.stop` with `stop_timeout`: running handles finish,
        the rest is unlocked). Workers started by `start` alone are left alone."""
        async with self._lock:
            stopping: list[Running] = []
            for job in jobs:
                name, wanted = job.spec.name, job.wanted(metadata)
                if wanted and name not in self.workers:
                    self.start(job.spec)
                elif not wanted and name in self.workers:
                    stopping.append(self.workers.pop(name))
            await asyncio.gather(*(w.stop(self.stop_timeout) for w in stopping))

    async def stop(self) -> None:
        """Stop every worker at once (`Worker.stop` with `stop_timeout`); idempotent."""
        async with self._lock:
            workers, self.workers = list(self.workers.values()), {}
            await asyncio.gather(*(w.stop(self.stop_timeout) for w in workers))
