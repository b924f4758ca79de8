"""Metadata operations of remote schemas and remote relationships (spec 4.1, 4.7;
`OPERATIONS`, part of `svc.api.metadata.REGISTRY`), and the checks other operations
declare to follow remote schemas (`Check.REMOTE_CONFLICTS`, `INTROSPECT_REMOTES`,
`REFRESH_REMOTES`, `REMOTE_ISSUES`).

`add_remote_schema` introspects the remote before anything is stored (400
`remote-schema-error` when it cannot be reached or its schema is invalid) and refuses a
root field or type that clashes with the database's (400 `invalid-configuration`) or
another remote's (400 `unexpected`), as the reference does. `reload_metadata`,
`replace_metadata` and `clear_metadata` introspect remotes they have not asked yet (all
of them with `reload_remote_schemas`; `INTROSPECT_REMOTES`, `REFRESH_REMOTES`); a remote
that cannot be reached then is an inconsistent object listed by
`get_inconsistent_metadata` (`REMOTE_ISSUES`), not a failure.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    GraphQLSchema,
    build_client_schema,
    validate_schema,
)

from svc.api.op_context import SUCCESS, Before
from svc.api.op_registry import SYNC_ONLY, Operation, pg
from svc.api.remote_fetch import ensure, fetch, introspect
from svc.api.remote_rel_ops import (
    delete_remote_relationship,
    delete_type_relationship,
    relationship_op,
    type_relationship_op,
)
from svc.errors import ErrorCode, SvcError
from svc.metadata import remote_schemas as rs
from svc.metadata import session_names
from svc.metadata.model import Metadata
from svc.schema import build_schema
from svc.schema.remote_custom import Customization
from svc.schema.remote_merge import merge_remotes, permissions_enabled
from svc.schema.remote_permission_check import check_subset
from svc.schema.remote_registry import Introspected, remote_issues
from svc.session_vars import ADMIN_ROLE


def _name(args: Any) -> str:
    if not isinstance(args, dict) or not isinstance(args.get("name"), str):
        raise SvcError(ErrorCode.PARSE_FAILED, 'key "name" not found', path="$.args")
    return str(args["name"])


def _check_customization(entry: rs.RemoteSchema) -> None:
    """400 `remote-schema-error` when type name mappings are not distinct (the
    reference's message)."""
    custom = entry.definition.customization
    mapping = ((custom or {}).get("type_names") or {}).get("mapping") or {}
    values = list(mapping.values()) if isinstance(mapping, dict) else []
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        names = ", ".join(f'"{v}"' for v in twice)
        raise SvcError(
            ErrorCode.REMOTE_SCHEMA_ERROR,
            "Inconsistent object: Type name mappings are not distinct; the following types "
            f"appear more than once: {names}",
            path="$.args",
        )


def _conflicts(ctx: Any, entry: rs.RemoteSchema, data: dict[str, Any]) -> None:
    """Refuse `entry` when its root fields or types clash with the schema so far."""
    current: GraphQLSchema = merge_remotes(
        build_schema(ctx.ir, ADMIN_ROLE), ctx.metadata, ADMIN_ROLE, ctx.remotes
    )
    custom = Customization.of(entry)
    if custom is not None:
        data = custom.customize(data)
    remote = build_client_schema(data)  # type: ignore[arg-type]
    for ours, theirs in (
        (current.query_type, remote.query_type),
        (current.mutation_type, remote.mutation_type),
    ):
        if ours is None or theirs is None:
            continue
        names = (
            list(theirs.fields) if custom is None or not custom.namespace else [custom.namespace]
        )
        for name in names:
            if name in ours.fields and name != "no_queries_available":
                from_remote = "svc_remote" in ours.fields[name].extensions
                raise SvcError(
                    ErrorCode.UNEXPECTED if from_remote else ErrorCode.INVALID_CONFIGURATION,
                    f"Inconsistent object: Duplicate field name found: {name}",
                    path="$.args",
                )
    roots = {remote.query_type, remote.mutation_type, remote.subscription_type}
    for name, t in remote.type_map.items():
        mine = current.type_map.get(name)
        if name.startswith("__") or t in roots or mine is None:
            continue
        # The reference accepts a type of the same name and kind (a table `person` and a
        # remote `person`, two remotes' `Character`); the merge then serves the first.
        if type(mine) is not type(t):
            raise SvcError(
                ErrorCode.INVALID_CONFIGURATION,
                f"Inconsistent object: Found conflicting definitions for GraphQL type '{name}'",
                path="$.args",
            )


def _check_merged(ctx: Any, md: Metadata) -> None:
    """400 `remote-schema-error` when the admin schema with `md`'s remotes (introspections
    already recorded) is not a valid GraphQL schema, e.g. a `field_names` customization
    renaming an interface's field in one implementing type only: refused here, the old
    metadata keeps serving, rather than every later request failing to build a schema."""
    try:
        merged = merge_remotes(build_schema(ctx.ir, ADMIN_ROLE), md, ADMIN_ROLE, ctx.remotes)
        errors: list[Exception] = list(validate_schema(merged))
    except (TypeError, ValueError, KeyError) as exc:
        errors = [exc]
    if errors:
        raise SvcError(
            ErrorCode.REMOTE_SCHEMA_ERROR,
            f"Inconsistent object: the remote schema makes an invalid GraphQL schema: {errors[0]}",
            path="$.args",
        )


async def add_remote_schema(ctx: Any, body: Any) -> Any:
    """Introspect, check for clashes, then store the remote schema."""
    md = rs.add_remote_schema(ctx.metadata, body.args)
    entry = rs.parse_remote_schema(body.args)
    _check_customization(entry)
    data = await introspect(entry)
    _conflicts(ctx, entry, data)
    ctx.remotes.record(entry, Introspected(data))
    _check_merged(ctx, md)
    ctx.commit(md)
    return SUCCESS


def _check_permissions(md: Metadata, name: str, data: Any) -> None:
    """Every role's permission on remote `name` still valid against its new introspection
    `data`, or 400 `unexpected` "cannot continue due to new inconsistent metadata" with the
    permissions that no longer are in `internal` (the reference's `runUpdateRemoteSchema`:
    `withNewInconsistentObjsCheck`, each a `remote_schema_permission` object)."""
    broken = []
    for perm in rs.find_remote(md, name).permissions or ():  # type: ignore[union-attr]
        try:
            check_subset(str(perm.definition.get("schema", "")), data)
        except SvcError as exc:
            definition = {
                "remote_schema": name,
                "role": perm.role,
                "definition": perm.definition,
                "comment": None,
            }
            broken.append(
                {
                    "definition": definition,
                    "name": f"remote_schema_permission {perm.role} permission in remote "
                    f"schema {name}",
                    "reason": f"Inconsistent object: {exc.message}",
                    "type": "remote_schema_permission",
                }
            )
    if broken:
        raise SvcError(
            ErrorCode.UNEXPECTED,
            "cannot continue due to new inconsistent metadata",
            path="$.args",
            internal=broken,
        )


async def update_remote_schema(ctx: Any, body: Any) -> Any:
    """Replace a remote's definition (introspected first; permissions kept)."""
    md = rs.update_remote_schema(ctx.metadata, body.args)
    entry = rs.parse_remote_schema(body.args)
    _check_customization(entry)
    data = await introspect(entry)
    _check_permissions(md, entry.name, data)
    ctx.remotes.record(entry, Introspected(data))
    _check_merged(ctx, md)
    ctx.commit(md)
    return SUCCESS


async def remove_remote_schema(ctx: Any, body: Any) -> Any:
    """Remove a remote schema (400 `not-exists`; `dependency-error` while used)."""
    ctx.commit(rs.remove_remote_schema(ctx.metadata, _name(body.args)))
    return SUCCESS


async def reload_remote_schema(ctx: Any, body: Any) -> Any:
    """Introspect a remote again; the served schema follows."""
    entry = rs.find_remote(ctx.metadata, _name(body.args))
    if entry is None:
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"remote schema with name {body.args['name']} does not exist",
            path="$.args",
        )
    await fetch(entry, ctx.remotes)
    ctx.schema_changed = True
    return SUCCESS


