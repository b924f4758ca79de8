"""The sources of a version 3 document that svc does not serve, reported.

svc serves one Postgres database, the source `default` (`svc.metadata.model.DEFAULT_SOURCE`).
A version 3 document (the API's `replace_metadata`, a config v3 metadata directory's
`databases/databases.yaml`) may hold more: `svc.metadata.model` keeps every other source
whole (`Metadata.other_sources`), and this module reports each, so none is dropped
without a word. A source svc does not serve (another name, a second `default`, a
`default` of a kind other than `postgres`) is a `SourceIssue`, reported as the reference
reports a source it cannot connect to: an inconsistent object of type `source` whose
definition is the source's name (hasura/graphql-engine: `get_inconsistent_metadata`
lists `{definition: "<name>", name: "source <name>", reason: "Inconsistent object: …",
type: "source"}`). Like any inconsistency, a write that adds one is refused with it
(`replace_metadata`: 400 `not-supported`); with `allow_inconsistent_metadata` it is kept,
listed by `get_inconsistent_metadata`, exported back, and `drop_inconsistent_metadata`
removes it (`svc.metadata.drop`). Several sources are future work (`pg_add_source`).

The served source's keys svc does not read are refused when the document is read
(`svc.metadata.unsupported`); the ones it keeps (`configuration`, the connection: svc
connects to its own database URL) are `Metadata.default_source`.

`svc compile` prints a `SourceIssue` at the source's entry of `databases/databases.yaml`
(`$[k]`, `k` counted in the order `metadata_to_obj` writes the sources: the served one
first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.errors import ErrorCode
from svc.ir.model import Inconsistency
from svc.metadata.drop import ObjectRef
from svc.metadata.model import DEFAULT_SOURCE, SERVED_KIND, Metadata
from svc.metadata.read_replicas import replica_problems
from svc.metadata.sources import served_sources

SOURCES_FILE = "databases/databases.yaml"


@dataclass(frozen=True, slots=True)
class SourceIssue(Inconsistency):
    """A source svc does not serve (see the module docstring); `index`: its place among the
    sources as `metadata_to_obj` writes them."""

    index: int = 0

    def target(self) -> ObjectRef:
        """The source, by name (`svc.metadata.drop` removes the sources of that name that
        are not served)."""
        return ObjectRef("source", name=str(self.definition))


@dataclass(frozen=True, slots=True)
class ReplicaIssue(Inconsistency):
    """A read replica of the served source that cannot be used (`svc.metadata.read_replicas`:
    an environment variable not set, a malformed entry); `index`: its place in
    `read_replicas`. Queries go to the primary and the other replicas meanwhile."""

    index: int = 0

    def target(self) -> ObjectRef:
        """The replica entry (`drop_inconsistent_metadata` removes it)."""
        return ObjectRef("read_replica", name=str(self.index))


def replica_issues(md: Metadata) -> list[Inconsistency]:
    """Every read replica of the served source that cannot be used (never raises)."""
    source = md.default_source
    configuration = source.get("configuration") if isinstance(source, dict) else None
    return [
        ReplicaIssue(
            "source",
            DEFAULT_SOURCE,
            f"Inconsistent object: read replica {index} of source "
            f'"{DEFAULT_SOURCE}" cannot be used: {reason}',
            ErrorCode.INVALID_CONFIGURATION,
            name=f"source {DEFAULT_SOURCE}",
            index=index,
        )
        for index, reason in replica_problems(configuration)
    ]


def source_issues(md: Metadata) -> list[Inconsistency]:
    """Every source of `md` svc does not serve, in document order, then the served
    source's read replicas that cannot be used (never raises)."""
    out: list[Inconsistency] = replica_issues(md)
    served = md.default_source is not None or bool(md.tables) or bool(md.functions)
    first = 1 if served else 0
    others = served_sources(md)
    for j, source in enumerate(md.other_sources):
        name = str(source.get("name"))
        if name in others and not _repeated(md, j):
            continue  # served (`svc.ir.source_tables`)
        out.append(
            SourceIssue(
                "source",
                name,
                f"Inconsistent object: {_why(md, source, j)}",
                ErrorCode.NOT_SUPPORTED,
                name=f"source {name}",
                index=first + j,
            )
        )
    return out


def _repeated(md: Metadata, j: int) -> bool:
    """Whether `md.other_sources[j]` is not the first served source of its name."""
    source = md.other_sources[j]
    if source.get("kind", SERVED_KIND) != SERVED_KIND:
        return True
    return any(
        s.get("name") == source.get("name") and s.get("kind", SERVED_KIND) == SERVED_KIND
        for s in md.other_sources[:j]
    )


def _why(md: Metadata, source: Any, j: int) -> str:
    name, kind = source.get("name"), source.get("kind", SERVED_KIND)
    if name == DEFAULT_SOURCE and kind != SERVED_KIND:
        return (
            f'source "{name}" is of kind {_shown(kind)}; svc serves one source, '
            f'"{DEFAULT_SOURCE}", of kind "{SERVED_KIND}"'
        )
    earlier = [s.get("name") for s in md.other_sources[:j]]
    if name == DEFAULT_SOURCE or name in earlier:
        return f'source "{name}" is declared more than once; it is kept but not served'
    return (
        f'source "{name}" is of kind {_shown(kind)} and is kept but not served: svc serves '
        f'Postgres sources (kind "{SERVED_KIND}")'
    )


def _shown(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)
