"""Everything a metadata request reports as inconsistent, in one place.

Three sources: the IR's inconsistencies (objects that do not resolve against the
database, whole-document checks, what svc keeps but does not apply:
`svc.ir.unsupported_issues`), remote schemas that could not be introspected
(`svc.schema.remote_registry.remote_issues`, added by the `REMOTE_ISSUES` check), and the
objects each role's schema had to be built without (`svc.schema.role_schema`). The last
need every role's schema built: `role_issues` builds them in a worker thread (they are
remembered on the IR, so the state serving requests reuses them).
"""

from __future__ import annotations

import asyncio
from typing import Any

from svc.api.op_context import Context
from svc.errors import ErrorCode, SvcError
from svc.ir import Inconsistency, Ir
from svc.ir.inherited import InheritedConflict
from svc.metadata.model import Metadata
from svc.schema.role_schema import all_issues, known_issues


async def role_issues(ctx: Context) -> list[Inconsistency]:
    """The objects left out of the role schemas of `ctx`'s document (every role's schema
    built, in a worker thread, when not built yet)."""
    return await asyncio.to_thread(
        all_issues, ctx.ir, ctx.metadata, ctx.remotes, infer_functions=ctx.infer_functions
    )


async def listed(ctx: Context) -> list[Inconsistency]:
    """The IR's inconsistencies and the role schemas' (remote schemas are added by the
    `REMOTE_ISSUES` check)."""
    return [*ctx.ir.inconsistencies, *await role_issues(ctx)]


def answer(issues: list[Inconsistency]) -> dict[str, Any]:
    """`{is_consistent, inconsistent_objects}` (`get_inconsistent_metadata`)."""
    return {"is_consistent": not issues, "inconsistent_objects": [i.to_json() for i in issues]}


async def refuse_new_role_issues(ctx: Context, before_ir: Ir, before_md: Metadata) -> None:
    """Raise the first role schema inconsistency of `ctx`'s document that the document
    before (`before_ir`, `before_md`, as far as its roles were built) did not have: 400
    `invalid-configuration` with the object in `internal`, as `Context.commit` refuses an
    IR inconsistency."""
    old = {i.key for i in known_issues(before_ir, before_md, ctx.remotes)}
    for issue in await role_issues(ctx):
        if issue.key not in old:
            internal = [{**issue.to_json(), "name": issue.name}]
            raise SvcError(issue.code, issue.reason, path="$.args", internal=internal)


def refuse_inherited_conflicts(ctx: Context) -> None:
    """`replace_metadata` without `allow_inconsistent_metadata`: an inherited role whose
    parents conflict refuses the document (400 `unexpected` "cannot continue due to
    inconsistent metadata", each in `internal`), as the reference's
    `buildSchemaCacheStrict` does; other metadata changes only list it."""
    conflicts = [i.to_json() for i in ctx.ir.inconsistencies if isinstance(i, InheritedConflict)]
    if conflicts:
        raise SvcError(
            ErrorCode.UNEXPECTED,
            "cannot continue due to inconsistent metadata",
            path="$.args",
            internal=conflicts,
        )
