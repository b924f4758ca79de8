"""The metadata document (Hasura v2 export format, `{"version": 2, "tables": [...]}`).

Frozen msgspec structs, decoded and encoded with msgspec; `omit_defaults` keeps exports
minimal and stable. Lists are tuples: a document is never edited, each edit makes a new
one (`svc.metadata.apply`) sharing the parts it did not change. Permissions, computed
fields, functions, collections, the allow-list and REST endpoints are typed
(`permission_model`, `function_model`, `collection_model`); the parts later issues will
type (remote relationships, event triggers, actions, custom types, cron triggers, remote
schemas) are kept as plain JSON objects so that `replace_metadata` → `export_metadata`
round-trips them.
"""

from __future__ import annotations

from hashlib import blake2b
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.metadata import compat, session_names, unsupported
from svc.metadata.action_model import Action, CustomTypes
from svc.metadata.collection_model import AllowlistItem, QueryCollection, RestEndpoint
from svc.metadata.cron_triggers import CronTrigger, normalise_all
from svc.metadata.event_trigger_model import EventTrigger
from svc.metadata.function_model import ComputedField, TrackedFunction
from svc.metadata.limits import (
    ApiLimits,
    IntrospectionOptions,
    api_limits_from_obj,
    introspection_from_obj,
)
from svc.metadata.permission_model import (
    DeletePermission,
    InsertPermission,
    SelectPermission,
    UpdatePermission,
)
from svc.metadata.qualified import JSON, QualifiedName, TableName, plain, qualify
from svc.metadata.root_fields import check_table_entries

__all__ = ["DEFAULT_SOURCE", "JSON", "QualifiedName", "TableName", "plain", "qualify"]

# The one database source svc serves: the v2 format's top-level `tables` and `functions`
# are its (Hasura's v2 export is one source called `default`). The IR stamps it on every
# table, function and relationship it builds (`svc.ir.build`), plans name it
# (`svc.plan.sources`), and execution picks that source's connections
# (`svc.execute.db.Sources`). A version 3 document's other sources are kept, not served
# (`Metadata.other_sources`, reported by `svc.ir.sources`).
DEFAULT_SOURCE = "default"
# The source kind svc serves (`kind` of a version 3 source; absent means this one).
SERVED_KIND = "postgres"


class ManualConfiguration(msgspec.Struct, frozen=True, omit_defaults=True):
    """`manual_configuration` of a relationship: remote table and column mapping."""

    remote_table: Any
    column_mapping: dict[str, str]
    insertion_order: str | None = None


class RelUsing(msgspec.Struct, frozen=True, omit_defaults=True):
    """`using` of a relationship: exactly one of the two keys (spec 2.4)."""

    foreign_key_constraint_on: Any = msgspec.UNSET
    manual_configuration: ManualConfiguration | msgspec.UnsetType = msgspec.UNSET


class Relationship(msgspec.Struct, frozen=True, omit_defaults=True):
    """An object or array relationship as stored in a table entry."""

    name: str
    using: RelUsing
    comment: str | None = None


class CustomRootFields(msgspec.Struct, frozen=True, omit_defaults=True):
    """`custom_root_fields` of a table configuration (names of its root fields)."""

    select: str | None = None
    select_by_pk: str | None = None
    select_aggregate: str | None = None
    select_stream: str | None = None
    insert: str | None = None
    insert_one: str | None = None
    update: str | None = None
    update_by_pk: str | None = None
    update_many: str | None = None
    delete: str | None = None
    delete_by_pk: str | None = None


class TableConfiguration(msgspec.Struct, frozen=True, omit_defaults=True):
    """`configuration` of a tracked table (track_table v2, set_table_customization)."""

    custom_name: str | None = None
    custom_root_fields: CustomRootFields = msgspec.field(default_factory=CustomRootFields)
    custom_column_names: dict[str, str] = msgspec.field(default_factory=dict)
    column_config: dict[str, JSON] = msgspec.field(default_factory=dict)
    comment: str | None = None


class TableEntry(msgspec.Struct, frozen=True, omit_defaults=True):
    """One tracked table with everything attached to it."""

    table: QualifiedName
    is_enum: bool = False
    configuration: TableConfiguration | None = None
    object_relationships: tuple[Relationship, ...] = ()
    array_relationships: tuple[Relationship, ...] = ()
    computed_fields: tuple[ComputedField, ...] = ()
    remote_relationships: tuple[JSON, ...] = ()
    insert_permissions: tuple[InsertPermission, ...] = ()
    select_permissions: tuple[SelectPermission, ...] = ()
    update_permissions: tuple[UpdatePermission, ...] = ()
    delete_permissions: tuple[DeletePermission, ...] = ()
    event_triggers: tuple[EventTrigger, ...] = ()  # svc.metadata.event_trigger_model

    def relationship(self, name: str) -> Relationship | None:
        """The object or array relationship called `name`, if any."""
        for rel in (*self.object_relationships, *self.array_relationships):
            if rel.name == name:
                return rel
        return None


