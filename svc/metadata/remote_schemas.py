"""Remote schemas and remote relationships in the metadata document (spec 2.1
`remote_schemas.yaml`, 2.6, 4.1, 4.7).

The document keeps both as the JSON it was given (`Metadata.remote_schemas`,
`TableEntry.remote_relationships`), so `export → apply → export` is byte-identical; this
module reads them as typed frozen structs and makes the pure transitions
`(Metadata, args) → Metadata` of their operations. Errors are `SvcError`s with the
reference's codes: `already-exists`, `not-exists`, `parse-failed`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.metadata.model import Metadata, QualifiedName, TableEntry, qualify
from svc.metadata.qualified import in_source
from svc.outbound import HeaderConf, check_header

JSON = Any


class RemoteSchemaDef(msgspec.Struct, frozen=True, kw_only=True):
    """`definition` of a remote schema: `url` (a `{{ENV}}` template) or `url_from_env`,
    configured `headers`, `forward_client_headers`, `timeout_seconds` (default 60, the
    reference's) and `customization` (`root_fields_namespace`, `type_names`,
    `field_names`)."""

    url: str | None = None
    url_from_env: str | None = None
    headers: tuple[HeaderConf, ...] | None = None
    forward_client_headers: bool | None = False
    timeout_seconds: float | None = None
    customization: JSON = None

    @property
    def timeout(self) -> float:
        """Seconds allowed per call (60 when not configured)."""
        return float(self.timeout_seconds) if self.timeout_seconds else 60.0


class RemotePermission(msgspec.Struct, frozen=True):
    """One role's permission on a remote schema: `definition.schema` is an SDL subset."""

    role: str
    definition: JSON


class RemoteSchema(msgspec.Struct, frozen=True, kw_only=True):
    """A `remote_schemas.yaml` entry; `remote_relationships` (`[{type_name,
    relationships: [{name, definition}]}]`, relationships of the remote's types) are read
    by `svc.metadata.remote_type_relationships`."""

    name: str
    definition: RemoteSchemaDef
    comment: str | None = None
    permissions: tuple[RemotePermission, ...] | None = None
    remote_relationships: JSON = None


class RemoteType(msgspec.Struct, frozen=True):
    """An object type of a remote schema, in the remote's own names: the owner of a
    remote schema's remote relationship."""

    remote_schema: str
    type_name: str

    def quoted(self) -> str:
        """`remote_schema.type_name`, for messages."""
        return f"{self.remote_schema}.{self.type_name}"

    def __str__(self) -> str:
        return self.quoted()


def remote_sdls(entry: RemoteSchema) -> dict[str, str]:
    """Each role with a permission on remote schema `entry` → its SDL
    (`definition.schema`)."""
    out: dict[str, str] = {}
    for perm in entry.permissions or ():
        sdl = perm.definition.get("schema") if isinstance(perm.definition, dict) else None
        if isinstance(sdl, str):
            out[perm.role] = sdl
    return out


class RemoteRelationship(msgspec.Struct, frozen=True, kw_only=True):
    """A remote relationship to a remote schema: of a table (`table` a `QualifiedName`,
    join columns `svc_fields`) or of a remote schema's type (`table` a `RemoteType`, join
    fields of that type), the `remote_schema` and `remote_field` (`{field: {arguments,
    field?}}`, arguments with `$field`s)."""

    name: str
    table: QualifiedName | RemoteType
    svc_fields: tuple[str, ...]
    remote_schema: str
    remote_field: dict[str, Any]


def _convert(kind: type[Any], raw: Any, path: str) -> Any:
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).partition(" - at `")
        raise SvcError(ErrorCode.PARSE_FAILED, message, path=path + where.rstrip("`")[1:]) from None


def parse_remote_schema(raw: Any, path: str = "$.args") -> RemoteSchema:
    """The typed entry of `raw` (`{name, definition, comment?}`); 400 `parse-failed` for
    a wrong shape, a header without exactly one of `value`/`value_from_env`, or a
    definition with neither or both of `url`/`url_from_env` (the reference's message)."""
    entry: RemoteSchema = _convert(RemoteSchema, raw, path)
    for i, header in enumerate(entry.definition.headers or ()):
        check_header(header, f"{path}.definition.headers[{i}]")
    d = entry.definition
    if (d.url is None) == (d.url_from_env is None):
        raise SvcError(
            ErrorCode.INVALID_PARAMS if d.url is None else ErrorCode.UNEXPECTED,
            "both `url` and `url_from_env` can't be empty"
            if d.url is None
            else "both `url` and `url_from_env` can't be present",
            path=f"{path}.definition",
        )
    return entry


