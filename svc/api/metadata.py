"""The `/v1/query` (and `/v1/metadata`) operations, run inside one transaction.

`REGISTRY` holds every operation as a record (`svc.api.op_registry.Operation`): the core
ones below, and the lists of the modules that contribute theirs (collections, remote
schemas, scheduled triggers, actions, legacy writes, event triggers). `run_operation`
runs one (or a `bulk`) with its checks (`svc.api.op_checks.run_checked`).

A request locks the stored metadata row, runs its operation (a `bulk` runs each in order),
and commits only if all succeed: the new document is written with a bumped resource
version and a `NOTIFY`, so every process reloads (design brief 4). A write that would make
metadata inconsistent is refused with the inconsistency's own error; with `cascade` the
dependants are dropped instead.
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.api import (
    collections,
    dml,
    enum_ops,
    event_triggers,
    inconsistencies,
    inherited_ops,
    legacy_writes,
    remote_ops,
    scheduled,
    source_ops,
)
from svc.api.actions import ops as action_ops
from svc.api.catalog_state import OPERATIONS as CATALOG_STATE_OPERATIONS
from svc.api.op_checks import run_checked
from svc.api.op_context import SUCCESS, Context, Handler, QueryBody, transition
from svc.api.op_registry import STANDARD, Check, Operation, Registry, pg
from svc.catalog.diff import catalog_changes
from svc.catalog.introspect import DbCatalog, without_enum_rows
from svc.errors import ErrorCode, SvcError
from svc.execute.db import PostgresError
from svc.execute.enum_values import read_enum_rows
from svc.execute.errors import map_run_sql_error
from svc.execute.run_sql import run_script
from svc.ir import build_ir
from svc.ir.rename import rename_columns, rename_table, type_dependents
from svc.metadata import apply, apply_functions, apply_permissions
from svc.metadata.args import (
    AddComputedField,
    CreatePermission,
    CreateRelationship,
    DropComputedField,
    DropPermission,
    DropRelationship,
    FunctionPermission,
    RenameRelationship,
    RunSql,
    SetPermissionComment,
    SetRelationshipComment,
    SetTableCustomFields,
    SetTableCustomization,
    TrackTableV1,
    TrackTableV2,
    UntrackTable,
    parse_args,
)
from svc.metadata.directory_v3 import as_version_3
from svc.metadata.drop import drop_objects, keep_existing
from svc.metadata.function_model import FunctionConfiguration, TrackedFunction
from svc.metadata.limits import api_limits_from_obj, introspection_from_obj
from svc.metadata.model import (
    Metadata,
    QualifiedName,
    metadata_from_obj,
    metadata_to_obj,
    qualify,
)
from svc.metadata.names import check_function_configuration
from svc.metadata.permission_model import PERMISSION_TYPES
from svc.metadata.remote_schemas import rename_join_columns
from svc.metadata.sources import served_sources
from svc.schema.remote_registry import remote_issues


def _permission_ops(kind: str) -> list[Operation]:
    """`create_<kind>_permission` and `drop_<kind>_permission`."""
    return [
        _op(
            f"create_{kind}_permission",
            CreatePermission,
            transition(
                CreatePermission, lambda md, a: apply_permissions.create_permission(md, a, kind)
            ),
        ),
        _op(
            f"drop_{kind}_permission",
            DropPermission,
            transition(
                DropPermission,
                lambda md, a: apply_permissions.drop_permission(md, a, kind),
                "cascade",
            ),
        ),
    ]


async def track_table(ctx: Context, body: QueryBody) -> Any:
    if body.version >= 2 or (isinstance(body.args, dict) and "table" in body.args):
        v2 = parse_args(TrackTableV2, body.args)
        table, config, is_enum = qualify(v2.table, "$.args.table"), v2.configuration, v2.is_enum
    else:
        raw = {"name": body.args} if isinstance(body.args, str) else body.args
        v1 = parse_args(TrackTableV1, raw)
        table, config, is_enum = qualify({"schema": v1.schema, "name": v1.name}), None, v1.is_enum
    if apply_functions.find_function(ctx.metadata, table) is not None:
        raise SvcError(
            ErrorCode.NOT_SUPPORTED,
            f"function with name {table.quoted()} already exists",
            path="$.args",
        )
    md = apply.track_table(ctx.metadata, table, config, is_enum)
    if is_enum:
        await enum_ops.read_new_enums(ctx, md)
    ctx.commit(md)
    return SUCCESS


async def untrack_table(ctx: Context, body: QueryBody) -> Any:
    args = parse_args(UntrackTable, body.args)
    md = apply.untrack_table(ctx.metadata, args)
    ctx.commit(md, on_new="cascade" if args.cascade else "dependency")
    return SUCCESS


async def create_array_relationship(ctx: Context, body: QueryBody) -> Any:
    args = parse_args(CreateRelationship, body.args)
    fk = args.using.foreign_key_constraint_on
    if fk is not msgspec.UNSET and not isinstance(fk, dict):
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            "Expecting object { table, columns }.",
            path="$.args.using.foreign_key_constraint_on",
        )
    ctx.commit(apply.create_relationship(ctx.metadata, args, "array"))
    return SUCCESS


def follow_catalog(ctx: Context, catalog: DbCatalog, *, check: bool) -> Metadata:
    """Metadata following renamed tables and columns of the new `catalog`; with `check`,
    refuses (400 `dependency-error`) a type change under a permission's static value."""
    changes = catalog_changes(ctx.catalog, catalog)
    if check:
        for table, column in changes.type_changes:
            dependents = type_dependents(ctx.metadata, ctx.ir, table, column)
            if dependents:
                raise SvcError(
                    ErrorCode.DEPENDENCY_ERROR,
                    f'cannot change type of column "{column}" in table {table.quoted()} '
                    "because of the following dependencies : "
                    + ", ".join(f'{d} in source "default"' for d in dependents),
                    path="$.args",
                )
    md = ctx.metadata
    for table, names in changes.column_renames.items():
        md = rename_columns(md, ctx.ir, table, names)
        md = rename_join_columns(md, table, names)  # remote relationships, before the check
    for old, new in changes.table_renames.items():
        md = rename_table(md, old, new)
    return md


