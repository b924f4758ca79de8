"""Metadata operations of remote relationships (spec 4.7): `create`/`update`/
`delete_remote_relationship`, each checked against the remote's introspection (400
`remote-schema-error`), and `run_sql` following column renames into them
(`Check.REMOTE_RENAMES`); the relationships of a remote schema's types
(`create`/`update`/`delete_remote_schema_remote_relationship`, to a table or another
remote). Listed in `svc.api.remote_ops.OPERATIONS`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from graphql import (
    GraphQLError,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    build_client_schema,
    coerce_input_value,
    get_named_type,
)

from svc.api.op_context import Before
from svc.catalog.diff import catalog_changes
from svc.errors import ErrorCode, SvcError
from svc.metadata import remote_schemas as rs
from svc.metadata import remote_type_relationships as trr
from svc.metadata.qualified import in_source
from svc.metadata.sources import is_served

SUCCESS = {"message": "success"}
Handler = Callable[[Any, Any], Awaitable[Any]]


def _check_relationship(ctx: Any, raw: Any) -> None:
    """400 errors for a remote relationship naming a missing remote, column or field."""
    table, stored = rs.parse_relationship_args(raw)
    if rs.source_definition(stored) is not None:
        return  # to a table: resolved (and refused when it does not) by the IR build
    d = rs.relationship_definition(stored)
    entry = rs.find_remote(ctx.metadata, str(d["remote_schema"]))
    if entry is None:
        raise SvcError(
            ErrorCode.REMOTE_SCHEMA_ERROR,
            f"remote schema with name {d['remote_schema']!r} does not exist",
            path="$.args",
        )
    ir_table = ctx.ir.tables.get(table)
    for column in d.get("svc_fields") or ():
        if ir_table is None or ir_table.column(column) is not None:
            continue
        computed = ir_table.computed_field_map.get(column)
        # A computed field joins when it is scalar and takes only the row (and session).
        usable = computed is not None and computed.is_scalar
        if not usable or any(kind == "input" for kind, _ in computed.arg_order):
            raise SvcError(
                ErrorCode.REMOTE_SCHEMA_ERROR,
                f"column {column} does not exist in table {table.name}",
                path="$.args",
            )
    found = ctx.remotes.lookup(entry)
    if found is None or found.data is None:
        return
    remote = build_client_schema(found.data)
    _check_remote_field(remote, d["remote_field"], d.get("svc_fields") or ())


def _check_remote_field(remote: GraphQLSchema, spec: Any, columns: Any) -> None:
    parent: Any = remote.query_type
    while isinstance(spec, dict) and spec:
        name, inner = next(iter(spec.items()))
        fields = getattr(get_named_type(parent), "fields", None) or {}
        if name not in fields:
            raise SvcError(
                ErrorCode.REMOTE_SCHEMA_ERROR,
                f"field with name {name!r} not found in remote schema",
                path="$.args",
            )
        inner = inner if isinstance(inner, dict) else {}
        for arg, value in (inner.get("arguments") or {}).items():
            if arg not in fields[name].args:
                raise SvcError(
                    ErrorCode.REMOTE_SCHEMA_ERROR,
                    f"argument {arg!r} not found in field {name!r}",
                    path="$.args",
                )
            _check_value(value, fields[name].args[arg].type, columns, f"{name}.{arg}")
        parent = fields[name].type
        spec = inner.get("field")


def _check_value(value: Any, t: Any, columns: Any, where: str) -> None:
    """400 `remote-schema-error` when a relationship argument cannot be of type `t`: a
    `$column` outside `svc_fields`, an unknown input field, a list for a non-list, a
    literal the type does not accept."""
    if isinstance(t, GraphQLNonNull):
        t = t.of_type
    if isinstance(value, str) and value.startswith("$"):
        if value[1:] not in columns:
            raise _rel_error(f"column {value[1:]} is not in svc_fields ({where})")
        return
    if isinstance(t, GraphQLList):
        for item in value if isinstance(value, list) else [value]:
            _check_value(item, t.of_type, columns, where)
        return
    if isinstance(t, GraphQLInputObjectType):
        if not isinstance(value, dict):
            raise _rel_error(f"expected an object for {where}")
        for key, inner in value.items():
            if key not in t.fields:
                raise _rel_error(f"field {key!r} not found in input type {t.name!r}")
            _check_value(inner, t.fields[key].type, columns, f"{where}.{key}")
        return
    try:
        coerce_input_value(value, t)
    except GraphQLError as exc:
        raise _rel_error(f"invalid value for {where}: {exc.message}") from None


def _rel_error(message: str) -> SvcError:
    return SvcError(ErrorCode.REMOTE_SCHEMA_ERROR, message, path="$.args")


def _put_op(check: Callable[[Any, Any], None], put: Callable[..., Any], update: bool) -> Handler:
    """A handler that checks its arguments (`check(ctx, args)`), then commits
    `put(metadata, args, update=update)`."""

    async def handler(ctx: Any, body: Any) -> Any:
        check(ctx, body.args)
        ctx.commit(put(ctx.metadata, body.args, update=update))
        return SUCCESS

    return handler


def relationship_op(update: bool) -> Handler:
    """The handler of `create_remote_relationship` (`update`: `update_…`): check the
    arguments against the remote, then store (400 `already-exists` / `not-exists`)."""
    return _put_op(_check_relationship, rs.put_relationship, update)


async def delete_remote_relationship(ctx: Any, body: Any) -> Any:
    """Remove a remote relationship `{table, name}` (400 `not-exists`)."""
    ctx.commit(rs.delete_relationship(ctx.metadata, body.args))
    return SUCCESS


async def follow_renames(ctx: Any, body: Any, before: Before, result: Any) -> Any:
    """`Check.REMOTE_RENAMES`: column renames `run_sql` made followed into remote
    relationships (the table's own entry follows a table rename already)."""
    if ctx.catalog is not before.catalog and rs.remote_relationships(ctx.metadata):
        changes = catalog_changes(before.catalog, ctx.catalog)
        md = ctx.metadata
        for table, names in changes.column_renames.items():
            md = rs.rename_join_columns(md, changes.table_renames.get(table, table), names)
        if md is not ctx.metadata:
            ctx.commit(md, on_new="keep")
    return result


def _introspected(ctx: Any, name: str) -> GraphQLSchema | None:
    """Remote `name`'s schema in its own names (None when it is not introspected)."""
    entry = rs.find_remote(ctx.metadata, name)
    if entry is None:
        raise _rel_error(f"remote schema with name {name!r} does not exist")
    found = ctx.remotes.lookup(entry)
    return None if found is None or found.data is None else build_client_schema(found.data)


def _check_type_relationship(ctx: Any, raw: Any) -> None:
    """400 errors for a relationship of a remote schema's type naming a type, field,
    table, column or remote field that does not exist (`remote-schema-error`, `not-exists`
    for a source or table), checked against the remotes' own names as the reference's
    `validateRemoteSchemaRelationship` does."""
    remote, type_name, stored = trr.parse_type_relationship_args(raw)
    schema = _introspected(ctx, remote)
    to_source = rs.source_definition(stored)
    lhs = (
        [a for a, _ in to_source["field_mapping"]]
        if to_source is not None
        else list(rs.relationship_definition(stored)["svc_fields"])
    )
    if schema is not None:
        owner = schema.get_type(type_name)
        if not isinstance(owner, GraphQLObjectType):
            raise _rel_error(f"object with name {type_name!r} not found in {remote!r}")
        for name in lhs:
            if name not in owner.fields:
                raise _rel_error(f"field with name {name!r} not found in type {type_name!r}")
    if to_source is None:
        d = rs.relationship_definition(stored)
        target = _introspected(ctx, d["remote_schema"])
        if target is not None:
            _check_remote_field(target, d["remote_field"], lhs)
        return
    if not is_served(ctx.metadata, to_source["source"]):
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"source with name {to_source['source']!r} not found",
            path="$.args.definition.to_source.source",
        )
    table = ctx.ir.tables.get(in_source(to_source["table"], to_source["source"]))
    if table is None:
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f"table {to_source['table'].quoted()} is not tracked",
            path="$.args.definition.to_source.table",
        )
    for _, column in to_source["field_mapping"]:
        if table.column(column) is None:
            raise SvcError(
                ErrorCode.NOT_EXISTS,
                f'no such column exists : "{column}"',
                path="$.args.definition.to_source.field_mapping",
            )


def type_relationship_op(update: bool) -> Handler:
    """The handler of `create_remote_schema_remote_relationship` (`update`: `update_…`):
    check the definition against the remotes and the tables, then store."""
    return _put_op(_check_type_relationship, trr.put_type_relationship, update)


async def delete_type_relationship(ctx: Any, body: Any) -> Any:
    """Remove `{remote_schema, type_name, name}` (400 `not-exists`)."""
    ctx.commit(trr.delete_type_relationship(ctx.metadata, body.args))
    return SUCCESS
