"""Read replicas of a source (the reference's `read_replicas` of a Postgres
source's `connection_info`, `Hasura.Backends.Postgres.Connection.Settings`).

A query's statement (`Database.query_json`: GraphQL queries, live and streaming
subscriptions, remote and action relationship reads) runs on the next replica in turn;
everything of a request that writes (a mutation, and the reads of that same request,
`ON_PRIMARY`), metadata, `run_sql`, explain, event and scheduled-trigger work and the
action log (`query_json(primary=True)`) run on the primary. A replica that cannot be
reached is skipped for `DOWN_SECONDS` (a log line each time, counted in
`svc_read_replica_failures`) and the statement runs on the primary, so reads keep
answering while a replica is away. Replicas lag: a read right
after a write may not see it (as with the reference).

    replicas = Replicas([ReadConnections(url, size)], (ReplicaConf(url, size),))
    reads = replicas.pick()        # a ReadConnections, or None when none is up
    replicas.mark_down(reads, exc) # after a connection error on it

The configuration is read by `svc.metadata.read_replicas`.
"""

from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING

from svc.metadata.read_replicas import ReplicaConf

if TYPE_CHECKING:
    from svc.execute.db import ReadConnections

DOWN_SECONDS = 5.0  # a replica that failed is not tried again before this

#: True for the rest of a request that writes: its reads go to the primary too (a
#: mutation's own reads must see what it wrote). Set by `GraphQLService.run`.
ON_PRIMARY: ContextVar[bool] = ContextVar("svc_on_primary", default=False)

_log = logging.getLogger(__name__)


class Replicas:
    """The read connections of each replica, taken in turn (round robin), skipping one
    that failed in the last `DOWN_SECONDS`."""

    def __init__(self, members: list[ReadConnections], confs: tuple[ReplicaConf, ...]) -> None:
        self.members = members
        self.confs = confs
        self.down_until = [0.0] * len(members)
        self._next = 0

    def pick(self) -> ReadConnections | None:
        """The next replica that is up, or None when every one is down."""
        now = time.monotonic()
        n = len(self.members)
        for k in range(n):
            i = (self._next + k) % n
            if self.down_until[i] <= now:
                self._next = (i + 1) % n
                return self.members[i]
        return None

    def mark_down(self, member: ReadConnections, error: BaseException) -> None:
        """`member` could not be reached: skip it for `DOWN_SECONDS` and log it."""
        i = self.members.index(member)
        self.down_until[i] = time.monotonic() + DOWN_SECONDS
        line = {
            "type": "read-replica",
            "level": "warn",
            "replica": i,
            "message": f"read replica {i} unreachable, reads go to the primary for "
            f"{DOWN_SECONDS:g} s: {error}",
        }
        _log.warning(line)

    async def close(self) -> None:
        """Close every replica's connections."""
        for member in self.members:
            await member.close()
