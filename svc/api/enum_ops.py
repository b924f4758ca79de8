"""Enum tables in metadata operations (Hasura's `is_enum`).

`set_table_is_enum` (`pg_set_table_is_enum` on `/v1/metadata`) switches a tracked table
to or from an enum table. Before an operation commits a document that makes a table an
enum (this one, `track_table`/`add_existing_table_or_view` with `is_enum`,
`replace_metadata`), `read_new_enums` reads the rows of the tables that just became
enums, so the commit judges them (`svc.ir.enums`): a table that cannot be one is refused
with 400 `invalid-configuration` at `$.args`, the inconsistent object under `internal`,
as the reference answers (`server/tests-py/queries/v1/set_table_is_enum/add_invalid.yaml`).
"""

from __future__ import annotations

from typing import Any

from svc.api.op_context import SUCCESS, Context, QueryBody
from svc.api.op_registry import STANDARD, Operation, pg
from svc.execute.enum_values import read_enum_rows
from svc.ir import build_ir
from svc.metadata.args import parse_args
from svc.metadata.enum_tables import SetTableIsEnum, set_table_is_enum
from svc.metadata.model import Metadata


async def read_new_enums(ctx: Context, md: Metadata) -> None:
    """Read the rows of the tables `md` tracks as enums whose rows the request's catalog
    does not hold yet (`ctx.catalog` gains them; tables already read keep their rows)."""
    ctx.catalog = await read_enum_rows(ctx.conn, md, ctx.catalog, keep=True)


async def refresh_enum_values(ctx: Context) -> None:
    """Read every enum table's rows again before a changed document is committed, so this
    worker serves the values every other worker reads when it loads the new version
    (`Engine._load`); a table whose rows no longer make an enum becomes inconsistent
    (reported, not refused: the operation did not cause it)."""
    catalog = await read_enum_rows(ctx.conn, ctx.metadata, ctx.catalog)
    if catalog is not ctx.catalog:
        ctx.catalog = catalog
        ctx.ir = build_ir(ctx.metadata, catalog, ctx.ir)


async def set_is_enum(ctx: Context, body: QueryBody) -> Any:
    """`set_table_is_enum`: `{table, is_enum}`; 400 `not-exists` for a table not tracked,
    `invalid-configuration` for one that cannot be an enum (`svc.ir.enums`)."""
    md = set_table_is_enum(ctx.metadata, parse_args(SetTableIsEnum, body.args))
    await read_new_enums(ctx, md)
    ctx.commit(md)
    return SUCCESS


OPERATIONS = [
    Operation(
        name="set_table_is_enum",
        handler=set_is_enum,
        args=SetTableIsEnum,
        read_only=False,
        checks=STANDARD,
        aliases=pg("set_table_is_enum"),
    ),
]
"""The enum-table operations (merged into `svc.api.metadata.REGISTRY`)."""