def _permission_args(ctx: Any, args: Any) -> tuple[rs.RemoteSchema, str]:
    if not isinstance(args, dict) or "remote_schema" not in args or "role" not in args:
        raise SvcError(ErrorCode.PARSE_FAILED, 'key "remote_schema" not found', path="$.args")
    if not permissions_enabled():
        raise SvcError(
            ErrorCode.CONSTRAINT_VIOLATION,
            "remote schema permissions can only be added when remote schema permissions "
            "are enabled in the graphql-engine",
            path="$.args",
        )
    entry = rs.find_remote(ctx.metadata, str(args["remote_schema"]))
    if entry is None:
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"remote schema {args['remote_schema']} doesn't exist",
            path="$.args",
        )
    return entry, str(args["role"])


async def add_remote_schema_permissions(ctx: Any, body: Any) -> Any:
    """Give a role an SDL subset of a remote (validated against its introspection)."""
    entry, role = _permission_args(ctx, body.args)
    if rs.has_role_grant(entry, role):
        raise SvcError(
            ErrorCode.ALREADY_EXISTS,
            f"permissions for role: {role} for remote schema:{entry.name} already exists",
            path="$.args",
        )
    if role == ADMIN_ROLE:  # the reference's `resolveRoleBasedRemoteSchema`
        raise SvcError(
            ErrorCode.CONSTRAINT_VIOLATION, "cannot define permission for admin role", path="$.args"
        )
    definition = body.args.get("definition") or {}
    session_names.check_remote_sdl(definition.get("schema"), "$.args.definition.schema")
    found = ctx.remotes.lookup(entry)
    if found is not None and found.data is not None:
        check_subset(str(definition.get("schema", "")), found.data)
    perms = rs.role_grants(entry)
    perms.append({"role": role, "definition": definition})
    ctx.commit(rs.replace_role_grants(ctx.metadata, entry.name, perms))
    return SUCCESS