async def run_sql(ctx: Context, body: QueryBody) -> Any:
    """Run SQL, then follow the database: dropped tables leave metadata; other new
    inconsistencies are a `dependency-error` unless `cascade` (spec 4.2)."""
    args = parse_args(RunSql, body.args)
    if args.read_only:
        try:
            async with ctx.db.transaction(read_only=True, reset=True) as conn:
                return await run_script(conn, args.sql)
        except PostgresError as exc:
            raise map_run_sql_error(exc, args.sql) from exc
    try:
        async with ctx.conn.transaction():  # a savepoint: a failure leaves the request's tx usable
            result = await run_script(ctx.conn, args.sql)
    except PostgresError as exc:
        raise map_run_sql_error(exc, args.sql) from exc
    # The same tables as `ctx.catalog`'s when the script changed no structure (rows only).
    catalog = await ctx.db.introspect(ctx.conn, previous=ctx.catalog)
    catalog = catalog.with_sources_of(ctx.catalog)
    if catalog == without_enum_rows(ctx.catalog):
        return result  # rows only: the schema (enum values too) stays as it is (Hasura)
    ctx.schema_changed = True
    md = follow_catalog(ctx, catalog, check=args.check_metadata_consistency is not False)
    md = keep_existing(md, catalog.table_index(), lambda name: _function_exists(catalog, name))
    catalog = await read_enum_rows(ctx.conn, md, catalog)
    ctx.catalog = catalog
    if args.check_metadata_consistency is False:
        ctx.ir = build_ir(md, catalog, ctx.ir)
        ctx.metadata, ctx.metadata_changed = md, True
    else:
        ctx.commit(md, on_new="cascade" if args.cascade else "dependency")
    return result


async def add_computed_field(ctx: Context, body: QueryBody) -> Any:
    args = parse_args(AddComputedField, body.args)
    function = qualify(args.definition.get("function"), "$.args.definition.function")
    if not _function_exists(ctx.catalog, function):
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"no such function exists in postgres : {function.quoted()}",
            path="$.args.definition.function",
        )
    ctx.commit(apply_permissions.add_computed_field(ctx.metadata, args))
    return SUCCESS


def _function_exists(catalog: DbCatalog, name: QualifiedName) -> bool:
    return any((f.schema, f.name) == (name.schema, name.name) for f in catalog.functions)


