"""Background workers (the layer after `svc.execute`; ARCHITECTURE.md "Seams"): loops
that claim due rows of a queue table with `FOR UPDATE SKIP LOCKED` and process them with
bounded concurrency, for event delivery, scheduled delivery and async actions.

- `WorkerSpec(name, queue, handle, fetch_interval, batch_size, concurrency,
  lock_timeout)`, the queue a `svc.sql.claim.QueueTable`;
- `WorkerRuntime(db).start(spec)` → `Worker`; `await runtime.stop()` at shutdown.
"""

from svc.workers.runtime import WorkerRuntime
from svc.workers.worker import Claimed, Worker, WorkerSpec

__all__ = ["Claimed", "Worker", "WorkerRuntime", "WorkerSpec"]
