"""What each remote schema answered to introspection, per process (issue 17).

Remote schemas are to the merged GraphQL schema what the Postgres catalog is to tables:
an input fetched with I/O (`svc.api.remote_fetch`) before schemas are built. The schema
build (`svc.schema.remote_merge`) only reads this table, so it stays pure. An entry is
keyed by the remote's name and its encoded definition, so a state built from an older
definition never sees the newer one's answer, and an updated definition is fetched anew.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from svc.metadata.remote_schemas import RemoteSchema


@dataclass(frozen=True, slots=True)
class Introspected:
    """A remote's introspection: `data` (the answer's `data`, holding `__schema`) or,
    when it could not be fetched or is not a valid schema, `error` (the reason
    `get_inconsistent_metadata` shows)."""

    data: dict[str, Any] | None
    error: str | None = None


_REGISTRY: dict[tuple[str, bytes], Introspected] = {}


def registry_key(entry: RemoteSchema) -> tuple[str, bytes]:
    """The key of `entry`: its name and its definition as JSON."""
    return (entry.name, msgspec.json.encode(entry.definition))


def lookup(entry: RemoteSchema) -> Introspected | None:
    """What `entry`'s remote answered, None when it was never asked."""
    return _REGISTRY.get(registry_key(entry))


def record(entry: RemoteSchema, found: Introspected) -> None:
    """Keep `found` as `entry`'s introspection (replacing an earlier one)."""
    _REGISTRY[registry_key(entry)] = found


def forget_others(keep: list[RemoteSchema]) -> None:
    """Drop every entry not of a definition in `keep` (the current metadata's remotes),
    so replaced definitions do not accumulate."""
    wanted = {registry_key(e) for e in keep}
    for key in [k for k in _REGISTRY if k not in wanted]:
        del _REGISTRY[key]
