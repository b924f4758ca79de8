"""The `/v1/query` (and `/v1/metadata`) operations, run inside one transaction.

A request locks the stored metadata row, runs its operation (a `bulk` runs each in order),
and commits only if all succeed: the new document is written with a bumped resource
version and a `NOTIFY`, so every process reloads (design brief 4). A write that would make
metadata inconsistent is refused with the inconsistency's own error; with `cascade` the
dependants are dropped instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from svc.api import dml, event_triggers, legacy_writes
from svc.api.actions import ops as action_ops
from svc.api.collections import with_collection_operations
from svc.api.remote_ops import remote_operations
from svc.api.scheduled import with_scheduled_operations
from svc.catalog.diff import catalog_changes
from svc.catalog.introspect import DbCatalog
from svc.errors import ErrorCode, SvcError
from svc.execute.db import Connection, Database, PostgresError
from svc.execute.errors import map_run_sql_error
from svc.execute.run_sql import run_script
from svc.ir import Ir, build_ir
from svc.ir.checks import CheckIssue
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
from svc.schema.names import new_schema_problem

SUCCESS = {"message": "success"}


class QueryBody(msgspec.Struct):
    """`{type, args, version}` of a metadata request."""

    type: str
    args: Any = msgspec.field(default_factory=dict)
    version: int = 1
    source: str | None = None
    resource_version: int | None = None  # optimistic concurrency (Hasura's metadata API)


@dataclass
class Context:
    """What one metadata request works on; replaced fields are committed at the end."""

    db: Database
    conn: Connection
    metadata: Metadata
    catalog: DbCatalog
    ir: Ir
    role: str  # the acting role: the legacy `select` may run as another than admin
    metadata_changed: bool = False
    schema_changed: bool = False
    resource_version: int = 0  # the stored document's version (Hasura's resource_version)
    session: dict[str, str] | None = None

    def commit(self, md: Metadata, *, on_new: str = "error") -> None:
        """Adopt `md` if it adds no inconsistency.

        `on_new`: `error` raises the first new inconsistency's own error; `dependency` raises
        400 `dependency-error` listing them; `cascade` drops them from the document; `keep`
        adopts them (they are served as inconsistent). Whatever `on_new`, a name the schema
        cannot take or a clash of generated names is refused with its own error when `md`
        introduces it (`svc.schema.names.new_schema_problem`).
        """
        old = {i.key for i in self.ir.inconsistencies}
        ir = build_ir(md, self.catalog, self.ir)
        # Whole-document checks are reported, not refused (`svc.ir.checks`).
        new = [i for i in ir.inconsistencies if i.key not in old and not isinstance(i, CheckIssue)]
        if new and on_new == "cascade":
            md = drop_objects(md, (i.target() for i in new))
            ir = build_ir(md, self.catalog, ir)
        elif new and on_new == "dependency":
            names = ", ".join(i.describe() for i in new)
            raise SvcError(
                ErrorCode.DEPENDENCY_ERROR,
                f"cannot drop due to the following dependent objects : {names}",
                path="$.args",
            )
        elif new and on_new == "keep":
            pass
        elif new:
            first = new[0]
            internal = [{**first.to_json(), "name": first.name}]
            raise SvcError(first.code, first.reason, path="$.args", internal=internal)
        problem = new_schema_problem(self.ir, ir)
        if problem is not None:
            raise problem
        self.metadata, self.ir, self.metadata_changed = md, ir, True


Handler = Callable[[Context, QueryBody], Awaitable[Any]]
T = TypeVar("T")


def transition(
    kind: type[T], step: Callable[[Metadata, T], Metadata], on_new: str = "error"
) -> Handler:
    """A handler for an operation that is one pure metadata transition: decode `args` as
    `kind`, apply `step`, commit (see `Context.commit` for `on_new`), answer success."""

    async def handler(ctx: Context, body: QueryBody) -> Any:
        ctx.commit(step(ctx.metadata, parse_args(kind, body.args)), on_new=on_new)
        return SUCCESS

    return handler


def _permission_ops(kind: str) -> dict[str, Handler]:
    """`create_<kind>_permission` and `drop_<kind>_permission`."""
    return {
        f"create_{kind}_permission": transition(
            CreatePermission, lambda md, a: apply_permissions.create_permission(md, a, kind)
        ),
        f"drop_{kind}_permission": transition(
            DropPermission, lambda md, a: apply_permissions.drop_permission(md, a, kind), "cascade"
        ),
    }


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
    ctx.commit(apply.track_table(ctx.metadata, table, config, is_enum))
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
    catalog = await ctx.db.introspect(ctx.conn)
    ctx.schema_changed = True
    if catalog == ctx.catalog:
        return result
    md = follow_catalog(ctx, catalog, check=args.check_metadata_consistency is not False)
    ctx.catalog = catalog
    md = keep_existing(md, catalog.table_index(), lambda name: _function_exists(catalog, name))
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
    """The metadata document; version 2 of the operation wraps it as
    `{resource_version, metadata}` (Hasura)."""
    out = metadata_to_obj(ctx.metadata)
    out.setdefault("tables", [])
    if body.version == 2:
        return {"resource_version": ctx.resource_version, "metadata": out}
    return out


async def replace_metadata(ctx: Context, body: QueryBody) -> Any:
    """Replace the whole document. Args are the document, or (Hasura's version 2 form)
    `{metadata, allow_inconsistent_metadata}`: with the flag, inconsistent objects are kept
    and reported by `get_inconsistent_metadata` while the rest is served."""
    args = body.args
    if isinstance(args, dict) and isinstance(args.get("metadata"), dict):
        md = metadata_from_obj(args["metadata"], "$.args.metadata")
        keep = bool(args.get("allow_inconsistent_metadata"))
    else:
        md, keep = metadata_from_obj(args), False
    ctx.commit(md, on_new="keep" if keep else "error")
    if keep:
        issues = [i.to_json() for i in ctx.ir.inconsistencies]
        return {"is_consistent": not issues, "inconsistent_objects": issues}
    return SUCCESS


async def drop_inconsistent_metadata(ctx: Context, body: QueryBody) -> Any:
    """Remove every inconsistent object from metadata (spec 4.8)."""
    md = drop_objects(ctx.metadata, (i.target() for i in ctx.ir.inconsistencies))
    ctx.ir = build_ir(md, ctx.catalog, ctx.ir)
    ctx.metadata, ctx.metadata_changed = md, True
    return SUCCESS


async def clear_metadata(ctx: Context, body: QueryBody) -> Any:
    ctx.commit(Metadata())
    return SUCCESS


async def reload_metadata(ctx: Context, body: QueryBody) -> Any:
    ctx.catalog = await ctx.db.introspect(ctx.conn)
    ctx.ir = build_ir(ctx.metadata, ctx.catalog, ctx.ir)
    ctx.schema_changed = True
    return {**SUCCESS, "is_consistent": not ctx.ir.inconsistencies}


async def get_inconsistent_metadata(ctx: Context, body: QueryBody) -> Any:
    issues = [i.to_json() for i in ctx.ir.inconsistencies]
    return {"is_consistent": not issues, "inconsistent_objects": issues}


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


async def legacy_insert(ctx: Context, body: QueryBody) -> Any:
    return await dml.insert(ctx.conn, ctx.ir, body.args)


async def legacy_select(ctx: Context, body: QueryBody) -> Any:
    return await dml.select(ctx.conn, ctx.ir, body.args, ctx.role, ctx.session)


OPERATIONS: dict[str, Handler] = {
    "run_sql": run_sql,
    "track_table": track_table,
    "untrack_table": untrack_table,
    "set_table_customization": transition(SetTableCustomization, apply.set_table_customization),
    "create_object_relationship": transition(
        CreateRelationship, lambda md, a: apply.create_relationship(md, a, "object")
    ),
    "create_array_relationship": create_array_relationship,
    "drop_relationship": transition(DropRelationship, apply.drop_relationship, "cascade"),
    "export_metadata": export_metadata,
    "replace_metadata": replace_metadata,
    "clear_metadata": clear_metadata,
    "reload_metadata": reload_metadata,
    "get_inconsistent_metadata": get_inconsistent_metadata,
    **{name: h for kind in PERMISSION_TYPES for name, h in _permission_ops(kind).items()},
    "set_permission_comment": transition(
        SetPermissionComment, apply_permissions.set_permission_comment
    ),
    "rename_relationship": transition(RenameRelationship, apply.rename_relationship),
    "add_computed_field": add_computed_field,
    "drop_computed_field": transition(DropComputedField, apply_permissions.drop_computed_field),
    "track_function": track_function,
    "untrack_function": untrack_function,
    "set_relationship_comment": transition(SetRelationshipComment, apply.set_relationship_comment),
    "set_table_custom_fields": transition(SetTableCustomFields, apply.set_table_custom_fields),
    "create_function_permission": transition(
        FunctionPermission, apply_functions.create_function_permission
    ),
    "drop_function_permission": transition(
        FunctionPermission, apply_functions.drop_function_permission
    ),
    "drop_inconsistent_metadata": drop_inconsistent_metadata,
    "set_api_limits": set_api_limits,  # issue 11: API limits
    "remove_api_limits": remove_api_limits,
    "set_graphql_schema_introspection_options": set_introspection_options,
    "insert": legacy_insert,
    "select": legacy_select,
}
OPERATIONS.update(with_collection_operations(OPERATIONS))  # issue 5; checks stored queries
OPERATIONS.update(remote_operations(OPERATIONS))  # issue 17: remote schemas, relationships
# `/v1/metadata` spells the operations on a Postgres source with a `pg_` prefix.
PG_OPERATIONS = frozenset(
    name
    for name in OPERATIONS
    if name
    not in {
        "export_metadata",
        "replace_metadata",
        "clear_metadata",
        "reload_metadata",
        "get_inconsistent_metadata",
        "drop_inconsistent_metadata",
        "set_api_limits",
        "remove_api_limits",
        "set_graphql_schema_introspection_options",
        "insert",
        "select",
    }
)
OPERATIONS.update({f"pg_{name}": OPERATIONS[name] for name in PG_OPERATIONS})
OPERATIONS.update(with_scheduled_operations(OPERATIONS))  # issue 15: cron, one-off events
OPERATIONS.update(action_ops.OPERATIONS)  # issue 16: actions and custom types
OPERATIONS.update(legacy_writes.OPERATIONS)  # issue 14: update, delete, count (svc.user set)
OPERATIONS.update(event_triggers.with_event_triggers(OPERATIONS))  # issue 14: capture in step

# Operations that never write: they run without taking the metadata row lock.
READ_ONLY = frozenset({"export_metadata", "get_inconsistent_metadata", "select"})
# Operations a role other than admin may run on `/v1/query` (the legacy data API).
ROLE_OPERATIONS = frozenset({"select"})


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
    handler = OPERATIONS.get(body.type)
    if handler is None:
        raise SvcError(
            ErrorCode.PARSE_FAILED, f'unknown operation type "{body.type}"', path="$.type"
        )
    return await handler(ctx, body)
