"""Background workers (the layer after `svc.execute`; ARCHITECTURE.md "Seams"): loops
that claim due rows of a queue table with `FOR UPDATE SKIP LOCKED` and process them with
bounded concurrency, for event delivery, scheduled delivery and async actions, and
periodic jobs (the event cleanup).

- `WorkerSpec(name, queue, handle, fetch_interval, batch_size, concurrency,
  lock_timeout)`, the queue a `svc.sql.claim.QueueTable`; `PeriodicSpec(name, every, run)`;
- `Job(spec, wanted)`: a spec and the metadata that wants it;
- `WorkerRuntime(db)`: `start(spec)`, `await sync(jobs, metadata)` (the one path the
  engine starts and stops its jobs through, `svc.api.background`), `await stop()` at
  shutdown.
"""

from svc.workers.periodic import PeriodicSpec
from svc.workers.runtime import Job, WorkerRuntime
from svc.workers.worker import Claimed, Worker, WorkerSpec

__all__ = ["Claimed", "Job", "PeriodicSpec", "Worker", "WorkerRuntime", "WorkerSpec"]