def remote_schemas(md: Metadata) -> list[RemoteSchema]:
    """Every remote schema of `md`, typed (entries that do not decode are skipped: a
    stored document was checked when written)."""
    out = []
    for raw in md.remote_schemas:
        try:
            out.append(msgspec.convert(raw, RemoteSchema))
        except msgspec.ValidationError:
            continue
    return out


def find_remote(md: Metadata, name: str) -> RemoteSchema | None:
    """The remote schema called `name`, if any."""
    return next((r for r in remote_schemas(md) if r.name == name), None)


def add_remote_schema(md: Metadata, raw: dict[str, Any]) -> Metadata:
    """`md` with remote schema `raw` appended (stored as given); 400 `already-exists`
    when the name is taken."""
    entry = parse_remote_schema(raw)
    if find_remote(md, entry.name) is not None:
        raise SvcError(
            ErrorCode.ALREADY_EXISTS,
            f"remote schema with name {entry.name!r} already exists",
            path="$.args",
        )
    return msgspec.structs.replace(md, remote_schemas=(*md.remote_schemas, raw))


def remote_index(md: Metadata, name: str) -> int:
    """The position of remote schema `name` in `md.remote_schemas`; 400 `not-exists`."""
    for i, raw in enumerate(md.remote_schemas):
        if isinstance(raw, dict) and raw.get("name") == name:
            return i
    raise SvcError(
        ErrorCode.NOT_EXISTS, f"remote schema with name {name} does not exist", path="$.args"
    )


def remove_remote_schema(md: Metadata, name: str) -> Metadata:
    """`md` without remote schema `name`; 400 `not-exists`; 400 `dependency-error` while
    a remote relationship uses it (the reference refuses, it never cascades here)."""
    i = remote_index(md, name)
    users = [r for r in remote_relationships(md) if r.remote_schema == name]
    users += [
        r
        for r in type_relationships(md)
        if isinstance(r, RemoteRelationship)
        and r.remote_schema == name
        and isinstance(r.table, RemoteType)
        and r.table.remote_schema != name
    ]
    if users:
        names = ", ".join(f"remote_relationship {r.name} in {_owner(r.table)}" for r in users)
        raise SvcError(
            ErrorCode.DEPENDENCY_ERROR,
            f"cannot drop due to the following dependent objects : {names}",
            path="$.args",
        )
    kept = md.remote_schemas[:i] + md.remote_schemas[i + 1 :]
    return msgspec.structs.replace(md, remote_schemas=kept)


def _owner(owner: QualifiedName | RemoteType) -> str:
    if isinstance(owner, RemoteType):
        return f'remote schema "{owner.remote_schema}" type "{owner.type_name}"'
    return f'table "{owner.name}"'


def update_remote_schema(md: Metadata, raw: dict[str, Any]) -> Metadata:
    """`md` with remote schema `raw["name"]`'s definition replaced (its permissions and
    remote relationships kept); 400 `not-exists`."""
    entry = parse_remote_schema(raw)
    i = remote_index(md, entry.name)
    old = md.remote_schemas[i]
    new = {**raw}
    for kept in ("permissions", "remote_relationships"):
        if isinstance(old, dict) and old.get(kept):
            new[kept] = old[kept]
    schemas = (*md.remote_schemas[:i], new, *md.remote_schemas[i + 1 :])
    return msgspec.structs.replace(md, remote_schemas=schemas)


def has_role_grant(entry: RemoteSchema, role: str) -> bool:
    """Whether `entry`'s document lists a permission for `role`."""
    return any(p.role == role for p in entry.permissions or ())


def role_grants(entry: RemoteSchema, *, without: str | None = None) -> list[dict[str, Any]]:
    """`entry`'s permissions as `{role, definition}` objects, in document order, less
    those of role `without` (for `replace_role_grants`)."""
    return [
        {"role": p.role, "definition": p.definition}
        for p in entry.permissions or ()
        if p.role != without
    ]