class Metadata(msgspec.Struct, frozen=True, omit_defaults=True):
    """The whole metadata document, as `export_metadata` returns it.

    `tables` and `functions` are those of the one source svc serves, `DEFAULT_SOURCE`.
    A version 3 document's sources (`metadata_from_obj`) also leave `default_source`, that
    source's other keys when it has any besides its name and kind (`configuration`; the
    keys svc does not read are refused: `svc.metadata.unsupported`), and
    `other_sources`, every other source whole (its tables and functions included): kept
    and exported back, never served, each an inconsistent object of type `source`
    (`svc.ir.sources`). `metadata_to_obj` answers version 3 when either is set.
    """

    version: int = 2
    tables: tuple[TableEntry, ...] = ()
    functions: tuple[TrackedFunction, ...] = ()
    remote_schemas: tuple[JSON, ...] = ()
    query_collections: tuple[QueryCollection, ...] = ()
    allowlist: tuple[AllowlistItem, ...] = ()
    actions: tuple[Action, ...] = ()
    custom_types: CustomTypes | msgspec.UnsetType = msgspec.UNSET  # svc.metadata.action_model
    cron_triggers: tuple[CronTrigger, ...] = ()  # svc.metadata.cron_triggers
    rest_endpoints: tuple[RestEndpoint, ...] = ()
    api_limits: ApiLimits | None = None  # `set_api_limits` (svc.metadata.limits)
    graphql_schema_introspection: IntrospectionOptions | None = None
    # Sections svc keeps as given but does not apply; each object is reported as
    # inconsistent (`svc.metadata.unsupported`, `svc.ir.unsupported_issues`).
    inherited_roles: tuple[JSON, ...] = ()
    network: JSON | msgspec.UnsetType = msgspec.UNSET
    backend_configs: JSON | msgspec.UnsetType = msgspec.UNSET
    opentelemetry: JSON | msgspec.UnsetType = msgspec.UNSET
    metrics_config: JSON | msgspec.UnsetType = msgspec.UNSET
    default_source: JSON | None = None  # version 3: see the class docstring
    other_sources: tuple[JSON, ...] = ()

    def table(self, name: QualifiedName) -> TableEntry | None:
        """The tracked table entry for `name`, if tracked."""
        for entry in self.tables:
            if entry.table == name:
                return entry
        return None


_decoder = msgspec.json.Decoder(Metadata)


def decode_metadata(raw: bytes | str) -> Metadata:
    """Decode a stored metadata document (trusted JSON written by svc)."""
    return _decoder.decode(raw)


def _layout_field(info: msgspec.structs.FieldInfo) -> tuple[str, Any, Any]:
    kind = tuple[msgspec.Raw, ...] if info.name == "tables" else info.type
    if info.default_factory is not msgspec.NODEFAULT:
        return info.name, kind, msgspec.field(default_factory=info.default_factory)
    return info.name, kind, info.default


# `Metadata` with each table entry left as its JSON text (`MetadataDecoder`).
_Layout = msgspec.defstruct(
    "_Layout", [_layout_field(f) for f in msgspec.structs.fields(Metadata)], frozen=True
)
_layout_decoder = msgspec.json.Decoder(_Layout)
_entry_decoder = msgspec.json.Decoder(TableEntry)
_OTHER_FIELDS = tuple(f for f in Metadata.__struct_fields__ if f != "tables")


class MetadataDecoder:
    """Decodes the stored documents of one engine, one after another: a table entry whose
    JSON text is the same as in the previous document is that document's entry object,
    not decoded again (found by a 128-bit BLAKE2b digest of the text).

    Why: after a metadata change every worker reads the whole stored document again; at
    10,000 tables decoding it took 0.8 s, for a change of one entry. Sharing unchanged
    entries also lets the IR build recognise them by identity (`svc.ir.build`). The result
    equals `decode_metadata(raw)`. Not for concurrent use (one engine's loop)."""

    def __init__(self) -> None:
        self._entries: dict[bytes, TableEntry] = {}  # the previous document's, by digest

    def decode(self, raw: bytes | str) -> Metadata:
        """The document `raw` (trusted JSON written by svc); raises msgspec's errors."""
        layout: Any = _layout_decoder.decode(raw)
        keys = [blake2b(text, digest_size=16).digest() for text in layout.tables]
        known = self._entries
        if not known:  # the first document: one decode is faster than one per entry
            whole = _decoder.decode(raw)
            self._entries = dict(zip(keys, whole.tables, strict=True))
            return whole
        entries: dict[bytes, TableEntry] = {}
        for key, text in zip(keys, layout.tables, strict=True):
            entries[key] = known.get(key) or entries.get(key) or _entry_decoder.decode(text)
        self._entries = entries
        tables = tuple(entries[key] for key in keys)
        rest = {name: getattr(layout, name) for name in _OTHER_FIELDS}
        return Metadata(tables=tables, **rest)


