"""Metadata operations on a source other than `default` (`"source": "<name>"` in args).

The handler runs on that source as if it were the only one: its view of the document
(`svc.metadata.sources.source_view`: its tables and functions where `default`'s are), its
catalog, its own IR (`Ir.sources`) and a transaction on its own database, so every
operation (`pg_track_table`, relationships, permissions, `run_sql`, enum tables, computed
fields, functions) works unchanged. Its outcome is written back into the whole document
(`with_source`) and committed there, which also refuses what clashes with the other
sources (GraphQL names). The source's transaction commits after that, just before the
metadata's: a failure later (the metadata write) leaves a `run_sql` on that source
committed, as in the reference, where a source's SQL and the metadata are two
transactions too.

Event triggers work the same way: an event-trigger operation runs on the source's
connection (`invoke_event_trigger` writes that database's event log), and the capture
triggers of every source are kept in step with the document by the operation's sync
check (`svc.api.event_triggers`, each source's in its own database).
"""

from __future__ import annotations

from typing import Any

import msgspec

from svc.api.op_context import Context, Handler, QueryBody
from svc.errors import ErrorCode, SvcError
from svc.metadata.model import DEFAULT_SOURCE
from svc.metadata.sources import require_source, source_view, with_source

# Operations that read `source` themselves (`svc.api.source_ops`).
_OWN_SOURCE_ARG = frozenset({"pg_get_source_tables"})


def source_arg(body: QueryBody) -> str:
    """The source an operation acts on: its args' `source` (a string), else `default`.
    Raises 400 `parse-failed` at `$.args.source` for another type."""
    args = body.args
    value = args.get("source", DEFAULT_SOURCE) if isinstance(args, dict) else DEFAULT_SOURCE
    if not isinstance(value, str):
        raise SvcError(ErrorCode.PARSE_FAILED, "expected a string", path="$.args.source")
    return value


async def run_handler(name: str, handler: Handler, ctx: Context, body: QueryBody) -> Any:
    """`handler`'s answer to `body`, run on the source the args name (see the module).
    Raises 400 `not-exists` for a source `ctx.metadata` does not serve, 400 `unexpected`
    "source with name … is inconsistent" for one that is not served now (the reference's
    `askSourceInfo`), and what the handler raises."""
    source = source_arg(body)
    if source == DEFAULT_SOURCE or name in _OWN_SOURCE_ARG:
        return await handler(ctx, body)
    require_source(ctx.metadata, source)
    inner_ir = ctx.ir.sources.get(source)
    catalog = ctx.catalog.sources.get(source)
    peers = ctx.db.peers
    if inner_ir is None or catalog is None or peers is None or source not in peers.databases:
        raise SvcError(
            ErrorCode.UNEXPECTED, f'source with name "{source}" is inconsistent', path="$.args"
        )
    db = peers.databases[source]
    async with db.transaction() as conn:
        view = source_view(ctx.metadata, source)
        inner = Context(db, conn, view, catalog, inner_ir, ctx.role, ctx.remotes)
        inner.session, inner.infer_functions = ctx.session, ctx.infer_functions
        inner.resource_version = ctx.resource_version
        result = await handler(inner, body)
        ctx.schema_changed = ctx.schema_changed or inner.schema_changed
        if inner.metadata_changed or inner.catalog is not catalog:
            sources = {**ctx.catalog.sources, source: inner.catalog}
            ctx.catalog = msgspec.structs.replace(ctx.catalog, sources=sources)
            ctx.commit(with_source(ctx.metadata, source, inner.metadata))
    return result
