"""Event triggers in the metadata document (spec 2.7, 4.10; Hasura
`RQL/Types/EventTrigger.hs`, `DDL/EventTrigger.hs`): the typed trigger, the arguments of
`create_event_trigger` / `delete_event_trigger` / `invoke_event_trigger` /
`redeliver_event`, and the pure transitions `(Metadata, args) → Metadata`.

A table entry keeps its triggers in `event_triggers` in Hasura's export form:

    {name, definition: {enable_manual, insert?: {columns, payload?}, update?, delete?},
     retry_conf: {num_retries, interval_sec, timeout_sec}, webhook | webhook_from_env,
     headers?, request_transform?, response_transform?}

`columns` / `payload` are `"*"` or a list of column names. svc extensions (README):
`retry_conf.backoff` ("exponential") and `retry_conf.max_interval_sec`; `paused`.
The typed trigger (`EventTrigger`, in `svc.metadata.event_trigger_model`) is what a
table entry's `event_triggers` holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from svc.errors import ErrorCode, SvcError
from svc.metadata.event_trigger_model import (
    NAME_PATTERN,
    OPS,
    EventTrigger,
    OpSpec,
    RetryConf,
    TriggerDefinition,
)
from svc.metadata.model import Metadata, TableEntry, convert_error
from svc.metadata.plain_names import check_plain_name
from svc.metadata.qualified import QualifiedName, qualify
from svc.outbound import HeaderConf, check_header, env_value, parse_template

__all__ = ["OPS", "EventTrigger", "OpSpec", "RetryConf", "TriggerDefinition"]


class CreateEventTrigger(msgspec.Struct, frozen=True):
    """`create_event_trigger` arguments (`pg_create_event_trigger` on /v1/metadata)."""

    name: str
    table: Any
    webhook: str | None = None
    webhook_from_env: str | None = None
    insert: OpSpec | None = None
    update: OpSpec | None = None
    delete: OpSpec | None = None
    enable_manual: bool = False
    retry_conf: RetryConf | None = None
    headers: tuple[HeaderConf, ...] | None = None
    replace: bool = False
    request_transform: dict[str, Any] | None = None
    response_transform: dict[str, Any] | None = None
    source: str = "default"

    def __post_init__(self) -> None:
        check_plain_name(self.name, "name")


class TriggerName(msgspec.Struct, frozen=True):
    """`delete_event_trigger`, `pause_event_trigger`, `resume_event_trigger`: `{name}`."""

    name: str
    source: str = "default"


class InvokeEventTrigger(msgspec.Struct, frozen=True):
    """`invoke_event_trigger`: `{name, payload}`."""

    name: str
    payload: Any = None
    source: str = "default"


class RedeliverEvent(msgspec.Struct, frozen=True):
    """`redeliver_event`: `{event_id}`."""

    event_id: str
    source: str = "default"


def decode_trigger(obj: Any, path: str = "$") -> EventTrigger:
    """The typed trigger of a stored JSON object; 400 `parse-failed` at the bad path."""
    try:
        return msgspec.convert(obj, EventTrigger)
    except msgspec.ValidationError as exc:
        raise convert_error(exc, path) from None


def all_triggers(md: Metadata) -> Iterator[tuple[QualifiedName, EventTrigger]]:
    """`(table, trigger)` for every event trigger of the document, in document order."""
    for entry in md.tables:
        for trigger in entry.event_triggers:
            yield entry.table, trigger


def find_trigger(md: Metadata, name: str) -> tuple[QualifiedName, EventTrigger] | None:
    """The table and trigger called `name`, if any (names are unique in a document)."""
    for table, trigger in all_triggers(md):
        if trigger.name == name:
            return table, trigger
    return None


def check_webhook(trigger: EventTrigger, env: Mapping[str, str] | None = None) -> None:
    """The webhook and headers can be resolved now (the reference resolves them at
    creation): 400 `not-found` "environment variable 'X' not set" for a
    `webhook_from_env` or header `value_from_env`; a `{{X}}` template is kept and only
    resolved when an event is sent (FIXTURES.md §1)."""
    if trigger.webhook_from_env is not msgspec.UNSET:
        env_value(trigger.webhook_from_env, env)
    for conf in trigger.header_confs():
        if conf.value_from_env is not None:
            env_value(conf.value_from_env, env)


def make_trigger(args: CreateEventTrigger) -> EventTrigger:
    """The trigger `args` describe. Raises 400 `parse-failed`: bad name, no operation
    (the reference's "atleast one amongst insert/update/delete/enable_manual spec must be
    provided" at `$`), not exactly one of `webhook` / `webhook_from_env`, a bad header."""
    if not NAME_PATTERN.match(args.name):
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            "event trigger name can only contain alphanumeric, underscore and hyphens "
            "and at most 42 characters",
            path="$.args.name",
        )
    no_ops = args.insert is None and args.update is None and args.delete is None
    if no_ops and not args.enable_manual:
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            "atleast one amongst insert/update/delete/enable_manual spec must be provided",
        )
    if (args.webhook is None) == (args.webhook_from_env is None):
        raise SvcError(
            ErrorCode.PARSE_FAILED,
            "Expecting exactly one of webhook or webhook_from_env",
            path="$.args",
        )
    for i, conf in enumerate(args.headers or ()):
        check_header(conf, f"$.args.headers[{i}]")
    if args.webhook is not None:
        parse_template(args.webhook)  # never raises: any text is a template

    def some(value: Any) -> Any:
        return msgspec.UNSET if value is None else value

    definition = TriggerDefinition(
        enable_manual=args.enable_manual,
        insert=some(args.insert),
        update=some(args.update),
        delete=some(args.delete),
    )
    return EventTrigger(
        name=args.name,
        definition=definition,
        retry_conf=args.retry_conf or RetryConf(),
        webhook=some(args.webhook),
        webhook_from_env=some(args.webhook_from_env),
        headers=some(args.headers),
        request_transform=some(args.request_transform),
        response_transform=some(args.response_transform),
    )


