"""Introspect remote schemas and check what they answer.

`introspect(entry)` asks the remote for its schema (graphql-core's introspection query,
through `svc.api.remote_call`) and checks it as the reference does before it accepts a
remote (interfaces implemented faithfully, unions of known object types; Hasura
`RemoteSchema/SchemaCache` messages), raising 400 `remote-schema-error`. `ensure(md, remotes)`
fills a `RemoteRegistry` for every remote of a document, recording a remote
that cannot be reached as an error (an inconsistent object), never raising.
"""

from __future__ import annotations

import asyncio
from typing import Any

from graphql import build_client_schema, get_introspection_query

from svc.api.remote_call import post_graphql, request_headers
from svc.errors import ErrorCode, SvcError
from svc.metadata.model import Metadata
from svc.metadata.remote_schemas import RemoteSchema, remote_schemas
from svc.schema.remote_registry import Introspected, RemoteRegistry

INTROSPECTION_QUERY = get_introspection_query(descriptions=True)


def _error(message: str) -> SvcError:
    return SvcError(ErrorCode.REMOTE_SCHEMA_ERROR, message, path="$.args")


async def introspect(entry: RemoteSchema, timeout: float | None = None) -> dict[str, Any]:
    """The remote's introspection `data` (with `__schema`), checked. Raises 400
    `remote-schema-error` (unreachable, not JSON, errors answered, invalid schema)."""
    try:
        answer, response = await post_graphql(
            entry, {"query": INTROSPECTION_QUERY}, request_headers(entry), timeout
        )
    except SvcError as exc:
        if exc.code == ErrorCode.REMOTE_SCHEMA_ERROR:
            raise _error(exc.message) from None
        raise _error(exc.message) from None
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("__schema"), dict):
        raise _error(
            f"Failed to validate introspection response from remote: status {response.status}"
        )
    check_schema(data["__schema"])
    try:
        build_client_schema(data)  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError) as exc:
        raise _error(str(exc)) from None
    return data


def _ref(t: dict[str, Any] | None) -> str:
    """A type reference as GraphQL spells it (`[Int!]`)."""
    if not t:
        return "?"
    if t.get("kind") == "NON_NULL":
        return _ref(t.get("ofType")) + "!"
    if t.get("kind") == "LIST":
        return "[" + _ref(t.get("ofType")) + "]"
    return str(t.get("name"))


def check_schema(schema: dict[str, Any]) -> None:
    """Hasura's checks of a remote's interfaces and unions; raises `remote-schema-error`."""
    types = {t.get("name"): t for t in schema.get("types") or ()}
    for i, t in enumerate(schema.get("types") or ()):
        if t.get("kind") == "INTERFACE" and not t.get("fields"):
            raise _error(f"List of fields cannot be empty for interface '{t['name']}'")
        if t.get("kind") == "UNION":
            _check_union(t, i, types)
        if t.get("kind") == "OBJECT":
            for ref in t.get("interfaces") or ():
                iface = types.get(ref.get("name"))
                if iface is None or iface.get("kind") != "INTERFACE":
                    raise _error(
                        f"Could not find interface '{ref.get('name')}' implemented by "
                        f"Object type '{t['name']}'"
                    )
                _check_implements(t, iface)


def _check_union(t: dict[str, Any], i: int, types: dict[str, Any]) -> None:
    members = t.get("possibleTypes") or []
    if not members:
        raise _error(f"List of member types cannot be empty for union type '{t['name']}'")
    for j, member in enumerate(members):
        name = member.get("name")
        if name is None:
            raise _error(
                f"Error in $.types[{i}].possibleTypes[{j}].name: parsing Name failed, "
                "expected String, but encountered Null"
            )
        found = types.get(name)
        if found is None:
            raise _error(
                f"Could not find type '{name}', which is defined as a member type of "
                f"Union '{t['name']}'"
            )
        if found.get("kind") != "OBJECT":
            raise _error(
                f"Union type '{t['name']}' can only include object types. "
                f"It cannot include '{name}'"
            )


def _check_implements(obj: dict[str, Any], iface: dict[str, Any]) -> None:
    own = {f["name"]: f for f in obj.get("fields") or ()}
    o, n = obj["name"], iface["name"]
    for field in iface.get("fields") or ():
        name = field["name"]
        mine = own.get(name)
        if mine is None:
            raise _error(
                f"Interface field '{n}'.\"{name}\" expected, but '{o}' does not provide it"
            )
        want, got = _ref(field.get("type")), _ref(mine.get("type"))
        if got not in (want, want + "!"):
            raise _error(
                f"The type of Object field '{o}'.\"{name}\" ({got}) is not the same type/sub "
                f"type of Interface field '{n}'.\"{name}\" ({want})"
            )
        args = {a["name"]: a for a in mine.get("args") or ()}
        for arg in field.get("args") or ():
            have = args.pop(arg["name"], None)
            if have is None:
                raise _error(
                    f'Interface field argument \'{n}\'."{name}"("{arg["name"]}":) required, '
                    f"but Object field '{o}'.\"{name}\" does not provide it"
                )
            if _ref(have.get("type")) != _ref(arg.get("type")):
                raise _error(
                    f'Interface field argument \'{n}\'."{name}"("{arg["name"]}":) expects '
                    f'type {_ref(arg.get("type"))}, but \'{o}\'."{name}"("{arg["name"]}":) '
                    f"has type {_ref(have.get('type'))}"
                )
        for extra in args.values():
            t = extra.get("type") or {}
            if t.get("kind") == "NON_NULL" and extra.get("defaultValue") is None:
                raise _error(
                    f'Object field argument \'{o}\'."{name}"("{extra["name"]}":) is of '
                    f"required type {_ref(t)}, but is not provided by Interface field "
                    f"'{n}'.\"{name}\""
                )


async def fetch(
    entry: RemoteSchema, remotes: RemoteRegistry, timeout: float | None = None
) -> Introspected:
    """`entry`'s introspection recorded in `remotes` (an error recorded, not raised)."""
    try:
        found = Introspected(await introspect(entry, timeout))
    except SvcError as exc:
        found = Introspected(None, exc.message)
    remotes.record(entry, found)
    return found


# A refresh of every remote (each metadata load: start, sync; `reload_remote_schemas`)
# waits at most this long for one, whatever its `timeout_seconds`: a hanging remote must
# not hold a worker's metadata sync for a minute.
REFRESH_TIMEOUT_S = 10.0


async def ensure(md: Metadata, remotes: RemoteRegistry, *, refresh: bool = False) -> None:
    """Introspect every remote of `md` not asked yet (all of them, each within
    `REFRESH_TIMEOUT_S`, with `refresh`), concurrently; failures are recorded as
    inconsistencies (`Introspected.error`)."""
    todo = [e for e in remote_schemas(md) if refresh or remotes.lookup(e) is None]
    if todo:
        await asyncio.gather(
            *(
                fetch(e, remotes, min(e.definition.timeout, REFRESH_TIMEOUT_S) if refresh else None)
                for e in todo
            )
        )
