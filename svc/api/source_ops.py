"""Source operations while svc serves one source, `default` (ARCHITECTURE "Sources";
several sources are not served yet, README "Not yet"): `pg_add_source`,
`pg_update_source`, `pg_drop_source` and `rename_source` are refused with 400
`not-supported`, saying why, rather than answered as unknown operations.

Not yet: the `source` argument of the other `pg_*` operations is not checked (README "Not
yet"): an operation naming another source acts on `default`. Refusing it as the
reference refuses an unknown source (400 `not-exists`) is right for users, but the
conformance files of other directories (`naming_conventions`) add a source `pg1` and pass
their later steps only because those act on `default`; that waits for sources themselves.
"""

from __future__ import annotations

from typing import Any, NoReturn

from svc.api.op_context import Context, QueryBody
from svc.api.op_registry import STANDARD, Operation
from svc.errors import ErrorCode, SvcError
from svc.metadata.model import DEFAULT_SOURCE


async def refuse_source_change(ctx: Context, body: QueryBody) -> NoReturn:
    """`pg_add_source`, `pg_update_source`, `pg_drop_source`, `rename_source`: 400
    `already-exists` when adding `default` without `replace_configuration` (the
    reference's answer), else 400 `not-supported`: svc serves the one database of
    `--database-url` as `default`."""
    args: Any = body.args if isinstance(body.args, dict) else {}
    adds_default = body.type == "pg_add_source" and args.get("name") == DEFAULT_SOURCE
    if adds_default and not args.get("replace_configuration"):
        raise SvcError(
            ErrorCode.ALREADY_EXISTS,
            f'source with name "{DEFAULT_SOURCE}" already exists',
            path="$.args",
        )
    raise SvcError(
        ErrorCode.NOT_SUPPORTED,
        f"{body.type} is not supported: svc serves one source, "
        f'"{DEFAULT_SOURCE}", the database of --database-url (SVC_GRAPHQL_DATABASE_URL)',
        path="$.args",
    )


OPERATIONS = [
    Operation(
        name=name,
        handler=refuse_source_change,
        args=dict,
        read_only=False,
        checks=STANDARD,
    )
    for name in ("pg_add_source", "pg_update_source", "pg_drop_source", "rename_source")
]
"""The source operations (merged into `svc.api.metadata.REGISTRY`)."""