def _replace_entry(md: Metadata, table: QualifiedName, entry: TableEntry) -> Metadata:
    tables = tuple(entry if e.table == table else e for e in md.tables)
    return msgspec.structs.replace(md, tables=tables)


def _without(md: Metadata, name: str) -> Metadata:
    """`md` with trigger `name` removed from whichever table holds it."""
    tables = []
    for entry in md.tables:
        kept = tuple(t for t in entry.event_triggers if t.name != name)
        if len(kept) != len(entry.event_triggers):
            entry = msgspec.structs.replace(entry, event_triggers=kept)
        tables.append(entry)
    return msgspec.structs.replace(md, tables=tuple(tables))


def create_trigger(
    md: Metadata, args: CreateEventTrigger, columns: Mapping[QualifiedName, tuple[str, ...]]
) -> Metadata:
    """`md` with the trigger of `args` added (or, with `replace`, put in place of the one
    of that name). `columns`: every table's columns (the database catalog). Raises 400
    `not-exists` (table not tracked or not in the database; a listed column the table
    lacks), 400 `already-exists` (name taken, without `replace`), and `make_trigger`'s
    errors."""
    trigger = make_trigger(args)
    table = qualify(args.table, "$.args.table")
    entry = md.table(table)
    if entry is None or table not in columns:
        raise SvcError(
            ErrorCode.NOT_EXISTS, f"table {table.quoted()} does not exist", path="$.args.table"
        )
    check_columns(trigger, table, columns[table], "$.args")
    if find_trigger(md, args.name) is not None:
        if not args.replace:
            raise SvcError(
                ErrorCode.ALREADY_EXISTS,
                f'Event trigger with name "{args.name}" already exists',
                path="$.args",
            )
        md = _without(md, args.name)
        entry = md.table(table)
        assert entry is not None
    new = msgspec.structs.replace(entry, event_triggers=(*entry.event_triggers, trigger))
    return _replace_entry(md, table, new)


def delete_trigger(md: Metadata, name: str) -> Metadata:
    """`md` without trigger `name`; 400 `not-exists` when there is none."""
    if find_trigger(md, name) is None:
        raise SvcError(
            ErrorCode.NOT_EXISTS, f'event trigger "{name}" does not exist', path="$.args"
        )
    return _without(md, name)


def set_paused(md: Metadata, name: str, paused: bool) -> Metadata:
    """`md` with trigger `name` paused or resumed (svc extension); 400 `not-exists`."""
    found = find_trigger(md, name)
    if found is None:
        raise SvcError(
            ErrorCode.NOT_EXISTS, f'event trigger "{name}" does not exist', path="$.args"
        )
    table, trigger = found
    changed = msgspec.structs.replace(trigger, paused=True if paused else msgspec.UNSET)
    entry = md.table(table)
    assert entry is not None
    triggers = tuple(changed if t.name == name else t for t in entry.event_triggers)
    return _replace_entry(md, table, msgspec.structs.replace(entry, event_triggers=triggers))


def listed_columns(trigger: EventTrigger) -> Iterator[tuple[str, str]]:
    """`(where, column)` for every column a trigger names (listened and payload)."""
    for op in OPS:
        spec = trigger.definition.op(op)
        if spec is None:
            continue
        for key in ("columns", "payload"):
            value = getattr(spec, key)
            if isinstance(value, tuple):
                for column in value:
                    yield f"{op}.{key}", column


def check_columns(
    trigger: EventTrigger, table: QualifiedName, present: tuple[str, ...], path: str
) -> None:
    """400 `not-exists` when the trigger names a column `present` lacks."""
    for where, column in listed_columns(trigger):
        if column not in present:
            raise SvcError(
                ErrorCode.NOT_EXISTS,
                f'column "{column}" does not exist in table {table.quoted()} '
                f"(event trigger {trigger.name}, {where})",
                path=path,
            )
