"""Input validation webhooks (`validate_input` of insert, update and delete permissions):
called before a mutation's transaction starts, as the reference does (Hasura v2.29+,
`Hasura.Backends.Postgres.Instances.Execute` `convertInsert`/`convertUpdate`/
`convertDelete` → `Hasura.Backends.Postgres.Execute.Mutation` `validateInsertRows`,
`validateUpdateMutation`, `validateDeleteMutation`, `validateMutation`; docs "Postgres:
Input Validations").

For each root field of the mutation in order, each webhook of the role's permission gets
`POST {"version": 1, "role", "session_variables", "data": {"input": [...]}}`:

- insert (`insert_x`, `insert_x_one`): one call per table the field writes (the root's
  table first, then each nested relationship's target table in the order met) whose
  insert permission has a webhook, `input` every row given for that table: columns by
  their Postgres names, relationships as `{"data": row}` (object) or `{"data": [rows]}`
  (array), nested; presets and `on_conflict` are not input;
- update: `input` `[{<the field's arguments>}]` (`where`, `_set`, `_inc`, …,
  `pk_columns` for `update_x_by_pk`); `update_x_many`: `input` is its `updates` list;
- delete: `[{"where": …}]`; `delete_x_by_pk`: `[{"pk_columns": {<key columns>}}]`;
- a nested update (`_nested`, svc's own): after the root's call, the webhooks of the
  related tables' delete, update and insert permissions for what it writes there
  (`_nested`).

Headers: the configured ones, `Content-Type: application/json`, and with
`forward_client_headers` the client's (as actions forward them; a later source wins a
name). Within the webhook's `timeout` (and the role's `time_limit`, when shorter). A 2xx
answer lets the mutation go on; 400 with `{"message": text}` answers `validation-failed`
with that message and nothing is written; a 400 without it is 500 `unexpected`
"received invalid response from input validation webhook"; another status is
`unexpected` "internal error when validating input data"; no answer (timeout,
connection) is `unexpected` "http exception when validating input data" (details under
`extensions.internal` for admins).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
from graphql import GraphQLSchema
from graphql.execution.collect_fields import collect_fields
from graphql.execution.values import get_argument_values

from svc.api.actions.sync import forwarded
from svc.errors import ErrorCode, SvcError
from svc.ir.input_validation import ValidateInput
from svc.ir.model import Table
from svc.ir.role_view import RoleView, any_input_validation
from svc.metadata.model import QualifiedName
from svc.outbound import OutboundError, render_template, resolve_headers, shared_client
from svc.outbound.forwarded import client_headers
from svc.schema.build import schema_view
from svc.schema.info import FieldKind
from svc.session_vars import handler_session
from svc.version import VERSION

#: The request format's version (`validateInputPayloadVersion`).
PAYLOAD_VERSION = 1

_INSERTS = (FieldKind.INSERT, FieldKind.INSERT_ONE)
_UPDATES = (FieldKind.UPDATE, FieldKind.UPDATE_BY_PK, FieldKind.UPDATE_MANY)
_DELETES = (FieldKind.DELETE, FieldKind.DELETE_BY_PK)

Call = tuple[ValidateInput, list[Any]]


def has_webhooks(view: RoleView) -> bool:
    """Whether any table write of `view`'s IR has a webhook (cheap: admin never does; the
    answer is remembered on the IR)."""
    return not view.admin and any_input_validation(view.ir)


async def validate_mutation(
    schema: GraphQLSchema,
    prepared: Any,
    variables: dict[str, Any],
    role: str,
    session: dict[str, str],
    budget: float | None = None,
) -> None:
    """Call the webhooks of the mutation `prepared` (see the module), one after the other
    in root-field order; raises `SvcError` (`validation-failed`, `unexpected`) at the
    first refusal, before anything is written. `budget`: the role's time limit in
    seconds (None or 0: none)."""
    view = schema_view(schema)
    if not has_webhooks(view) or schema.mutation_type is None:
        return
    for validate, rows in list(_calls(schema, view, prepared, variables)):
        body = {
            "version": PAYLOAD_VERSION,
            "role": role,
            "session_variables": handler_session(session, role),
            "data": {"input": rows},
        }
        timeout = validate.timeout if not budget else min(validate.timeout, budget)
        await _call(validate, body, timeout)


def _calls(
    schema: GraphQLSchema, view: RoleView, prepared: Any, variables: dict[str, Any]
) -> Iterator[Call]:
    root = schema.mutation_type
    assert root is not None
    op = prepared.operation
    fields = collect_fields(schema, prepared.fragments, variables, root, op.selection_set)
    for nodes in fields.values():
        node = nodes[0]
        field = root.fields.get(node.name.value)
        info = None if field is None else field.extensions.get("svc")
        if field is None or info is None or info.table is None:
            continue
        kind, table = info.kind, info.table
        if kind in _INSERTS:
            args = get_argument_values(field, node, variables)
            rows = args["objects"] if kind == FieldKind.INSERT else [args["object"]]
            found: dict[QualifiedName, Call] = {}
            _collect(view, table, rows, found)
            yield from found.values()
            continue
        if kind not in _UPDATES and kind not in _DELETES:
            continue
        write = view.table(table.name).write("update" if kind in _UPDATES else "delete")
        args = get_argument_values(field, node, variables)
        if write is not None and write.validate is not None:
            if kind == FieldKind.UPDATE_MANY:
                yield write.validate, list(args.get("updates") or [])
            elif kind == FieldKind.DELETE_BY_PK:
                yield write.validate, [{"pk_columns": args}]
            else:
                yield write.validate, [args]
        each = (args.get("updates") or []) if kind == FieldKind.UPDATE_MANY else [args]
        for update in each:
            if kind in _UPDATES and isinstance(update, dict) and update.get("_nested"):
                yield from _nested(view, table, update["_nested"])


def _nested(view: RoleView, table: Table, nested: dict[str, Any]) -> Iterator[Call]:
    """The webhooks of a nested update's writes below `table` (`svc.plan.nested_update`),
    in the order they run: per relationship the delete webhook (`[{"where": …}]`), the
    update webhook of each update (`[{<its _set, _inc, …, where>}]`, then its own
    `_nested`), the insert webhooks of `_insert` (as a nested insert's)."""
    for name, value in nested.items():
        rel = table.relationship_map.get(name)
        target = None if rel is None else view.ir.tables.get(rel.target)
        if target is None or not isinstance(value, dict):
            continue
        access = view.table(target.name)
        updates = [value] if rel is not None and rel.kind == "object" else []
        given = value.get("_delete") is not None  # `_delete: null` deletes nothing
        if given and access.delete and access.delete.validate is not None:
            yield access.delete.validate, [{"where": value["_delete"]}]
        updates += [u for u in value.get("_update") or [] if isinstance(u, dict)]
        for update in updates:
            if access.update is not None and access.update.validate is not None:
                yield access.update.validate, [update]
            if update.get("_nested"):
                yield from _nested(view, target, update["_nested"])
        data = (value.get("_insert") or {}).get("data")
        if isinstance(data, list):
            found: dict[QualifiedName, Call] = {}
            _collect(view, target, [d for d in data if isinstance(d, dict)], found)
            yield from found.values()


def _collect(
    view: RoleView, table: Table, rows: list[Any], found: dict[QualifiedName, Call]
) -> None:
    """Add `rows` (GraphQL insert input objects of `table`) to the call of `table`'s
    webhook, then the rows of each nested relationship insert to their table's
    (Hasura's `validateInsertInput`: the table's own rows first)."""
    write = view.table(table.name).insert
    if write is not None and write.validate is not None:
        entry = found.setdefault(table.name, (write.validate, []))
        entry[1].extend(_row(view, table, r) for r in rows)
    rels = {r.name: r for r in table.relationships}
    for row in rows:
        for key, value in row.items():
            rel = rels.get(key)
            if rel is None or not isinstance(value, dict):
                continue
            target = view.ir.tables.get(rel.target)
            data = value.get("data")
            nested = data if isinstance(data, list) else [data]
            if target is not None:
                _collect(view, target, [d for d in nested if isinstance(d, dict)], found)


def _row(view: RoleView, table: Table, row: dict[str, Any]) -> dict[str, Any]:
    """One insert input object as the webhook gets it (`convertInsertRow`): columns by
    Postgres name, relationships as `{"data": …}`."""
    columns = {c.gql_name: c.name for c in table.columns}
    rels = {r.name: r for r in table.relationships}
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key in columns:
            out[columns[key]] = value
            continue
        rel = rels.get(key)
        target = None if rel is None else view.ir.tables.get(rel.target)
        if target is None or not isinstance(value, dict):
            continue
        data = value.get("data")
        if isinstance(data, list):
            out[key] = {"data": [_row(view, target, d) for d in data if isinstance(d, dict)]}
        elif isinstance(data, dict):
            out[key] = {"data": _row(view, target, data)}
    return out


def _headers(validate: ValidateInput) -> list[tuple[str, str]]:
    sent: dict[str, tuple[str, str]] = {}
    for name, value in resolve_headers(validate.headers):
        sent[name.lower()] = (name, value)
    sent["content-type"] = ("Content-Type", "application/json")
    sent["user-agent"] = ("User-Agent", f"svc/{VERSION}")
    if validate.forward_client_headers:
        for name, value in forwarded(client_headers()):
            sent[name.lower()] = (name, value)
    return list(sent.values())


async def _call(validate: ValidateInput, body: dict[str, Any], timeout: float) -> None:
    """POST `body` to the webhook; returns on a 2xx answer, raises otherwise (module)."""
    url = render_template(validate.url)
    content = msgspec.json.encode(body)
    try:
        response = await shared_client().request(
            "POST", url, headers=_headers(validate), content=content, timeout=timeout
        )
    except OutboundError as exc:
        detail = "Response timeout" if exc.kind == "timeout" else exc.detail
        raise _unexpected(
            "http exception when validating input data",
            {"type": "http_exception", "message": detail, "url": url},
        ) from None
    status = response.status
    if 200 <= status < 300:
        return
    if status == 400:
        message = _message(response.body)
        if message is None:
            raise _unexpected(
                "received invalid response from input validation webhook",
                f"invalid response: {response.body.decode(errors='replace')}",
            )
        raise SvcError(ErrorCode.VALIDATION_FAILED, message)
    raise _unexpected(
        "internal error when validating input data",
        f"expecting 200 or 400 status code, but found {status}",
    )


def _message(body: bytes) -> str | None:
    """The `message` of a 400 answer `{"message": text}` (`ValidateInputErrorResponse`),
    None for another body."""
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    message = decoded.get("message") if isinstance(decoded, dict) else None
    return message if isinstance(message, str) else None


def _unexpected(message: str, internal: Any) -> SvcError:
    return SvcError(ErrorCode.UNEXPECTED, message, status=500, internal=internal)