async def drop_remote_schema_permissions(ctx: Any, body: Any) -> Any:
    """Remove a role's permission on a remote (400 `not-exists`)."""
    entry, role = _permission_args(ctx, body.args)
    perms = rs.role_grants(entry, without=role)
    if len(perms) == len(entry.permissions or ()):
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"permissions for role: {role} for remote schema:{entry.name} does not exist",
            path="$.args",
        )
    ctx.commit(rs.replace_role_grants(ctx.metadata, entry.name, perms))
    return SUCCESS


async def _introspect(body: Any, ctx: Any, result: Any, *, refresh_arg: bool) -> Any:
    args = body.args if isinstance(body.args, dict) else {}
    refresh = refresh_arg and args.get("reload_remote_schemas") is True
    await ensure(ctx.metadata, ctx.remotes, refresh=refresh)
    if refresh_arg and isinstance(result, dict) and "is_consistent" in result:
        result["is_consistent"] = result["is_consistent"] and not _issues(ctx)
    elif isinstance(result, dict) and "inconsistent_objects" in result:
        # `replace_metadata` with `allow_inconsistent_metadata`: its answer lists them too
        result = await list_remote_issues(ctx, body, Before.of(ctx), result)
    return result


async def introspect_remotes(ctx: Any, body: Any, before: Before, result: Any) -> Any:
    """`Check.INTROSPECT_REMOTES`: introspect the remotes of the resulting document not
    asked yet (`replace_metadata`, `clear_metadata`)."""
    return await _introspect(body, ctx, result, refresh_arg=False)


