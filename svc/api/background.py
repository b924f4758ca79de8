"""The engine's background work, started and stopped from the current metadata through one
path (`Background.sync` → `svc.workers.runtime.WorkerRuntime.sync`).

The jobs (`jobs`), each a spec of `svc.workers` with the metadata that wants it:
- `scheduled-cron`, `scheduled-one-off`: cron and one-off scheduled events (always);
- `event-triggers`: event delivery, while the metadata has event triggers (the event
  tables exist only then);
- `event-cleanup`: deletes old finished events hourly, with `--events-retention` set and
  while event delivery runs;
- `async_actions`: asynchronous action calls (always).

`start()` syncs (the tables are the catalog's, `Database.init_catalog`);
`metadata_changed()` (the engine calls it whenever it installs a state) has the follower
task sync again, off the request path (stopping a worker waits for its running
deliveries); `stop()` (SIGTERM) stops everything: running items finish within the
runtime's bound, the rest is released.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from svc.api.actions.async_calls import worker_spec as async_action_spec
from svc.api.event_service import TriggerLookup, options_of
from svc.api.state import State
from svc.config import Config
from svc.errors import SvcError
from svc.execute.db import Database
from svc.metadata.model import Metadata
from svc.metadata.sources import served_sources, source_view
from svc.workers import scheduled
from svc.workers.events import cleanup_spec, event_worker_spec, has_triggers
from svc.workers.runtime import Job, WorkerRuntime

StateOf = Callable[[], State]
CurrentState = Callable[[], Awaitable[State]]


def jobs(db: Database, config: Config, state_of: StateOf, current: CurrentState) -> list[Job]:
    """Every background job of an engine on `db` (module doc). `state_of()`: the installed
    state; `current()`: the state a request must answer with (async actions use it)."""

    def metadata() -> Metadata:  # read per item: the cron worker follows metadata changes
        return state_of().metadata

    lookup = TriggerLookup(current, config.stringify_numeric_types)
    out = [Job(spec) for spec in scheduled.worker_specs(db, metadata)]
    out.append(Job(event_worker_spec(db, lookup, options_of(config)), has_triggers))
    if config.events_retention > 0:
        out.append(Job(cleanup_spec(db, config.events_retention), has_triggers))
    out.append(Job(async_action_spec(db, current)))
    return out


def triggers_in(name: str) -> Callable[[Metadata], bool]:
    """Whether a document has event triggers on tables of source `name`."""

    def wanted(md: Metadata) -> bool:
        if name not in served_sources(md):
            return False
        try:
            return has_triggers(source_view(md, name))
        except SvcError:
            return False

    return wanted


def _never(md: Metadata) -> bool:
    return False


class Background:
    """The background jobs of one engine on one `WorkerRuntime` (`runtime`): `jobs`, and
    an event worker per other source with event triggers, on that source's database
    (`source_jobs`; named `event-triggers <source>`)."""

    def __init__(
        self, db: Database, config: Config, state_of: StateOf, current: CurrentState
    ) -> None:
        self.db = db
        self.config = config
        self.current = current
        self.runtime = WorkerRuntime(db)
        self.jobs = jobs(db, config, state_of, current)
        self.source_jobs: dict[str, tuple[Database, Job]] = {}
        self._state_of = state_of
        self._changed = asyncio.Event()
        self._stopping = False
        self._follower: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the jobs the current metadata wants, and follow later changes
        (`metadata_changed`); their tables are the catalog's (`Database.init_catalog`)."""
        await self.sync()
        self._follower = asyncio.create_task(self._follow(), name="background sync")

    async def sync(self) -> None:
        """Start and stop jobs to match the current metadata (the one path)."""
        md = self._state_of().metadata
        await self.runtime.sync([*self.jobs, *self._for_sources(md)], md)
        for name in [n for n, (_, job) in self.source_jobs.items() if job.wanted is _never]:
            del self.source_jobs[name]

    def _for_sources(self, md: Metadata) -> list[Job]:
        """The event worker of each other source's database (one per connection: a
        source connected again gets a new one, the old one is stopped)."""
        peers = self.db.peers
        databases = dict(peers.databases) if peers is not None else {}
        wanted: dict[str, tuple[Database, Job]] = {}
        for name in served_sources(md):
            db = databases.get(name)
            known = self.source_jobs.get(name)
            if db is None:
                continue
            if known is not None and known[0] is db:
                wanted[name] = known
                continue
            lookup = TriggerLookup(self.current, self.config.stringify_numeric_types, name)
            spec = event_worker_spec(
                db, lookup, options_of(self.config), name=f"event-triggers {name}#{id(db)}"
            )
            wanted[name] = (db, Job(spec, triggers_in(name)))
        stopping = {
            f"{name}#old{id(db)}": (db, Job(job.spec, _never))
            for name, (db, job) in self.source_jobs.items()
            if wanted.get(name, (None,))[0] is not db
        }
        self.source_jobs = {**wanted, **stopping}
        return [job for _, job in self.source_jobs.values()]

    def metadata_changed(self) -> None:
        """A new state was installed: sync soon (without waiting here)."""
        self._changed.set()

    async def _follow(self) -> None:
        while True:
            await self._changed.wait()
            if self._stopping:
                return
            self._changed.clear()
            await self.sync()

    async def stop(self) -> None:
        """Stop following (a sync under way finishes: a worker it stops releases its
        rows), then stop every job (`WorkerRuntime.stop`); idempotent."""
        self._stopping = True
        self._changed.set()
        if self._follower is not None:
            with contextlib.suppress(Exception):  # a failed sync: stop the rest anyway
                await self._follower
            self._follower = None
        await self.runtime.stop()