async def track_function(ctx: Context, body: QueryBody) -> Any:
    """Track a function (spec 4.6): args are its name, or `{function, configuration}`;
    errors as `apply_functions.track_function`, and 400 `parse-failed` for a bad name or
    configuration (a custom name that is not a GraphQL name among them)."""
    raw = body.args
    config: FunctionConfiguration | msgspec.UnsetType = msgspec.UNSET
    if isinstance(raw, dict) and "function" in raw:
        name = qualify(raw["function"], "$.args.function")
        if raw.get("configuration") is not None:
            config = parse_args(FunctionConfiguration, raw["configuration"], "$.args.configuration")
        check_function_configuration(config, "$.args.configuration")
        if config == FunctionConfiguration():
            config = msgspec.UNSET  # an empty configuration is not stored
    else:
        name = qualify(raw, "$.args")
    entry = TrackedFunction(function=name, configuration=config)
    in_catalog = _function_exists(ctx.catalog, name)
    ctx.commit(apply_functions.track_function(ctx.metadata, entry, in_catalog))
    return SUCCESS


async def untrack_function(ctx: Context, body: QueryBody) -> Any:
    """Untrack a function; 400 `not-exists` when it is not tracked."""
    raw = body.args
    name = qualify(raw.get("function", raw) if isinstance(raw, dict) else raw, "$.args")
    ctx.commit(apply_functions.untrack_function(ctx.metadata, name))
    return SUCCESS


async def export_metadata(ctx: Context, body: QueryBody) -> Any:
    """The metadata document: version 2 (spec 2.1), or 3 when it holds sources
    (`svc.metadata.model.metadata_to_obj`). Version 2 of the operation answers
    `{resource_version, metadata}` with the document always in the version 3 shape
    (`{version: 3, sources: [{name: default, kind: postgres, tables, …}], …}`), as the
    reference's `export_metadata` answers it (`svc.metadata.directory_v3.as_version_3`)."""
    out = metadata_to_obj(ctx.metadata)
    if body.version == 2:
        # What the reference's newer clients (its CLI for config v3, its console) read.
        return {"resource_version": ctx.resource_version, "metadata": as_version_3(out)}
    if "sources" not in out:
        out.setdefault("tables", [])
    return out


async def replace_metadata(ctx: Context, body: QueryBody) -> Any:
    """Replace the whole document. Args are the document, or (Hasura's version 2 form)
    `{metadata, allow_inconsistent_metadata}`: with the flag, inconsistent objects are kept
    and reported by `get_inconsistent_metadata` while the rest is served; without it the
    first new one refuses the document, an object some role's schema cannot be built with
    included (`svc.api.inconsistencies`)."""
    args = body.args
    if isinstance(args, dict) and isinstance(args.get("metadata"), dict):
        md = metadata_from_obj(args["metadata"], "$.args.metadata")
        keep = bool(args.get("allow_inconsistent_metadata"))
    else:
        md, keep = metadata_from_obj(args), False
    before_ir, before_md = ctx.ir, ctx.metadata
    if served_sources(md) or served_sources(before_md):  # connect, introspect them again
        ctx.catalog = await ctx.db.introspect(ctx.conn, md)
    await enum_ops.read_new_enums(ctx, md)
    ctx.commit(md, on_new="keep" if keep else "error")
    if keep:
        return inconsistencies.answer(await inconsistencies.listed(ctx))
    inconsistencies.refuse_inherited_conflicts(ctx)
    await inconsistencies.refuse_new_role_issues(ctx, before_ir, before_md)
    return SUCCESS


async def drop_inconsistent_metadata(ctx: Context, body: QueryBody) -> Any:
    """Remove every inconsistent object from metadata (spec 4.8): the IR's, the objects
    a role's schema cannot be built with and the remote schemas that could not be
    introspected."""
    issues = [*await inconsistencies.listed(ctx), *remote_issues(ctx.metadata, ctx.remotes)]
    md = drop_objects(ctx.metadata, (i.target() for i in issues))
    ctx.ir = build_ir(md, ctx.catalog, ctx.ir)
    ctx.metadata, ctx.metadata_changed = md, True
    return SUCCESS


async def clear_metadata(ctx: Context, body: QueryBody) -> Any:
    ctx.commit(Metadata())
    return SUCCESS