def replace_role_grants(md: Metadata, name: str, permissions: list[Any]) -> Metadata:
    """`md` with the permissions list of remote schema `name` replaced (an empty list
    removes the key)."""
    i = remote_index(md, name)
    entry = dict(md.remote_schemas[i])
    if permissions:
        entry["permissions"] = permissions
    else:
        entry.pop("permissions", None)
    schemas = (*md.remote_schemas[:i], entry, *md.remote_schemas[i + 1 :])
    return msgspec.structs.replace(md, remote_schemas=schemas)


# -- remote relationships --------------------------------------------------------------


def relationship_definition(raw: Any) -> dict[str, Any]:
    """`{remote_schema, svc_fields, remote_field}` of a stored remote relationship, in
    either of the reference's shapes: `definition: {remote_schema, hasura_fields,
    remote_field}` (svc's `svc_fields` too) or, since v2.1, `definition:
    {to_remote_schema: {remote_schema, lhs_fields, remote_field}}`. The join fields are
    column names (the columns' own names, not their custom GraphQL names). Raises
    `SvcError` `parse-failed` for any other shape (`to_source` included:
    `source_definition` reads those)."""
    d = raw.get("definition") if isinstance(raw, dict) else None
    if not isinstance(d, dict) or not isinstance(raw.get("name"), str):
        raise SvcError(ErrorCode.PARSE_FAILED, 'expected {"name", "definition"}')
    if "to_source" in d:  # `source_definition` reads it
        raise SvcError(ErrorCode.PARSE_FAILED, "a relationship to a source, not a remote schema")
    if isinstance(d.get("to_remote_schema"), dict):
        d = d["to_remote_schema"]
    fields = d.get("svc_fields", d.get("hasura_fields", d.get("lhs_fields")))
    schema, remote_field = d.get("remote_schema"), d.get("remote_field")
    if not isinstance(schema, str) or not isinstance(remote_field, dict):
        raise SvcError(ErrorCode.PARSE_FAILED, 'expected "remote_schema" and "remote_field"')
    if fields is None:
        fields = []
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise SvcError(ErrorCode.PARSE_FAILED, "expected the join fields as a list of columns")
    return {"remote_schema": schema, "svc_fields": tuple(fields), "remote_field": remote_field}


def is_to_source(raw: Any) -> bool:
    """Whether remote relationship `raw` (`{name, definition}`) is one to a table
    (`definition.to_source`), whatever the shape inside."""
    d = raw.get("definition") if isinstance(raw, dict) else None
    return isinstance(d, dict) and "to_source" in d


def source_definition(raw: Any, path: str = "$.definition") -> dict[str, Any] | None:
    """`{source, table, relationship_type, field_mapping}` of a remote relationship to a
    database table (`definition: {to_source: …}`, the reference's `ToSourceRelationshipDef`:
    `relationship_type` `object` or `array`, `field_mapping` from this table's columns to
    the target's), `table` qualified and `field_mapping` as pairs; None for a relationship
    to a remote schema. Raises 400 `parse-failed` at `path` for a bad shape."""
    if not is_to_source(raw):
        return None
    d, path = raw["definition"]["to_source"], f"{path}.to_source"
    if not isinstance(d, dict):
        raise SvcError(ErrorCode.PARSE_FAILED, "expected an object", path=path)
    for key in ("source", "table", "relationship_type", "field_mapping"):
        if key not in d:
            raise SvcError(ErrorCode.PARSE_FAILED, f'key "{key}" not found', path=path)
    kind, mapping = d["relationship_type"], d["field_mapping"]
    if kind not in ("object", "array"):
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            'relationship_type must be "object" or "array"',
            path=f"{path}.relationship_type",
        )
    if not isinstance(mapping, dict) or not mapping:
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            "expected a non-empty object of column names",
            path=f"{path}.field_mapping",
        )
    if not isinstance(d["source"], str):
        raise SvcError(ErrorCode.PARSE_FAILED, "expected a source name", path=f"{path}.source")
    return {
        "source": d["source"],
        "table": qualify(d["table"], f"{path}.table"),
        "relationship_type": kind,
        "field_mapping": tuple((str(k), str(v)) for k, v in mapping.items()),
    }


