"""What each remote schema answered to introspection (`RemoteRegistry`).

Remote schemas are to the merged GraphQL schema what the Postgres catalog is to tables:
an input fetched with I/O (`svc.api.remote_fetch`) before schemas are built. The schema
build (`svc.schema.remote_merge`) only reads a registry it is given, so it stays pure.
The engine owns one registry (`svc.api.state.Resources`) shared by its successive
states: an entry is keyed by the remote's name and its encoded definition, so a state
built from an older definition never sees the newer one's answer, and an updated
definition is fetched anew.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from svc.ir.model import Inconsistency
from svc.metadata.model import Metadata
from svc.metadata.remote_schemas import RemoteSchema, remote_schemas
from svc.schema.remote_permission_check import permission_issues


@dataclass(frozen=True, slots=True)
class Introspected:
    """A remote's introspection: `data` (the answer's `data`, holding `__schema`) or,
    when it could not be fetched or is not a valid schema, `error` (the reason
    `get_inconsistent_metadata` shows)."""

    data: dict[str, Any] | None
    error: str | None = None


def registry_key(entry: RemoteSchema) -> tuple[str, bytes]:
    """The key of `entry`: its name and its definition as JSON."""
    return (entry.name, msgspec.json.encode(entry.definition))


class RemoteRegistry:
    """The introspection of each remote definition asked so far: `{(name, definition
    JSON): Introspected}` (`registry_key`)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[tuple[str, bytes], Introspected] = {}

    def lookup(self, entry: RemoteSchema) -> Introspected | None:
        """What `entry`'s remote answered, None when it was never asked."""
        return self._entries.get(registry_key(entry))

    def record(self, entry: RemoteSchema, found: Introspected) -> None:
        """Keep `found` as `entry`'s introspection (replacing an earlier one)."""
        self._entries[registry_key(entry)] = found

    def forget_others(self, keep: list[RemoteSchema]) -> None:
        """Drop every entry not of a definition in `keep` (the current metadata's
        remotes), so replaced definitions do not accumulate."""
        wanted = {registry_key(e) for e in keep}
        for key in [k for k in self._entries if k not in wanted]:
            del self._entries[key]


def remote_issues(md: Metadata, remotes: RemoteRegistry) -> list[Inconsistency]:
    """The remote schemas of `md` that could not be introspected (`type: remote_schema`,
    the reason their error): served without their fields, listed by
    `get_inconsistent_metadata`, warned about by `/healthz`; and the permissions their
    introspection refutes (`type: remote_schema_permission`, `permission_issues`), whose
    roles see nothing of the remote."""
    out = []
    raw_by_name = {r.get("name"): r for r in md.remote_schemas if isinstance(r, dict)}
    for entry in remote_schemas(md):
        found = remotes.lookup(entry)
        if found is not None and found.error is not None:
            out.append(
                Inconsistency(
                    "remote_schema",
                    raw_by_name.get(entry.name),
                    f"Inconsistent object: {found.error}",
                    name=f"remote_schema {entry.name}",
                    relationship=entry.name,
                )
            )
        elif found is not None and found.data is not None and entry.permissions:
            out.extend(permission_issues(entry.name, raw_by_name.get(entry.name), found.data))
    return out
