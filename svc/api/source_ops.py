"""The source operations (the reference's `Hasura.RQL.DDL.Schema.Source`): `pg_add_source`,
`pg_update_source`, `pg_drop_source`, `rename_source` and `pg_get_source_tables`.

A source other than `default` is kept in `Metadata.other_sources` as the reference exports
it (`{name, kind: postgres, tables, functions?, configuration, customization?}`) and served
from its own database (`svc.metadata.sources`, `svc.execute.db.Sources`). `default` is the
database of `--database-url`, which also holds svc's catalog: it can be neither dropped nor
renamed here (400 `not-supported`), and adding it again is the reference's 400
`already-exists` unless `replace_configuration` (then its configuration is stored, e.g. its
read replicas).
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.api.op_context import SUCCESS, Context, QueryBody
from svc.api.op_registry import STANDARD, SYNC_ONLY, Operation
from svc.errors import ErrorCode, SvcError
from svc.metadata.model import DEFAULT_SOURCE, JSON, SERVED_KIND
from svc.metadata.sources import replace_source, require_source, served_sources
from svc.metadata.unsupported import check_source


def _name(args: dict[str, Any], key: str = "name") -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            f'key "{key}" not found' if value is None else "expected a string",
            path=f"$.args{'' if value is None else '.' + key}",
        )
    if not value or any(ord(c) < 32 for c in value):
        raise SvcError(
            ErrorCode.PARSE_FAILED, "a source name must be non-empty text", path=f"$.args.{key}"
        )
    return value


def _own(name: str, verb: str) -> None:
    if name == DEFAULT_SOURCE:
        raise SvcError(
            ErrorCode.NOT_SUPPORTED,
            f'svc cannot {verb} the source "{DEFAULT_SOURCE}": it is the database of '
            "--database-url (SVC_GRAPHQL_DATABASE_URL), which holds svc's catalog",
            path="$.args.name",
        )


def _entry(args: dict[str, Any], tables: list[Any], functions: list[Any]) -> JSON:
    """A source as the reference exports it."""
    entry: JSON = {"name": args["name"], "kind": SERVED_KIND, "tables": tables}
    if functions:
        entry["functions"] = functions
    entry["configuration"] = args.get("configuration")
    if args.get("customization"):
        entry["customization"] = args["customization"]
    return entry


async def _connect(ctx: Context, md: Any, name: str) -> None:
    """Introspect `md`'s sources (connecting `name`), refusing as the reference does
    (`buildSchemaCacheFor` of the new source) when `name` cannot be reached: 400
    `invalid-configuration` "Inconsistent object: …", nothing stored."""
    catalog = await ctx.db.introspect(ctx.conn, md)
    why = catalog.unreachable.get(name)
    if why is not None:
        raise SvcError(
            ErrorCode.INVALID_CONFIGURATION, f"Inconsistent object: {why}", path="$.args"
        )
    ctx.catalog = catalog


async def add_source(ctx: Context, body: QueryBody) -> Any:
    """`pg_add_source {name, configuration, replace_configuration?, customization?}`:
    400 `already-exists` `source with name "<name>" already exists` unless
    `replace_configuration` (then configuration and customization are replaced, the
    tables kept); refused when the database cannot be reached (`_connect`)."""
    args = _args(body)
    name = _name(args)
    if "configuration" not in args:
        raise SvcError(ErrorCode.PARSE_FAILED, 'key "configuration" not found', path="$.args")
    check_source(
        {k: v for k, v in args.items() if k in ("name", "configuration", "customization")},
        "$.args",
    )
    replace = args.get("replace_configuration") is True
    md = ctx.metadata
    exists = name == DEFAULT_SOURCE or name in served_sources(md)
    if exists and not replace:
        raise SvcError(
            ErrorCode.ALREADY_EXISTS, f'source with name "{name}" already exists', path="$.args"
        )
    if name == DEFAULT_SOURCE:
        kept = dict(md.default_source or {})
        kept.update({"name": DEFAULT_SOURCE, "kind": SERVED_KIND})
        kept["configuration"] = args["configuration"]
        md = msgspec.structs.replace(md, default_source=kept)
    elif exists:
        raw = served_sources(md)[name]
        md = replace_source(
            md, name, lambda _: _entry(args, raw.get("tables") or [], raw.get("functions") or [])
        )
    else:
        md = msgspec.structs.replace(md, other_sources=(*md.other_sources, _entry(args, [], [])))
    await _connect(ctx, md, name)
    ctx.commit(md)
    ctx.schema_changed = True
    return SUCCESS


async def update_source(ctx: Context, body: QueryBody) -> Any:
    """`pg_update_source {name, configuration?, customization?}`: each key given replaces
    the stored one (the reference's `runUpdateSource`); 400 `not-exists` for an unknown
    source."""
    args = _args(body)
    name = _name(args)
    require_source(ctx.metadata, name, "$.args.name")
    _own(name, "update")
    check_source(
        {k: v for k, v in args.items() if k in ("name", "configuration", "customization")}, "$.args"
    )
    changes = {k: args[k] for k in ("configuration", "customization") if k in args}
    md = replace_source(ctx.metadata, name, lambda raw: {**raw, **changes})
    await _connect(ctx, md, name)
    ctx.commit(md)
    ctx.schema_changed = True
    return SUCCESS


async def drop_source(ctx: Context, body: QueryBody) -> Any:
    """`pg_drop_source {name, cascade?}`: the source and everything tracked in it leave
    the document; objects of other sources that depend on it (relationships to its
    tables) refuse it with 400 `dependency-error`, or are dropped with `cascade`; 400
    `not-exists` for an unknown source. Its connections close once their statements
    end."""
    args = _args(body)
    name = _name(args)
    require_source(ctx.metadata, name, "$.args")
    _own(name, "drop")
    md = replace_source(ctx.metadata, name, lambda _: None)
    # What other sources' objects named in it (relationships to it) is refused as the
    # reference's `getRemoteDependencies` refuses it, or dropped with `cascade`. Its
    # capture triggers and event tables go and its connections close (the sync check).
    ctx.commit(md, on_new="cascade" if args.get("cascade") is True else "dependency")
    ctx.schema_changed = True
    return SUCCESS


async def rename_source(ctx: Context, body: QueryBody) -> Any:
    """`rename_source {name, new_name}`: 400 `not-exists` `Could not find source with
    name "<name>"`, 400 `already-exists` `Source with name "<new>" already exists` (the
    reference's `runRenameSource`)."""
    args = _args(body)
    name, new = _name(args), _name(args, "new_name")
    md = ctx.metadata
    if name != DEFAULT_SOURCE and name not in served_sources(md):
        raise SvcError(
            ErrorCode.NOT_EXISTS, f'Could not find source with name "{name}"', path="$.args"
        )
    _own(name, "rename")
    if new == DEFAULT_SOURCE or new in served_sources(md):
        raise SvcError(
            ErrorCode.ALREADY_EXISTS, f'Source with name "{new}" already exists', path="$.args"
        )
    md = replace_source(md, name, lambda raw: {**raw, "name": new})
    sources = {(new if k == name else k): v for k, v in ctx.catalog.sources.items()}
    ctx.catalog = msgspec.structs.replace(ctx.catalog, sources=sources)
    if ctx.db.peers is not None:
        ctx.db.peers.rename(name, new)
    ctx.commit(md)
    ctx.schema_changed = True
    return SUCCESS


async def get_source_tables(ctx: Context, body: QueryBody) -> Any:
    """`pg_get_source_tables {source}`: every table and view of the source's database
    outside the system schemas, tracked or not, as `[{schema, name}]` (the reference's
    `listAllTables`)."""
    args = _args(body)
    source = args.get("source", DEFAULT_SOURCE)
    if not isinstance(source, str):
        raise SvcError(ErrorCode.PARSE_FAILED, "expected a string", path="$.args.source")
    require_source(ctx.metadata, source)
    catalog = ctx.catalog if source == DEFAULT_SOURCE else ctx.catalog.sources.get(source)
    if catalog is None:
        raise SvcError(
            ErrorCode.UNEXPECTED, f'source with name "{source}" is inconsistent', path="$.args"
        )
    hidden = ("hdb_catalog", "information_schema", "pg_catalog")
    found = sorted((t.schema, t.name) for t in catalog.tables if t.schema not in hidden)
    return [{"schema": schema, "name": name} for schema, name in found]


def _args(body: QueryBody) -> dict[str, Any]:
    if not isinstance(body.args, dict):
        raise SvcError(ErrorCode.PARSE_FAILED, "expected an object", path="$.args")
    return body.args


OPERATIONS = [
    Operation(
        name="pg_add_source", handler=add_source, args=dict, read_only=False, checks=STANDARD
    ),
    Operation(
        name="pg_update_source", handler=update_source, args=dict, read_only=False, checks=STANDARD
    ),
    Operation(
        name="pg_drop_source", handler=drop_source, args=dict, read_only=False, checks=STANDARD
    ),
    Operation(
        name="rename_source", handler=rename_source, args=dict, read_only=False, checks=STANDARD
    ),
    Operation(
        name="pg_get_source_tables",
        handler=get_source_tables,
        args=dict,
        read_only=True,
        checks=SYNC_ONLY,
    ),
]
"""The source operations (merged into `svc.api.metadata.REGISTRY`)."""