def _relationship(table: QualifiedName | RemoteType, raw: Any) -> RemoteRelationship | None:
    """The typed relationship to a remote schema of `raw` (owned by a table or a remote
    type); None when it cannot be served (reported by `svc.ir.unsupported_issues`)."""
    try:
        d = relationship_definition(raw)
    except SvcError:
        return None
    return RemoteRelationship(
        name=raw["name"],
        table=table,
        svc_fields=d["svc_fields"],
        remote_schema=d["remote_schema"],
        remote_field=dict(d["remote_field"]),
    )


def remote_relationships(md: Metadata) -> list[RemoteRelationship]:
    """Every remote relationship of every tracked table, typed."""
    out = []
    for entry in md.tables:
        for raw in entry.remote_relationships:
            rel = _relationship(entry.table, raw)
            if rel is not None:
                out.append(rel)
    return out


def parse_relationship_args(raw: Any) -> tuple[QualifiedName, dict[str, Any]]:
    """`(table, stored entry)` of `create_remote_relationship` arguments: the reference's
    unified format `{name, table, source?, definition: {to_remote_schema | to_source}}`
    (stored as `{name, definition}`, as given) or the older `{name, table, svc_fields |
    hasura_fields, remote_schema, remote_field}`; 400 `parse-failed` for a missing key or
    a bad definition."""
    if not isinstance(raw, dict):
        raise SvcError(ErrorCode.PARSE_FAILED, "expected an object", path="$.args")
    if "definition" in raw:
        for key in ("name", "table"):
            if key not in raw:
                raise SvcError(ErrorCode.PARSE_FAILED, f'key "{key}" not found', path="$.args")
        stored = {"name": raw["name"], "definition": raw["definition"]}
        if source_definition(stored, "$.args.definition") is None:
            try:
                relationship_definition(stored)
            except SvcError as exc:
                raise SvcError(exc.code, exc.message, path="$.args.definition") from None
        return qualify(raw["table"], "$.args.table"), stored
    for key in ("name", "table", "remote_schema", "remote_field"):
        if key not in raw:
            raise SvcError(ErrorCode.PARSE_FAILED, f'key "{key}" not found', path="$.args")
    table = qualify(raw["table"], "$.args.table")
    fields = raw.get("svc_fields", raw.get("hasura_fields"))
    definition: dict[str, Any] = {}
    if fields is not None:
        definition["svc_fields"] = fields
    definition["remote_schema"] = raw["remote_schema"]
    definition["remote_field"] = raw["remote_field"]
    return table, {"name": raw["name"], "definition": definition}


def _table_entry(md: Metadata, table: QualifiedName) -> tuple[int, TableEntry]:
    for i, entry in enumerate(md.tables):
        if entry.table == table:
            return i, entry
    raise SvcError(
        ErrorCode.NOT_EXISTS, f"table {table.quoted()} does not exist", path="$.args.table"
    )


def _with_table(md: Metadata, i: int, entry: TableEntry) -> Metadata:
    return msgspec.structs.replace(md, tables=(*md.tables[:i], entry, *md.tables[i + 1 :]))


def put_relationship(md: Metadata, raw: Any, *, update: bool) -> Metadata:
    """`md` with the remote relationship of `raw` added (`update`: replaced); 400
    `already-exists` / `not-exists` on the name."""
    table, stored = parse_relationship_args(raw)
    i, entry = _table_entry(md, table)
    names = [r.get("name") for r in entry.remote_relationships if isinstance(r, dict)]
    name = stored["name"]
    if update and name not in names:
        raise SvcError(
            ErrorCode.NOT_EXISTS, f"remote relationship {name!r} does not exist", path="$.args"
        )
    if not update and name in names:
        raise SvcError(
            ErrorCode.ALREADY_EXISTS,
            f"remote relationship with name {name!r} already exists",
            path="$.args",
        )
    if update:
        rels = tuple(stored if r.get("name") == name else r for r in entry.remote_relationships)
    else:
        rels = (*entry.remote_relationships, stored)
    return _with_table(md, i, msgspec.structs.replace(entry, remote_relationships=rels))


