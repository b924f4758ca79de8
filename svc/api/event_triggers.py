"""Event-trigger metadata operations and keeping the database's capture triggers in step
with the metadata document (spec 4.10; Hasura `DDL/EventTrigger.hs`).

Operations (`OPERATIONS`, also `pg_`-prefixed for `/v1/metadata`): `create_event_trigger`
(with `replace`), `delete_event_trigger`, `invoke_event_trigger` (`{"event_id"}`),
`redeliver_event`, and the svc extensions `pause_event_trigger` / `resume_event_trigger`.

Every metadata operation declares one of the sync checks (`svc.api.op_registry.Check`
`SYNC_TRIGGERS`, `RESYNC_TRIGGERS`, `SYNC_TRIGGERS_DROP_LOG`): after it ran, when the
document's triggers or the catalog changed, the capture functions and triggers of the
database are made to match the document in the same transaction (`sync`), so
`replace_metadata`, `clear_metadata`, `untrack_table`, `run_sql` and `reload_metadata` keep
them in step, and a failed operation leaves both old. A `run_sql` that drops a column a
trigger names is a 400 `dependency-error` (with `cascade`, the trigger is dropped;
`Check.TRIGGER_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import msgspec

from svc.api.op_context import Before
from svc.api.op_registry import SYNC_ONLY, Operation, pg
from svc.catalog.event_log import (
    ARCHIVE_SQL,
    DROP_EVENT_LOG_SQL,
    EVENT_LOG_DDL,
    EVENT_LOG_EXISTS_SQL,
    INSERT_EVENT_SQL,
    REDELIVER_SQL,
)
from svc.catalog.introspect import DbCatalog
from svc.errors import ErrorCode, SvcError
from svc.ir import build_ir
from svc.metadata.args import parse_args
from svc.metadata.event_triggers import (
    OPS,
    CreateEventTrigger,
    EventTrigger,
    InvokeEventTrigger,
    RedeliverEvent,
    TriggerName,
    all_triggers,
    check_webhook,
    create_trigger,
    delete_trigger,
    find_trigger,
    listed_columns,
    set_paused,
)
from svc.metadata.model import Metadata
from svc.metadata.qualified import QualifiedName
from svc.metadata.sources import served_sources, source_view
from svc.outbound.transform import check_transforms
from svc.session_vars import role_session
from svc.sql.event_capture import (
    EXISTING_SQL,
    Capture,
    CaptureColumn,
    create_sql,
    drop_sql,
)

Handler = Callable[[Any, Any], Awaitable[Any]]  # (Context, QueryBody) → answer
SUCCESS = {"message": "success"}


def _columns(catalog: DbCatalog) -> dict[QualifiedName, tuple[CaptureColumn, ...]]:
    return {
        QualifiedName(name=t.name, schema=t.schema): tuple(
            CaptureColumn(c.name, c.type_name) for c in t.columns
        )
        for t in catalog.tables
    }


def _pick(spec: Any, all_cols: tuple[CaptureColumn, ...]) -> tuple[CaptureColumn, ...] | None:
    if spec is msgspec.UNSET or spec == "*":
        return None
    by_name = {c.name: c for c in all_cols}
    return tuple(by_name[n] for n in spec if n in by_name)


def captures(md: Metadata, catalog: DbCatalog) -> dict[str, str]:
    """`{function name: its DDL}` for every capture the document asks for on tables the
    catalog has (a trigger on a table that is gone has none)."""
    tables = _columns(catalog)
    out: dict[str, str] = {}
    for table, trigger in all_triggers(md):
        cols = tables.get(table)
        if cols is None:
            continue
        for op in OPS:
            spec = trigger.definition.op(op)
            if spec is None:
                continue
            listened = _pick(spec.columns, cols) or cols
            payload = _pick(spec.payload, cols)
            if payload is None and any(c.type_name in ("geometry", "geography") for c in cols):
                payload = cols  # GeoJSON needs the columns spelled out
            capture = Capture(trigger.name, table, op, listened, payload)
            out[capture.name] = create_sql(capture)
    return out


def _has_triggers(md: Metadata) -> bool:
    return any(entry.event_triggers for entry in md.tables)


async def sync(
    conn: Any,
    before: tuple[Metadata, DbCatalog],
    after: tuple[Metadata, DbCatalog],
    *,
    force: bool = False,
    drop_log: bool = False,
) -> None:
    """Make the capture functions match `after` (the old state `before` tells what
    exists; `force` reads what exists from the database instead). Creates the event
    tables when `after` has triggers; `drop_log` drops them when it has none."""
    want = captures(*after)
    if force:
        have_names = {r[0] for r in await conn.fetch(EXISTING_SQL)}
        have: dict[str, str] = {}
    else:
        have = captures(*before)
        have_names = set(have)
    statements = [drop_sql(name) for name in sorted(have_names - set(want))]
    statements += [sql for name, sql in want.items() if have.get(name) != sql]
    if want and not await conn.fetchval(EVENT_LOG_EXISTS_SQL):
        # another source's database has no catalog of svc's until it has triggers
        statements.insert(0, "CREATE SCHEMA IF NOT EXISTS hdb_catalog;\n" + EVENT_LOG_DDL)
    if drop_log and not want:
        statements.append(DROP_EVENT_LOG_SQL)
    if statements:
        await conn.execute("\n".join(statements))


def _dependents(md: Metadata, catalog: DbCatalog) -> list[tuple[QualifiedName, EventTrigger]]:
    """Triggers naming a column their table no longer has."""
    tables = {t: {c.name for c in cols} for t, cols in _columns(catalog).items()}
    out = []
    for table, trigger in all_triggers(md):
        present = tables.get(table)
        if present is not None and any(c not in present for _, c in listed_columns(trigger)):
            out.append((table, trigger))
    return out


def _follow_run_sql(ctx: Any, body: Any) -> None:
    """After `run_sql`: a trigger naming a dropped column is a `dependency-error`, or is
    dropped with `cascade`."""
    broken = _dependents(ctx.metadata, ctx.catalog)
    if not broken:
        return
    cascade = isinstance(body.args, dict) and bool(body.args.get("cascade"))
    if not cascade:
        names = ", ".join(f'event-trigger {t}.{tr.name} in source "default"' for t, tr in broken)
        raise SvcError(
            ErrorCode.DEPENDENCY_ERROR,
            f"cannot drop due to the following dependent objects : {names}",
            path="$.args",
        )
    md = ctx.metadata
    for _, trigger in broken:
        md = delete_trigger(md, trigger.name)
    ctx.ir = build_ir(md, ctx.catalog, ctx.ir)
    ctx.metadata, ctx.metadata_changed = md, True


async def check_trigger_columns(ctx: Any, body: Any, before: Before, result: Any) -> Any:
    """`Check.TRIGGER_COLUMNS`: after `run_sql` changed the catalog, a trigger naming a
    dropped column is a 400 `dependency-error`, or is dropped with `cascade`."""
    if ctx.catalog is not before.catalog:
        _follow_run_sql(ctx, body)
    return result


async def _sync_step(
    ctx: Any, body: Any, before: Before, result: Any, *, force: bool, clear: bool
) -> Any:
    """`sync` when triggers or the catalog changed (always with `force`); `clear` drops
    the event tables when no trigger is left."""
    changed = ctx.metadata is not before.metadata or ctx.catalog is not before.catalog
    if force or (changed and (_has_triggers(before.metadata) or _has_triggers(ctx.metadata))):
        old, new = (before.metadata, before.catalog), (ctx.metadata, ctx.catalog)
        await sync(ctx.conn, old, new, force=force, drop_log=clear)
    elif clear:
        await ctx.conn.execute(DROP_EVENT_LOG_SQL)
    if changed or force:
        await _sync_sources(ctx, before, force=force, clear=clear)
    return result


async def _sync_sources(ctx: Any, before: Before, *, force: bool, clear: bool) -> None:
    """`sync` for every other source (`svc.metadata.sources`) on its own database, in its
    own transaction (committed before the metadata's: two databases): a source that left
    the document has its capture triggers and event tables dropped (as the reference's
    `postDropSourceHook` drops them) and its connections closed."""
    peers = ctx.db.peers
    if peers is None:
        return
    names = {*served_sources(before.metadata), *served_sources(ctx.metadata)}
    for name in sorted(names):
        old, new = _view(before.metadata, name), _view(ctx.metadata, name)
        catalog = ctx.catalog.sources.get(name) or before.catalog.sources.get(name)
        db = peers.databases.get(name)
        if db is None or catalog is None:
            continue
        triggers = any(v is not None and _has_triggers(v) for v in (old, new))
        if triggers or force:
            old_catalog = before.catalog.sources.get(name) or catalog
            async with db.transaction() as conn:
                await sync(
                    conn,
                    (old or Metadata(), old_catalog),
                    (new or Metadata(), catalog),
                    force=force,
                    drop_log=clear or new is None,
                )
        if new is None:
            peers.retire(name)


def _view(md: Metadata, name: str) -> Metadata | None:
    """Source `name`'s view of `md` (None when `md` does not serve it or it is unreadable)."""
    if name not in served_sources(md):
        return None
    try:
        return source_view(md, name)
    except SvcError:
        return None


# `Check.SYNC_TRIGGERS`, `RESYNC_TRIGGERS` (`reload_metadata`: what exists is read from the
# database) and `SYNC_TRIGGERS_DROP_LOG` (`clear_metadata`).
sync_triggers = partial(_sync_step, force=False, clear=False)
resync_triggers = partial(_sync_step, force=True, clear=False)
sync_triggers_drop_log = partial(_sync_step, force=False, clear=True)


# -- operations -------------------------------------------------------------------------
def _table_columns(catalog: DbCatalog) -> Mapping[QualifiedName, tuple[str, ...]]:
    return {t: tuple(c.name for c in cols) for t, cols in _columns(catalog).items()}


async def create_event_trigger(ctx: Any, body: Any) -> Any:
    """`create_event_trigger`; errors as `svc.metadata.event_triggers.create_trigger`, and
    400 `not-found` for an environment variable that is not set."""
    args = parse_args(CreateEventTrigger, body.args)
    check_transforms(args.request_transform, args.response_transform)  # Validation.hs
    md = create_trigger(ctx.metadata, args, _table_columns(ctx.catalog))
    found = find_trigger(md, args.name)
    assert found is not None
    check_webhook(found[1])
    ctx.commit(md)
    return SUCCESS


async def delete_event_trigger(ctx: Any, body: Any) -> Any:
    """`delete_event_trigger`: 400 `not-exists` for an unknown name; pending events of
    the trigger are archived."""
    args = parse_args(TriggerName, body.args)
    ctx.commit(delete_trigger(ctx.metadata, args.name))
    if await ctx.conn.fetchval(EVENT_LOG_EXISTS_SQL):
        await ctx.conn.execute(ARCHIVE_SQL, args.name)
    return SUCCESS


def _pause(paused: bool) -> Handler:
    async def run(ctx: Any, body: Any) -> Any:
        args = parse_args(TriggerName, body.args)
        ctx.commit(set_paused(ctx.metadata, args.name, paused))
        return SUCCESS

    return run


async def invoke_event_trigger(ctx: Any, body: Any) -> Any:
    """`invoke_event_trigger {name, payload}` → `{"event_id"}`: a MANUAL event with
    `data.new` = payload and the request's session variables. 400 `not-exists` for an
    unknown trigger, 400 `not-supported` "manual mode is not enabled for event trigger"
    when `enable_manual` is false (Hasura DDL/EventTrigger.hs)."""
    args = parse_args(InvokeEventTrigger, body.args)
    found = find_trigger(ctx.metadata, args.name)
    if found is None:
        raise SvcError(
            ErrorCode.NOT_EXISTS, f'event trigger "{args.name}" does not exist', path="$.args"
        )
    table, trigger = found
    if not trigger.definition.enable_manual:
        raise SvcError(
            ErrorCode.NOT_SUPPORTED, "manual mode is not enabled for event trigger", path="$"
        )
    session = ctx.session or role_session(ctx.role)
    payload = {"op": "MANUAL", "data": {"old": None, "new": args.payload}}
    payload["session_variables"] = session
    if not await ctx.conn.fetchval(EVENT_LOG_EXISTS_SQL):
        await ctx.conn.execute(EVENT_LOG_DDL)
    text = msgspec.json.encode(payload).decode()
    event_id = await ctx.conn.fetchval(INSERT_EVENT_SQL, table.schema, table.name, args.name, text)
    return {"event_id": event_id}


async def redeliver_event(ctx: Any, body: Any) -> Any:
    """`redeliver_event {event_id}`: the event is due again with its tries reset; 400
    `not-exists` "event does not exist" for an unknown id."""
    args = parse_args(RedeliverEvent, body.args)
    found = None
    if await ctx.conn.fetchval(EVENT_LOG_EXISTS_SQL):
        found = await ctx.conn.fetchval(REDELIVER_SQL, args.event_id)
    if found is None:
        raise SvcError(ErrorCode.NOT_EXISTS, "event does not exist", path="$.args.event_id")
    return SUCCESS


def _op(name: str, kind: Any, handler: Handler) -> Operation:
    return Operation(
        name=name, handler=handler, args=kind, read_only=False, checks=SYNC_ONLY, aliases=pg(name)
    )


OPERATIONS = [
    _op("create_event_trigger", CreateEventTrigger, create_event_trigger),
    _op("delete_event_trigger", TriggerName, delete_event_trigger),
    _op("invoke_event_trigger", InvokeEventTrigger, invoke_event_trigger),
    _op("redeliver_event", RedeliverEvent, redeliver_event),
    _op("pause_event_trigger", TriggerName, _pause(True)),
    _op("resume_event_trigger", TriggerName, _pause(False)),
]
"""The event-trigger operations (also `pg_`-prefixed)."""
