"""Inherited roles in metadata operations (Hasura's `add_inherited_role`,
`drop_inherited_role` on `/v1/metadata`; `Hasura/RQL/DDL/InheritedRoles.hs`).

The transitions are `svc.metadata.inherited_roles`. A role of the set that has no
permission is accepted and adds nothing (svc does not refuse it as the reference's
`resolveInheritedRole` does: a parent's last permission can then be dropped without
dropping the roles made of it).
"""

from __future__ import annotations

from typing import Any

from svc.api.op_context import SUCCESS, Context, QueryBody
from svc.api.op_registry import STANDARD, Operation
from svc.metadata.args import parse_args
from svc.metadata.inherited_roles import (
    AddInheritedRole,
    DropInheritedRole,
    add_inherited_role,
    drop_inherited_role,
)


async def add_role(ctx: Context, body: QueryBody) -> Any:
    """`add_inherited_role`: `{role_name, role_set}`; 400 `invalid-params` for a role in
    its own set, `cyclic-dependency` for a cycle."""
    ctx.commit(add_inherited_role(ctx.metadata, parse_args(AddInheritedRole, body.args)))
    return SUCCESS


async def drop_role(ctx: Context, body: QueryBody) -> Any:
    """`drop_inherited_role`: `{role_name}`; 400 `not-exists` when there is none."""
    ctx.commit(drop_inherited_role(ctx.metadata, parse_args(DropInheritedRole, body.args)))
    return SUCCESS


OPERATIONS = [
    Operation(
        name="add_inherited_role",
        handler=add_role,
        args=AddInheritedRole,
        read_only=False,
        checks=STANDARD,
    ),
    Operation(
        name="drop_inherited_role",
        handler=drop_role,
        args=DropInheritedRole,
        read_only=False,
        checks=STANDARD,
    ),
]
"""The inherited-role operations (merged into `svc.api.metadata.REGISTRY`)."""
