"""The process's background workers: started by the engine (`Engine.start_workers`),
stopped by `Engine.close` (SIGTERM), each a `Worker` over one queue table."""

from __future__ import annotations

import asyncio

from svc.execute.db import Database
from svc.workers.worker import Worker, WorkerSpec

DEFAULT_STOP_TIMEOUT = 10.0  # seconds running handles get to finish at shutdown


class WorkerRuntime:
    """Every background worker of one process, on one `Database`.

    `stop_timeout`: seconds `stop()` waits for running handles before cancelling them and
    unlocking their rows (the graceful-shutdown period of `svc serve` is 30 s by default,
    so a worker's bound stays well inside it)."""

    def __init__(self, db: Database, *, stop_timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        self.db = db
        self.stop_timeout = stop_timeout
        self.workers: dict[str, Worker] = {}

    def start(self, spec: WorkerSpec) -> Worker:
        """Start a worker for `spec` on the running loop. Raises ValueError when a worker
        of that name runs already, or for a bad spec (`Worker`)."""
        if spec.name in self.workers:
            raise ValueError(f"a worker named {spec.name!r} is running already")
        worker = Worker(self.db, spec)
        self.workers[spec.name] = worker
        worker.start()
        return worker

    async def stop(self) -> None:
        """Stop every worker at once (`Worker.stop` with `stop_timeout`); idempotent."""
        workers, self.workers = list(self.workers.values()), {}
        await asyncio.gather(*(w.stop(self.stop_timeout) for w in workers))