def metadata_from_obj(obj: Any, path: str = "$.args") -> Metadata:
    """Build `Metadata` from user JSON (`replace_metadata`); accepts versions 1, 2 and 3
    (older shapes: `svc.metadata.compat`).

    Version 3 (`sources: [{name, kind, tables, functions, configuration, …}]`): the source
    svc serves (`served_source`: the first called `default` of kind `postgres`) gives
    `tables` and `functions`, its other keys beyond `name` and `kind` are kept as
    `default_source`; every other source is kept whole in `other_sources` (svc serves one
    database; `svc.ir.sources` reports each as an inconsistent object of type `source`).
    Raises `SvcError` `parse-failed` with the JSON path of the first bad value: a `version`
    other than 2 or 3 (`check_version`), a source that is not an object or has no string
    `name`, a value of the wrong type (msgspec's message; a select permission's root field
    lists: aeson's, `svc.metadata.root_fields`), a name that is not a GraphQL name
    (`svc.metadata.names.check_metadata_names`, which also raises its other codes).
    """
    from svc.metadata.names import check_metadata_names  # names.py imports this module

    check_version(obj, path)
    unsupported.check_sections(obj, path)  # what is neither read nor kept is refused
    tables_path = f"{path}.tables"
    given: list[Any] = []
    if isinstance(obj, dict) and isinstance(obj.get("sources"), list):
        given = obj["sources"]
        obj, k = _from_sources(obj, path)
        if k is not None:
            tables_path = f"{path}.sources[{k}].tables"
    if isinstance(obj, dict):
        obj = compat.upgrade(obj)  # version 1, functions as plain names
    limits = introspection = None
    if isinstance(obj, dict):
        tables = [_normalise_table(t) for t in obj.get("tables") or []]
        obj = {**obj, "tables": check_table_entries(tables, tables_path)}
        limits = api_limits_from_obj(obj.pop("api_limits", None), f"{path}.api_limits")
        raw = obj.pop("graphql_schema_introspection", None)
        if raw is not None:
            introspection = introspection_from_obj(raw, f"{path}.graphql_schema_introspection")
    unsupported.check_keys(obj, Metadata, path, tables_path)
    try:
        md = msgspec.convert(obj, Metadata)
    except msgspec.ValidationError as exc:
        raise _in_source(convert_error(exc, path), path, tables_path) from None
    md = msgspec.structs.replace(md, api_limits=limits, graphql_schema_introspection=introspection)
    md = msgspec.structs.replace(md, cron_triggers=normalise_all(md.cron_triggers, path))
    check_metadata_names(md, tables_path, tables_path.removesuffix("tables") + "functions")
    session_names.check_metadata(md, path, tables_path)  # the other spelling: refused
    if md.other_sources:
        _check_served(md, given, path)
    return md


def _check_served(md: Metadata, given: list[Any], path: str) -> None:
    """Read each other served source's tables and functions as `default`'s are read
    (`svc.metadata.sources.source_view`), raising the first error at its place among
    `given` (the document's `sources`)."""
    from svc.metadata.sources import served_sources, source_view  # it imports this module

    waiting = set(served_sources(md))
    for k, source in enumerate(given):
        name = source.get("name") if isinstance(source, dict) else None
        kind = source.get("kind", SERVED_KIND) if isinstance(source, dict) else None
        if name in waiting and kind == SERVED_KIND:
            waiting.discard(name)
            source_view(md, name, f"{path}.sources[{k}]")


def _in_source(error: SvcError, path: str, tables_path: str) -> SvcError:
    """An error at `<path>.tables…` or `<path>.functions…` of a version 3 document at
    its place in the served source (`<path>.sources[k].tables…`)."""
    source = tables_path.removesuffix("tables")
    if source == f"{path}.":
        return error
    for key in ("tables", "functions"):
        prefix = f"{path}.{key}"
        rest = error.path.removeprefix(prefix)
        if rest != error.path and (not rest or rest[0] in ".["):
            error.path = f"{source}{key}{rest}"
    return error


