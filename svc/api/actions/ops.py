"""The metadata operations of actions and custom types (spec 4.3, 4.4; `OPERATIONS`, part
of `svc.api.metadata.REGISTRY`).

Each is a pure transition (`svc.metadata.actions`) committed through the request's
`Context`: a change whose types or relationships do not resolve is refused with the IR's
inconsistency (`svc.ir.actions`: 400 `invalid-configuration`, `internal` the object),
and the old metadata keeps serving. `drop_action` with `clear_data` (default true)
deletes the action's stored asynchronous calls in the same transaction.
"""

from __future__ import annotations

from typing import Any, Protocol

from svc.api.op_registry import SYNC_ONLY, Operation
from svc.catalog.action_log import CLEAR_SQL
from svc.execute.db import Connection
from svc.metadata import actions as transitions
from svc.metadata.action_model import CustomTypes
from svc.metadata.args import parse_args
from svc.metadata.model import Metadata

SUCCESS = {"message": "success"}


class Body(Protocol):
    """What a handler reads of the request (`svc.api.metadata.QueryBody`)."""

    args: Any


class Ctx(Protocol):
    """What a handler uses of `svc.api.metadata.Context`."""

    metadata: Metadata
    conn: Connection

    def commit(self, md: Metadata, *, on_new: str = "error") -> None: ...


async def set_custom_types(ctx: Ctx, body: Body) -> Any:
    """Replace the custom types; refused when a type or relationship does not resolve or
    an action loses a type it uses."""
    types = parse_args(CustomTypes, body.args or {})
    ctx.commit(transitions.set_custom_types(ctx.metadata, types))
    return SUCCESS


async def create_action(ctx: Ctx, body: Body) -> Any:
    """Add an action (400 `already-exists`; the header and type errors of its definition)."""
    args = parse_args(transitions.CreateAction, body.args)
    ctx.commit(transitions.create_action(ctx.metadata, args))
    return SUCCESS


async def update_action(ctx: Ctx, body: Body) -> Any:
    """Replace an action's definition (400 `not-exists`)."""
    args = parse_args(transitions.CreateAction, body.args)
    ctx.commit(transitions.update_action(ctx.metadata, args))
    return SUCCESS


async def drop_action(ctx: Ctx, body: Body) -> Any:
    """Remove an action and its permissions (400 `not-exists`); `clear_data` (default
    true) deletes its stored asynchronous calls."""
    args = parse_args(transitions.DropAction, body.args)
    ctx.commit(transitions.drop_action(ctx.metadata, args.name))
    if args.clear_data is not False:
        await ctx.conn.execute(CLEAR_SQL, args.name)
    return SUCCESS


async def create_action_permission(ctx: Ctx, body: Body) -> Any:
    """Let a role see an action (400 `not-exists`, `already-exists`)."""
    args = parse_args(transitions.ActionPermissionArgs, body.args)
    ctx.commit(transitions.create_action_permission(ctx.metadata, args))
    return SUCCESS


async def drop_action_permission(ctx: Ctx, body: Body) -> Any:
    """Remove a role's permission on an action (400 `not-exists`)."""
    args = parse_args(transitions.ActionPermissionArgs, body.args)
    ctx.commit(transitions.drop_action_permission(ctx.metadata, args))
    return SUCCESS


def _op(name: str, kind: Any, handler: Any) -> Operation:
    return Operation(name=name, handler=handler, args=kind, read_only=False, checks=SYNC_ONLY)


OPERATIONS = [
    _op("set_custom_types", CustomTypes, set_custom_types),
    _op("create_action", transitions.CreateAction, create_action),
    _op("update_action", transitions.CreateAction, update_action),
    _op("drop_action", transitions.DropAction, drop_action),
    _op("create_action_permission", transitions.ActionPermissionArgs, create_action_permission),
    _op("drop_action_permission", transitions.ActionPermissionArgs, drop_action_permission),
]
"""The action and custom-type operations (no `pg_` spelling)."""