def delete_relationship(md: Metadata, raw: Any) -> Metadata:
    """`md` without remote relationship `{table, name}`; 400 `not-exists`."""
    if not isinstance(raw, dict) or "name" not in raw or "table" not in raw:
        raise SvcError(ErrorCode.PARSE_FAILED, 'key "name" not found', path="$.args")
    i, entry = _table_entry(md, qualify(raw["table"], "$.args.table"))
    rels = tuple(r for r in entry.remote_relationships if r.get("name") != raw["name"])
    if len(rels) == len(entry.remote_relationships):
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"remote relationship {raw['name']!r} does not exist",
            path="$.args",
        )
    return _with_table(md, i, msgspec.structs.replace(entry, remote_relationships=rels))


def _renamed(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("$") and value[1:] in names:
        return "$" + names[value[1:]]
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


def _renamed_join(d: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A relationship definition `d` with the join fields and `$column` arguments renamed."""
    for key in ("svc_fields", "hasura_fields", "lhs_fields"):
        if isinstance(d.get(key), list):
            d[key] = [names.get(c, c) for c in d[key]]
    if "remote_field" in d:
        d["remote_field"] = _renamed(d["remote_field"], names)
    return d


def rename_join_columns(md: Metadata, table: QualifiedName, names: dict[str, str]) -> Metadata:
    """`md` with columns of `table` renamed (`names`: old → new) in its remote
    relationships' `svc_fields` and `$column` arguments (the reference follows a
    `run_sql` rename)."""
    for i, entry in enumerate(md.tables):
        if entry.table != table or not entry.remote_relationships:
            continue
        rels = []
        for raw in entry.remote_relationships:
            d = dict(raw.get("definition") or {}) if isinstance(raw, dict) else {}
            inner = d.get("to_remote_schema")
            if isinstance(inner, dict):
                d["to_remote_schema"] = _renamed_join(dict(inner), names)
            rels.append(
                {**raw, "definition": _renamed_join(d, names)} if isinstance(raw, dict) else raw
            )
        return _with_table(md, i, msgspec.structs.replace(entry, remote_relationships=tuple(rels)))
    return md


# -- relationships of a remote schema's types ------------------------------------------


class SourceJoin(msgspec.Struct, frozen=True, kw_only=True):
    """A relationship from a remote schema's type to a table (`definition.to_source`,
    the reference's `ToSourceRelationshipDef` on a remote schema, v2.6+): `field_mapping`
    pairs (the type's field, in the remote's own names → the target's column); `kind`
    `object` or `array`. `table` is the owner, named as `RemoteRelationship`'s."""

    name: str
    table: RemoteType
    source: str
    target: QualifiedName
    kind: str
    field_mapping: tuple[tuple[str, str], ...]

    @property
    def svc_fields(self) -> tuple[str, ...]:
        """The owner's join fields (the mapping's left side), in the remote's names."""
        return tuple(lhs for lhs, _ in self.field_mapping)


def _type_relationship(owner: RemoteType, raw: Any) -> RemoteRelationship | SourceJoin | None:
    """The typed relationship `raw` (`{name, definition}`), None when it does not parse
    (`parse_type_relationship` refused it when it was written)."""
    try:
        to_source = source_definition(raw)
        if to_source is not None:
            return SourceJoin(
                name=raw["name"],
                table=owner,
                source=to_source["source"],
                # as the IR keys it in its source (`svc.ir.source_tables`)
                target=in_source(to_source["table"], to_source["source"]),
                kind=to_source["relationship_type"],
                field_mapping=to_source["field_mapping"],
            )
    except SvcError:
        return None
    return _relationship(owner, raw)


def type_relationships(md: Metadata) -> list[RemoteRelationship | SourceJoin]:
    """Every relationship of every remote schema's types (`remote_relationships:
    [{type_name, relationships: [{name, definition}]}]`), typed, in document order."""
    out: list[RemoteRelationship | SourceJoin] = []
    for raw in md.remote_schemas:
        groups = raw.get("remote_relationships") if isinstance(raw, dict) else None
        for group in groups if isinstance(groups, list) else ():
            if not isinstance(group, dict) or not isinstance(group.get("type_name"), str):
                continue
            owner = RemoteType(str(raw["name"]), group["type_name"])
            for rel_raw in group.get("relationships") or ():
                rel = _type_relationship(owner, rel_raw)
                if rel is not None:
                    out.append(rel)
    return out
