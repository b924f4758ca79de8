"""Metadata transitions of the relationships of a remote schema's types (the reference's
`create_remote_schema_remote_relationship`, `update_…`, `delete_…`, v2.6+): stored in the
remote schema's entry as `remote_relationships: [{type_name, relationships: [{name,
definition}]}]`, each definition `{to_source: …}` (to a table) or `{to_remote_schema: …}`
(to another remote), as given. Read back typed by
`svc.metadata.remote_schemas.type_relationships`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.metadata.model import Metadata
from svc.metadata.remote_schemas import (
    relationship_definition,
    remote_index,
    source_definition,
)


def parse_type_relationship_args(raw: Any) -> tuple[str, str, dict[str, Any]]:
    """`(remote schema, type name, stored {name, definition})` of the arguments `{remote_schema,
    type_name, name, definition}`; 400 `parse-failed` at the key for a missing key or a
    definition that is neither `to_source` nor `to_remote_schema`."""
    if not isinstance(raw, dict):
        raise SvcError(ErrorCode.PARSE_FAILED, "expected an object", path="$.args")
    for key in ("remote_schema", "type_name", "name", "definition"):
        if not isinstance(raw.get(key), str if key != "definition" else dict):
            raise SvcError(ErrorCode.PARSE_FAILED, f'key "{key}" not found', path="$.args")
    stored = {"name": raw["name"], "definition": raw["definition"]}
    if source_definition(stored, "$.args.definition") is None:
        if "to_remote_schema" not in raw["definition"]:
            raise SvcError(
                ErrorCode.PARSE_FAILED,
                'expected "to_source" or "to_remote_schema"',
                path="$.args.definition",
            )
        try:
            relationship_definition(stored)
        except SvcError as exc:
            raise SvcError(exc.code, exc.message, path="$.args.definition") from None
    return raw["remote_schema"], raw["type_name"], stored


def _groups(entry: Any) -> list[dict[str, Any]]:
    groups = entry.get("remote_relationships") if isinstance(entry, dict) else None
    return [dict(g) for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []


def _with_groups(md: Metadata, i: int, groups: list[dict[str, Any]]) -> Metadata:
    entry = dict(md.remote_schemas[i])
    groups = [g for g in groups if g.get("relationships")]
    if groups:
        entry["remote_relationships"] = groups
    else:
        entry.pop("remote_relationships", None)
    schemas = (*md.remote_schemas[:i], entry, *md.remote_schemas[i + 1 :])
    return msgspec.structs.replace(md, remote_schemas=schemas)


def put_type_relationship(md: Metadata, raw: Any, *, update: bool) -> Metadata:
    """`md` with the relationship of `raw` added to its remote schema's type (`update`:
    replaced); 400 `not-exists` for an unknown remote schema or (update) relationship,
    `already-exists` for a name the type has."""
    remote, type_name, stored = parse_type_relationship_args(raw)
    i = remote_index(md, remote)
    groups = _groups(md.remote_schemas[i])
    group = next((g for g in groups if g.get("type_name") == type_name), None)
    if group is None:
        group = {"type_name": type_name, "relationships": []}
        groups.append(group)
    rels = list(group.get("relationships") or ())
    at = next((j for j, r in enumerate(rels) if r.get("name") == stored["name"]), None)
    where = f"remote schema {remote!r} type {type_name!r}"
    if update and at is None:
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"remote relationship {stored['name']!r} does not exist on {where}",
            path="$.args",
        )
    if not update and at is not None:
        raise SvcError(
            ErrorCode.ALREADY_EXISTS,
            f"remote relationship {stored['name']!r} already exists on {where}",
            path="$.args",
        )
    if at is None:
        rels.append(stored)
    else:
        rels[at] = stored
    group["relationships"] = rels
    return _with_groups(md, i, groups)


def delete_type_relationship(md: Metadata, raw: Any) -> Metadata:
    """`md` without relationship `{remote_schema, type_name, name}`; 400 `not-exists`."""
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(k), str) for k in ("remote_schema", "type_name", "name")
    ):
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            'expected "remote_schema", "type_name" and "name"',
            path="$.args",
        )
    i = remote_index(md, raw["remote_schema"])
    groups = _groups(md.remote_schemas[i])
    found = False
    for group in groups:
        if group.get("type_name") != raw["type_name"]:
            continue
        rels = [r for r in group.get("relationships") or () if r.get("name") != raw["name"]]
        found = len(rels) < len(group.get("relationships") or ())
        group["relationships"] = rels
    if not found:
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"remote relationship {raw['name']!r} does not exist on remote schema "
            f"{raw['remote_schema']!r} type {raw['type_name']!r}",
            path="$.args",
        )
    return _with_groups(md, i, groups)
