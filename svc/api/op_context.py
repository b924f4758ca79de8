"""What one metadata operation works on: the request body (`QueryBody`), the request's
`Context` (committed at the end by the engine), the handler type and `transition` for an
operation that is one pure metadata transition. Imported by every module contributing
operations (`svc.api.op_registry`); it imports none of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from svc.catalog.introspect import DbCatalog
from svc.errors import ErrorCode, SvcError
from svc.execute.db import Connection, Database
from svc.ir import Ir, build_ir
from svc.ir.checks import CheckIssue
from svc.ir.inherited import InheritedConflict
from svc.metadata.args import parse_args
from svc.metadata.drop import drop_objects
from svc.metadata.model import Metadata
from svc.schema.lazy_roots import carry_root_index
from svc.schema.names import new_schema_problem
from svc.schema.remote_registry import RemoteRegistry

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
    remotes: RemoteRegistry  # the engine's remote schema introspections (`State.remotes`)
    metadata_changed: bool = False
    schema_changed: bool = False
    resource_version: int = 0  # the stored document's version (Hasura's resource_version)
    session: dict[str, str] | None = None
    infer_functions: bool = True  # `--infer-function-permissions` (role schemas)

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
        # Reported, not refused: whole-document checks (`svc.ir.checks`) and an inherited
        # role's conflicting parents (the reference's `ConflictingInheritedPermission` has
        # no object ids, "purely informational", so it is never a new inconsistency).
        informational = (CheckIssue, InheritedConflict)
        new = [
            i for i in ir.inconsistencies if i.key not in old and not isinstance(i, informational)
        ]
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
        carry_root_index(self.ir, ir)  # the lazy roots' name index, from what changed
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


@dataclass(frozen=True)
class Before:
    """The request's document, IR and catalog as they were when an operation started:
    what its checks compare the outcome with (`svc.api.op_checks`)."""

    metadata: Metadata
    ir: Ir
    catalog: DbCatalog

    @classmethod
    def of(cls, ctx: Context) -> Before:
        """The snapshot of `ctx` now."""
        return cls(ctx.metadata, ctx.ir, ctx.catalog)


# A check run after a handler (`svc.api.op_registry.Check`): the request, the state before
# the handler ran and the handler's answer → the answer (possibly amended).
CheckStep = Callable[[Context, QueryBody, Before, Any], Awaitable[Any]]