async def refresh_remotes(ctx: Any, body: Any, before: Before, result: Any) -> Any:
    """`Check.REFRESH_REMOTES`: as `introspect_remotes`, all of them when the request's
    `reload_remote_schemas` is true; an answer's `is_consistent` counts remotes that
    could not be introspected (`reload_metadata`)."""
    return await _introspect(body, ctx, result, refresh_arg=True)


def _issues(ctx: Any) -> list[dict[str, Any]]:
    """`get_inconsistent_metadata` entries of remotes that could not be introspected."""
    return [{**i.to_json(), "name": i.name} for i in remote_issues(ctx.metadata, ctx.remotes)]


async def list_remote_issues(ctx: Any, body: Any, before: Before, result: Any) -> Any:
    """`Check.REMOTE_ISSUES`: remotes that could not be introspected added to the answer's
    `inconsistent_objects` (`get_inconsistent_metadata`)."""
    issues = _issues(ctx)
    if issues and isinstance(result, dict):
        result["inconsistent_objects"] = [*result.get("inconsistent_objects", []), *issues]
        result["is_consistent"] = False
    return result


def _remote_root_fields(ctx: Any) -> dict[str, str]:
    """Root field name → remote name, of every remote introspected (as customized)."""
    out: dict[str, str] = {}
    for entry in rs.remote_schemas(ctx.metadata):
        found = ctx.remotes.lookup(entry)
        if found is None or found.data is None:
            continue
        custom = Customization.of(entry)
        if custom is not None and custom.namespace:
            out[custom.namespace] = entry.name
            continue
        data = custom.customize(found.data) if custom is not None else found.data
        remote = build_client_schema(data)  # type: ignore[arg-type]
        for root in (remote.query_type, remote.mutation_type):
            out.update(dict.fromkeys(root.fields if root else (), entry.name))
    return out


async def refuse_conflicts(ctx: Any, body: Any, before: Before, result: Any) -> Any:
    """`Check.REMOTE_CONFLICTS`: 400 `remote-schema-conflicts` when the database now gives
    a root field a remote schema has (the transaction is rolled back, the old state
    serves)."""
    if ctx.metadata.remote_schemas:
        remote = _remote_root_fields(ctx)
        schema = build_schema(ctx.ir, ADMIN_ROLE)
        for root in (schema.query_type, schema.mutation_type):
            for name in root.fields if root else ():
                if name in remote:
                    raise SvcError(
                        ErrorCode.REMOTE_SCHEMA_CONFLICTS,
                        f"Inconsistent object: Duplicate field name found: {name} "
                        f"(remote schema {remote[name]})",
                        path="$.args",
                    )
    return result


def _op(name: str, handler: Any, aliases: tuple[str, ...] | None = None) -> Operation:
    # These operations commit through `Context.commit`; no stored-query check applies
    # to them (none was ever wrapped around them).
    return Operation(
        name=name,
        handler=handler,
        args=None,
        read_only=False,
        checks=SYNC_ONLY,
        aliases=pg(name) if aliases is None else aliases,
    )


OPERATIONS = [
    _op("add_remote_schema", add_remote_schema),
    _op("update_remote_schema", update_remote_schema),
    _op("remove_remote_schema", remove_remote_schema),
    _op("reload_remote_schema", reload_remote_schema),
    _op("add_remote_schema_permissions", add_remote_schema_permissions),
    _op("drop_remote_schema_permissions", drop_remote_schema_permissions),
    _op("create_remote_relationship", relationship_op(update=False)),
    _op("update_remote_relationship", relationship_op(update=True)),
    _op("delete_remote_relationship", delete_remote_relationship),
    # not source-level: no `pg_` spelling, as in the reference
    _op("create_remote_schema_remote_relationship", type_relationship_op(update=False), ()),
    _op("update_remote_schema_remote_relationship", type_relationship_op(update=True), ()),
    _op("delete_remote_schema_remote_relationship", delete_type_relationship, ()),
]
"""The remote schema and remote relationship operations (also `pg_`-prefixed); their
arguments are decoded by `svc.metadata.remote_schemas`."""