def served_source(sources: list[Any]) -> int | None:
    """Index of the source svc serves among a version 3 document's `sources`: the first
    object named `DEFAULT_SOURCE` whose `kind` is `SERVED_KIND` or not given."""
    for k, source in enumerate(sources):
        if (
            isinstance(source, dict)
            and source.get("name") == DEFAULT_SOURCE
            and source.get("kind", SERVED_KIND) == SERVED_KIND
        ):
            return k
    return None


# Keys of a source that the version 2 shape says too (the others make `default_source`).
_V2_SOURCE_KEYS = frozenset({"name", "kind", "tables", "functions"})


def _from_sources(obj: dict[str, Any], path: str) -> tuple[dict[str, Any], int | None]:
    """A version 3 document in the version 2 shape svc reads, with `default_source` and
    `other_sources` (see `metadata_from_obj`); and the served source's index."""
    obj = dict(obj)
    sources = obj.pop("sources")
    for k, source in enumerate(sources):
        at = f"{path}.sources[{k}]"
        if not isinstance(source, dict):
            raise SvcError(ErrorCode.PARSE_FAILED, "expected an object", path=at)
        if "name" not in source:
            raise SvcError(ErrorCode.PARSE_FAILED, 'key "name" not found', path=at)
        if not isinstance(source["name"], str):
            raise SvcError(ErrorCode.PARSE_FAILED, "expected a string", path=f"{at}.name")
    served_at = served_source(sources)
    obj.pop("default_source", None)
    if served_at is not None:
        served = sources[served_at]
        obj["tables"] = served.get("tables", [])
        obj["functions"] = served.get("functions", [])
        if set(served) - _V2_SOURCE_KEYS:
            obj["default_source"] = {
                key: value for key, value in served.items() if key not in ("tables", "functions")
            }
    obj["other_sources"] = [s for j, s in enumerate(sources) if j != served_at]
    obj["version"] = 2
    return obj, served_at


SUPPORTED_VERSIONS = compat.VERSIONS


def check_version(obj: Any, path: str) -> None:
    """Refuse a document whose `version` svc does not read: 400 `parse-failed` at
    `<path>.version`, `expected 1, 2 or 3, encountered <version>` (the reference's
    `MetadataVersion` parser). A document without `version` is read as version 2 (3 when
    it has `sources`); version 1 is read as 2 (`svc.metadata.compat`)."""
    if not isinstance(obj, dict) or "version" not in obj:
        return
    version = obj["version"]
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        shown = msgspec.json.encode(version).decode()
        if len(shown) > 40:
            shown = shown[:40] + "…"
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            f"expected 1, 2 or 3, encountered {shown}",
            path=f"{path}.version",
        )


def _normalise_table(entry: Any) -> Any:
    if isinstance(entry, dict) and "table" in entry:
        q = qualify(entry["table"])
        return {**entry, "table": {"schema": q.schema, "name": q.name}}
    return entry


def convert_error(exc: msgspec.ValidationError, path: str) -> SvcError:
    """Turn a msgspec validation error (`… - at `$.x``) into `parse-failed` at `path`."""
    text = str(exc)
    message, _, where = text.partition(" - at `")
    suffix = where.rstrip("`")[1:] if where else ""
    return SvcError(ErrorCode.PARSE_FAILED, message, path=path + suffix)


def encode_metadata(md: Metadata) -> bytes:
    """Canonical JSON bytes of a metadata document (stable key order)."""
    return msgspec.json.encode(md)


def metadata_to_obj(md: Metadata) -> JSON:
    """The metadata as plain JSON-able objects (`export_metadata`).

    The version 2 shape (top-level `tables` and `functions`: spec 2.1, what svc has
    always answered), unless `md` holds what that shape cannot: sources from a version 3
    document (`default_source`, `other_sources`); then the version 3 shape the reference
    answers, `{version: 3, sources: [{name: default, kind, tables, functions, …}, …], …}`,
    the served source first.
    """
    out: JSON = plain(md)
    if md.default_source is None and not md.other_sources:
        return out
    tables = out.pop("tables", [])
    functions = out.pop("functions", [])
    attrs = dict(out.pop("default_source", None) or {})
    others = out.pop("other_sources", [])
    out.pop("version", None)
    sources: list[JSON] = []
    if md.default_source is not None or tables or functions:
        served: JSON = {
            "name": attrs.pop("name", DEFAULT_SOURCE),
            "kind": attrs.pop("kind", SERVED_KIND),
            "tables": tables,
        }
        if functions:
            served["functions"] = functions
        sources.append({**served, **attrs})
    return {"version": 3, "sources": [*sources, *others], **out}
