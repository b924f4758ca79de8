"""The metadata operations as records: one `Operation` per operation, merged into one
`Registry` (`svc.api.metadata.REGISTRY`) from the lists each module contributes.

A record names its handler, its argument type, whether it only reads (it then runs
without the metadata row lock), whether a role other than admin may run it, its aliases
(the `pg_` spellings of `/v1/metadata`) and the checks that follow it (`Check`). The
checks run after the handler in the order `Check` lists them (`CHECK_ORDER`), by one
function, `svc.api.op_checks.run_checked`. Adding an operation: add a record to the
module's list (`OPERATIONS`), naming its checks; `tests/test_op_registry.py` refuses a
record without them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from svc.api.op_context import Handler


class Check(enum.Enum):
    """A step that runs after an operation's handler, comparing the request's state with
    how it was before (`op_context.Before`). The members are listed in the order they
    run (`CHECK_ORDER`): refusals of what the handler itself produced first, then what
    follows remote schemas, then cron triggers, and the database's capture triggers last
    (so they match the document as it will be committed)."""

    # 500 `unexpected` when a stored query or REST endpoint became inconsistent
    # (`svc.api.collections.check_collections`).
    COLLECTIONS = "collections"
    # `run_sql`'s column renames followed into remote relationships
    # (`svc.api.remote_rel_ops.follow_renames`).
    REMOTE_RENAMES = "remote_renames"
    # 400 `remote-schema-conflicts` when a database root field clashes with a remote's
    # (`svc.api.remote_ops.refuse_conflicts`).
    REMOTE_CONFLICTS = "remote_conflicts"
    # Introspect the document's remotes not asked yet (`svc.api.remote_ops`).
    INTROSPECT_REMOTES = "introspect_remotes"
    # As INTROSPECT_REMOTES, all of them with `reload_remote_schemas`, and the answer's
    # `is_consistent` counting them (`reload_metadata`).
    REFRESH_REMOTES = "refresh_remotes"
    # Remotes that could not be introspected added to the answer's inconsistent objects.
    REMOTE_ISSUES = "remote_issues"
    # An exported document leaves out cron triggers with `include_in_metadata: false`
    # (`svc.api.scheduled.export_crons`).
    CRON_EXPORT = "cron_export"
    # Those triggers kept across a replace, their events following (`keep_crons`).
    CRON_KEEP = "cron_keep"
    # A trigger naming a column `run_sql` dropped: `dependency-error`, or dropped with
    # `cascade` (`svc.api.event_triggers.check_trigger_columns`).
    TRIGGER_COLUMNS = "trigger_columns"
    # Exactly one of the next three: capture triggers made to match the document when it
    # or the catalog changed; RESYNC_TRIGGERS reads what exists from the database
    # (`reload_metadata`); SYNC_TRIGGERS_DROP_LOG also drops the event tables when no
    # trigger is left (`clear_metadata`).
    SYNC_TRIGGERS = "sync_triggers"
    RESYNC_TRIGGERS = "resync_triggers"
    SYNC_TRIGGERS_DROP_LOG = "sync_triggers_drop_log"


CHECK_ORDER: tuple[Check, ...] = tuple(Check)
SYNC_VARIANTS = frozenset(
    {Check.SYNC_TRIGGERS, Check.RESYNC_TRIGGERS, Check.SYNC_TRIGGERS_DROP_LOG}
)
# What most operations get: the stored-query check and the capture-trigger sync.
STANDARD = frozenset({Check.COLLECTIONS, Check.SYNC_TRIGGERS})
SYNC_ONLY = frozenset({Check.SYNC_TRIGGERS})


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One metadata operation.

    `args`: the msgspec type its arguments decode as (None: the handler decodes them, its
    docstring says how); `read_only`: runs without the row lock and never commits;
    `checks`: what runs after the handler (required: an empty set must be written);
    `aliases`: other names of the same record (`pg_<name>`); `any_role`: a role other
    than admin may run it on `/v1/query` (else 400 `access-denied`)."""

    name: str
    handler: Handler
    args: Any
    read_only: bool
    checks: frozenset[Check]
    aliases: tuple[str, ...] = ()
    any_role: bool = False


def pg(name: str) -> tuple[str, ...]:
    """The `/v1/metadata` spelling of an operation on a Postgres source."""
    return (f"pg_{name}",)


@dataclass(frozen=True)
class Registry(Mapping[str, Operation]):
    """Every operation by name and by alias. Build with `Registry.of(*lists)`."""

    by_name: Mapping[str, Operation]

    @classmethod
    def of(cls, *groups: Iterable[Operation]) -> Registry:
        """Merge the lists; raises ValueError when a name or alias is given twice."""
        found: dict[str, Operation] = {}
        for group in groups:
            for op in group:
                for name in (op.name, *op.aliases):
                    if name in found:
                        raise ValueError(f"metadata operation {name!r} is registered twice")
                    found[name] = op
        return cls(found)

    def __getitem__(self, name: str) -> Operation:
        return self.by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_name)

    def __len__(self) -> int:
        return len(self.by_name)

    def records(self) -> list[Operation]:
        """Each record once (aliases left out)."""
        return [op for name, op in self.by_name.items() if name == op.name]

    def names(
        self, *, read_only: bool | None = None, any_role: bool | None = None
    ) -> frozenset[str]:
        """The names (aliases included) of records matching the given flags."""
        return frozenset(
            name
            for name, op in self.by_name.items()
            if (read_only is None or op.read_only == read_only)
            and (any_role is None or op.any_role == any_role)
        )