async def reload_metadata(ctx: Context, body: QueryBody) -> Any:
    # The database read again (no kept answer), enum values too.
    ctx.catalog = await ctx.db.introspect(ctx.conn, ctx.metadata, fresh=True)
    ctx.ir = build_ir(ctx.metadata, ctx.catalog, ctx.ir)
    ctx.schema_changed = True
    issues = await inconsistencies.listed(ctx)  # the role schemas' included
    if not issues:
        return {**SUCCESS, "is_consistent": True}
    # The reference lists what is inconsistent, each object with its `name`.
    objects = [{**i.to_json(), "name": i.name} for i in issues]
    return {**SUCCESS, "is_consistent": False, "inconsistent_objects": objects}


async def get_inconsistent_metadata(ctx: Context, body: QueryBody) -> Any:
    """The inconsistent objects (`svc.api.inconsistencies`; remote schemas that could not
    be introspected are added by the `REMOTE_ISSUES` check)."""
    return inconsistencies.answer(await inconsistencies.listed(ctx))


async def set_api_limits(ctx: Context, body: QueryBody) -> Any:
    """Replace the document's `api_limits` with the arguments (`svc.metadata.limits`);
    400 `parse-failed` at the bad value's path, nothing changed."""
    limits = api_limits_from_obj(body.args, "$.args")
    ctx.commit(msgspec.structs.replace(ctx.metadata, api_limits=limits))
    return SUCCESS


async def remove_api_limits(ctx: Context, body: QueryBody) -> Any:
    """Remove every API limit (the server defaults apply again)."""
    ctx.commit(msgspec.structs.replace(ctx.metadata, api_limits=None))
    return SUCCESS


async def set_introspection_options(ctx: Context, body: QueryBody) -> Any:
    """`set_graphql_schema_introspection_options`: replace the roles whose introspection
    is off (`{disabled_for_roles: [role]}`, required); 400 `parse-failed` otherwise."""
    options = introspection_from_obj(body.args, "$.args")
    ctx.commit(msgspec.structs.replace(ctx.metadata, graphql_schema_introspection=options))
    return SUCCESS


async def legacy_select(ctx: Context, body: QueryBody) -> Any:
    return await dml.select(ctx.conn, ctx.ir, body.args, ctx.role, ctx.session)


def _op(
    name: str,
    kind: Any,
    handler: Handler,
    extra: frozenset[Check] = frozenset(),
    *,
    alias: bool = True,
) -> Operation:
    """A core operation: `STANDARD` checks plus `extra`, and its `pg_` spelling unless
    `alias` is false."""
    return Operation(
        name=name,
        handler=handler,
        args=kind,
        read_only=False,
        checks=STANDARD | extra,
        aliases=pg(name) if alias else (),
    )


CONFLICTING = frozenset({Check.REMOTE_CONFLICTS})  # may give a root field a remote has

