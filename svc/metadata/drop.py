"""Dropping the metadata objects that inconsistencies name (`cascade`,
`drop_inconsistent_metadata`), and the objects whose database object is gone (`run_sql`):
pure transitions `(Metadata, …) -> Metadata` (see `svc.metadata.apply`).

The IR layer says which object an inconsistency is about as an `ObjectRef`
(`svc.ir.model.Inconsistency.target`); this module needs nothing of the IR.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable

import msgspec

from svc.metadata.actions import drop_action_object
from svc.metadata.apply import replace_table, without_relationship
from svc.metadata.apply_functions import without_functions
from svc.metadata.apply_permissions import without_computed_field, without_permission
from svc.metadata.model import Metadata, QualifiedName, TableEntry
from svc.metadata.qualified import SourcedName
from svc.metadata.read_replicas import without_replica
from svc.metadata.unsupported import KEPT_KINDS, drop_kept


class ObjectRef(msgspec.Struct, frozen=True):
    """A metadata object: `kind` is the inconsistency type (`table`, `function`,
    `computed_field`, `<kind>_permission`, `object_relation`, `array_relation`, …), `table`
    the table it belongs to (a table: itself), `name` the relationship or computed field
    name or `role.kind` of a permission (a source: its name), `function` a tracked
    function's name. An object without `table` or
    `function` (whole-document issues) names nothing to drop."""

    kind: str
    table: QualifiedName | None = None
    name: str | None = None
    function: QualifiedName | None = None


def drop_object(md: Metadata, ref: ObjectRef) -> Metadata:
    """`md` without the object `ref` names; unchanged when it is not there."""
    if ref.kind == "read_replica" and ref.name is not None:  # of the served source
        source = without_replica(md.default_source, int(ref.name))
        return msgspec.structs.replace(md, default_source=source)
    if ref.kind == "source":  # the sources of that name svc does not serve
        others = tuple(s for s in md.other_sources if s.get("name") != ref.name)
        return msgspec.structs.replace(md, other_sources=others)
    if ref.kind in ("action", "custom_types"):
        return drop_action_object(md, ref.kind, ref.name)
    if ref.kind in KEPT_KINDS:
        kept: Metadata = drop_kept(md, ref.kind, ref.name)
        return kept
    if ref.kind == "remote_schema" and ref.table is None:
        schemas = tuple(
            r for r in md.remote_schemas if not (isinstance(r, dict) and r.get("name") == ref.name)
        )
        return msgspec.structs.replace(md, remote_schemas=schemas)
    if ref.kind == "event_trigger" and ref.table is not None:
        if md.table(ref.table) is None:
            return md
        return replace_table(
            md,
            ref.table,
            lambda e: msgspec.structs.replace(
                e, event_triggers=tuple(t for t in e.event_triggers if t.name != ref.name)
            ),
        )
    if ref.kind == "remote_relationship" and ref.table is not None:
        if md.table(ref.table) is None:
            return md
        return replace_table(md, ref.table, lambda e: without_remote_relationship(e, ref.name))
    if ref.kind == "function":
        return without_functions(md, lambda n: n == ref.function)
    table, name = ref.table, ref.name
    if table is None:
        return md
    if ref.kind == "computed_field":
        if name is None or md.table(table) is None:
            return md
        return replace_table(md, table, lambda e: without_computed_field(e, name))
    if name is None:
        return msgspec.structs.replace(md, tables=tuple(t for t in md.tables if t.table != table))
    if md.table(table) is None:
        return md
    if ref.kind.endswith("_permission"):
        role, kind = name.rsplit(".", 1)
        return replace_table(md, table, lambda e: without_permission(e, kind, role))
    return replace_table(md, table, lambda e: without_relationship(e, name))


def drop_objects(md: Metadata, refs: Iterable[ObjectRef]) -> Metadata:
    """`md` without every object of `refs`, dropped in order; an object of another
    source (its table a `SourcedName`) is dropped from that source's tables."""
    for ref in refs:
        if isinstance(ref.table, SourcedName):
            md = _drop_in_source(md, ref, ref.table.source)
        else:
            md = drop_object(md, ref)
    return md


def _drop_in_source(md: Metadata, ref: ObjectRef, source: str) -> Metadata:
    from svc.metadata.sources import is_served, source_view, with_source  # imports drop's users

    if not is_served(md, source):
        return md
    assert ref.table is not None
    plain = msgspec.structs.replace(ref, table=QualifiedName(ref.table.name, ref.table.schema))
    return with_source(md, source, drop_object(source_view(md, source), plain))


def keep_existing(
    md: Metadata,
    tables: Container[tuple[str, str]],
    function_exists: Callable[[QualifiedName], bool],
) -> Metadata:
    """`md` without the tables whose `(schema, name)` is not in `tables` and the functions
    for which `function_exists` is false (`run_sql` dropped them in Postgres)."""
    kept = tuple(t for t in md.tables if (t.table.schema, t.table.name) in tables)
    md = msgspec.structs.replace(md, tables=kept) if len(kept) != len(md.tables) else md
    return without_functions(md, lambda n: not function_exists(n))


def without_remote_relationship(entry: TableEntry, name: str | None) -> TableEntry:
    """`entry` without its remote relationship `name`."""
    rels = tuple(
        r for r in entry.remote_relationships if not (isinstance(r, dict) and r.get("name") == name)
    )
    return msgspec.structs.replace(entry, remote_relationships=rels)
