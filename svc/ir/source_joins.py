"""Relationships from a table to a table of another source (a remote relationship with
`definition.to_source` naming another source: the reference's remote source
relationships, `Hasura.RQL.Types.Relationships.ToSource`).

A `to_source` relationship within its own source is an ordinary join (`svc.ir.relationships`);
one to another source cannot be one SQL statement. Each becomes a `SourceJoin` (the
struct remote schemas' type relationships to tables already use): the owner's table
type gets a field answered after the owner's statement by one more query, as the
request's role, on the target table's `select` root field, one aliased root field per
distinct set of join values (`svc.schema.remote_merge.add_source_joins`,
`svc.api.source_join`), as the reference answers them (`RemoteSourceJoin`, one query of
the target source per join). A relationship that does not resolve (the source is not
served, the table not tracked there, a column missing, a name taken) is an inconsistent
`remote_relationship` with the reference's reasons.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.ir.model import Inconsistency, Table
from svc.ir.unsupported_issues import type_relationship_issue
from svc.metadata.model import DEFAULT_SOURCE, Metadata, QualifiedName
from svc.metadata.qualified import in_source
from svc.metadata.remote_schemas import (
    RemoteType,
    SourceJoin,
    source_definition,
    type_relationships,
)
from svc.metadata.sources import is_served, served_sources, source_view


def source_joins(
    md: Metadata, tables: Mapping[QualifiedName, Table]
) -> tuple[tuple[SourceJoin, ...], list[Inconsistency]]:
    """Every relationship of `md`'s tables (any source's) to a table of another source,
    resolved against the whole IR's `tables`, and the ones that do not resolve."""
    joins: list[SourceJoin] = []
    issues: list[Inconsistency] = []
    for source, view in _views(md):
        for entry in view.tables:
            for raw in entry.remote_relationships:
                found = _resolved(md, source, entry.table, raw, tables)
                if isinstance(found, SourceJoin):
                    joins.append(found)
                elif found is not None:
                    issues.append(_issue(source, entry.table, raw, found))
    issues.extend(_type_issues(md, tables))
    return tuple(joins), issues


def _type_issues(md: Metadata, tables: Mapping[QualifiedName, Table]) -> list[Inconsistency]:
    """Remote schemas' type relationships to a table of another served source whose
    table is not tracked there or lacks a mapped column (those to `default` and to
    sources not served: `svc.ir.unsupported_issues`)."""
    out: list[Inconsistency] = []
    for rel in type_relationships(md):
        if not isinstance(rel, SourceJoin) or rel.source == DEFAULT_SOURCE:
            continue
        if not is_served(md, rel.source) or not isinstance(rel.table, RemoteType):
            continue
        target = tables.get(rel.target)
        problem = None
        if target is None:
            problem = f"table {rel.target.quoted()} is not tracked"
        else:
            missing = [c for _, c in rel.field_mapping if target.column(c) is None]
            problem = f'no such column exists : "{missing[0]}"' if missing else None
        if problem is not None:
            out.append(type_relationship_issue(rel.table, rel.name, problem, ErrorCode.NOT_EXISTS))
    return out


def _views(md: Metadata) -> list[tuple[str, Metadata]]:
    out = [(DEFAULT_SOURCE, md)]
    for name in served_sources(md):
        try:
            out.append((name, source_view(md, name)))
        except SvcError:
            continue  # the source is inconsistent as a whole (`svc.ir.source_tables`)
    return out


def _resolved(
    md: Metadata,
    source: str,
    owner_name: QualifiedName,
    raw: Any,
    tables: Mapping[QualifiedName, Table],
) -> SourceJoin | SvcError | None:
    """The join of `raw`, the error that keeps it from resolving, or None when it is not
    a relationship to another source (or its owner is not served)."""
    try:
        d = source_definition(raw)
    except SvcError:
        return None  # reported by the owner's own build (`svc.ir.relationships`)
    if d is None or d["source"] == source:
        return None
    owner_key = in_source(owner_name, source)
    owner = tables.get(owner_key)
    if owner is None:
        return None
    name = str(raw.get("name"))
    if owner.column(name) is not None or owner.relationship_map.get(name) is not None:
        return SvcError(
            ErrorCode.ALREADY_EXISTS,
            f"field with name {name!r} already exists in table {owner_name.quoted()}",
        )
    if not is_served(md, d["source"]):
        return SvcError(ErrorCode.NOT_EXISTS, f"source with name {d['source']!r} not found")
    target_key = in_source(d["table"], d["source"])
    target = tables.get(target_key)
    if target is None:
        return SvcError(ErrorCode.NOT_EXISTS, f"table {d['table'].quoted()} is not tracked")
    for local, far in d["field_mapping"]:
        if owner.column(local) is None:
            return SvcError(ErrorCode.NOT_EXISTS, f'no such column exists : "{local}"')
        if target.column(far) is None:
            return SvcError(ErrorCode.NOT_EXISTS, f'no such column exists : "{far}"')
    return SourceJoin(
        name=name,
        table=owner_key,  # type: ignore[arg-type]  # a table owns it here, not a remote type
        source=d["source"],
        target=target_key,
        kind=d["relationship_type"],
        field_mapping=d["field_mapping"],
    )


def _issue(source: str, owner: QualifiedName, raw: Any, exc: SvcError) -> Inconsistency:
    name = str(raw.get("name")) if isinstance(raw, dict) else ""
    return Inconsistency(
        "remote_relationship",
        {"table": msgspec.to_builtins(owner), **(raw if isinstance(raw, dict) else {})},
        f"Inconsistent object: in table {owner.quoted()}: in remote relationship "
        f'"{name}": {exc.message}',
        exc.code,
        f"remote_relationship {name} in table {owner} in source {source}",
        in_source(owner, source),
        name,
    )