CORE = [
    _op("run_sql", RunSql, run_sql, frozenset({Check.REMOTE_RENAMES, Check.TRIGGER_COLUMNS})),
    _op("track_table", None, track_table, CONFLICTING),
    # the reference's older name of `track_table` (version 1 arguments)
    _op("add_existing_table_or_view", None, track_table, CONFLICTING, alias=False),
    _op("untrack_table", UntrackTable, untrack_table),
    _op(
        "set_table_customization",
        SetTableCustomization,
        transition(SetTableCustomization, apply.set_table_customization),
        CONFLICTING,
    ),
    _op(
        "create_object_relationship",
        CreateRelationship,
        transition(CreateRelationship, lambda md, a: apply.create_relationship(md, a, "object")),
    ),
    _op("create_array_relationship", CreateRelationship, create_array_relationship),
    _op(
        "drop_relationship",
        DropRelationship,
        transition(DropRelationship, apply.drop_relationship, "cascade"),
    ),
    Operation(
        name="export_metadata",
        handler=export_metadata,
        args=None,
        read_only=True,
        checks=STANDARD | {Check.CRON_EXPORT},
    ),
    Operation(
        name="replace_metadata",
        handler=replace_metadata,
        args=None,
        read_only=False,
        checks=STANDARD | {Check.INTROSPECT_REMOTES, Check.CRON_KEEP},
    ),
    Operation(
        name="clear_metadata",
        handler=clear_metadata,
        args=None,
        read_only=False,
        checks=frozenset(
            {
                Check.COLLECTIONS,
                Check.INTROSPECT_REMOTES,
                Check.CRON_KEEP,
                Check.SYNC_TRIGGERS_DROP_LOG,
            }
        ),
    ),
    Operation(
        name="reload_metadata",
        handler=reload_metadata,
        args=None,
        read_only=False,
        checks=frozenset({Check.COLLECTIONS, Check.REFRESH_REMOTES, Check.RESYNC_TRIGGERS}),
    ),
    Operation(
        name="get_inconsistent_metadata",
        handler=get_inconsistent_metadata,
        args=None,
        read_only=True,
        checks=STANDARD | {Check.REMOTE_ISSUES},
    ),
    *(op for kind in PERMISSION_TYPES for op in _permission_ops(kind)),
    _op(
        "set_permission_comment",
        SetPermissionComment,
        transition(SetPermissionComment, apply_permissions.set_permission_comment),
    ),
    _op(
        "rename_relationship",
        RenameRelationship,
        transition(RenameRelationship, apply.rename_relationship),
    ),
    _op("add_computed_field", AddComputedField, add_computed_field),
    _op(
        "drop_computed_field",
        DropComputedField,
        transition(DropComputedField, apply_permissions.drop_computed_field),
    ),
    _op("track_function", None, track_function, CONFLICTING),
    _op("untrack_function", None, untrack_function),
    _op(
        "set_relationship_comment",
        SetRelationshipComment,
        transition(SetRelationshipComment, apply.set_relationship_comment),
    ),
    _op(
        "set_table_custom_fields",
        SetTableCustomFields,
        transition(SetTableCustomFields, apply.set_table_custom_fields),
        CONFLICTING,
    ),
    _op(
        "create_function_permission",
        FunctionPermission,
        transition(FunctionPermission, apply_functions.create_function_permission),
    ),
    _op(
        "drop_function_permission",
        FunctionPermission,
        transition(FunctionPermission, apply_functions.drop_function_permission),
    ),
    _op("drop_inconsistent_metadata", None, drop_inconsistent_metadata, alias=False),
    _op("set_api_limits", None, set_api_limits, alias=False),
    _op("remove_api_limits", None, remove_api_limits, alias=False),
    _op(
        "set_graphql_schema_introspection_options",
        None,
        set_introspection_options,
        alias=False,
    ),
    Operation(
        name="select",
        handler=legacy_select,
        args=None,
        read_only=True,
        checks=STANDARD,
        any_role=True,
    ),
]
"""The core operations: tables, relationships, permissions, functions, the whole
document, API limits and the legacy `select`."""

REGISTRY = Registry.of(
    CORE,
    collections.OPERATIONS,
    remote_ops.OPERATIONS,
    scheduled.OPERATIONS,
    action_ops.OPERATIONS,
    legacy_writes.OPERATIONS,
    event_triggers.OPERATIONS,
    enum_ops.OPERATIONS,
    inherited_ops.OPERATIONS,
    CATALOG_STATE_OPERATIONS,
    source_ops.OPERATIONS,
)
OPERATIONS = REGISTRY  # every operation by name and alias
# Operations that never write: they run without taking the metadata row lock.
READ_ONLY = REGISTRY.names(read_only=True)
# Operations a role other than admin may run on `/v1/query` (the legacy data API).
ROLE_OPERATIONS = REGISTRY.names(any_role=True)


def decode_body(raw: Any, path: str = "$") -> QueryBody:
    """Validate `{type, args, version}`; raises `parse-failed`."""
    try:
        return msgspec.convert(raw, QueryBody)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).partition(" - at `")
        raise SvcError(ErrorCode.PARSE_FAILED, message, path=path + where.rstrip("`")[1:]) from None


async def run_operation(ctx: Context, body: QueryBody, path: str = "$") -> Any:
    """Run one operation (or a `bulk` of them, in order); errors carry their JSON path."""
    if body.type == "bulk":
        if not isinstance(body.args, list):
            raise SvcError(ErrorCode.PARSE_FAILED, "expected an array of queries", path="$.args")
        results = []
        for i, item in enumerate(body.args):
            results.append(await run_operation(ctx, decode_body(item, f"$.args[{i}]")))
        return results
    op = REGISTRY.get(body.type)
    if op is None:
        raise SvcError(
            ErrorCode.PARSE_FAILED, f'unknown operation type "{body.type}"', path="$.type"
        )
    return await run_checked(op, ctx, body)
