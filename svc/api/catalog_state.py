"""`get_catalog_state` and `set_catalog_state`: the state the Hasura CLI and console keep
in the catalog (`hdb_catalog.hdb_version.cli_state` / `console_state`).

The Hasura v2 CLI records applied migrations through these two operations
(`cli/internal/client/catalog_state.go`; `svc migrate` writes the same column directly,
`svc.catalog.migrations`), so a project can be migrated by either tool against either
server. Shapes as the reference's (`Hasura.RQL.DDL.Metadata` `runGetCatalogState` /
`runSetCatalogState`, `Hasura.RQL.Types.Metadata` `CatalogStateType`):

- `get_catalog_state` `{}` → `{"id": <the catalog's uuid>, "cli_state": {...},
  "console_state": {...}}`;
- `set_catalog_state` `{"type": "cli" | "console", "state": <any JSON>}` →
  `{"message": "success"}`; a `type` other than those two is 400 `parse-failed` at
  `$.args.type`.

Neither changes the metadata document, so neither rebuilds a schema.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from svc.api.op_context import SUCCESS, Context, QueryBody
from svc.api.op_registry import SYNC_ONLY, Operation
from svc.metadata.args import parse_args

GET_SQL = (
    "SELECT hasura_uuid::text, cli_state::text, console_state::text FROM hdb_catalog.hdb_version"
)
SET_CLI_SQL = "UPDATE hdb_catalog.hdb_version SET cli_state = $1::text::jsonb"
SET_CONSOLE_SQL = "UPDATE hdb_catalog.hdb_version SET console_state = $1::text::jsonb"


class GetCatalogState(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`get_catalog_state` takes no argument (`{}`)."""


class SetCatalogState(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`set_catalog_state` arguments: which state, and its new JSON value (kept whole)."""

    type: Literal["cli", "console"]
    state: Any


async def get_catalog_state(ctx: Context, body: QueryBody) -> Any:
    """The catalog's id and both states (each `{}` until first set)."""
    parse_args(GetCatalogState, body.args if body.args is not None else {})
    row = await ctx.conn.fetchrow(GET_SQL)
    return {
        "id": row[0],
        "cli_state": msgspec.json.decode(row[1]),
        "console_state": msgspec.json.decode(row[2]),
    }


async def set_catalog_state(ctx: Context, body: QueryBody) -> Any:
    """Replace the CLI's or the console's state with `state` (the reference stores it
    whole, whatever its shape)."""
    args = parse_args(SetCatalogState, body.args)
    sql = SET_CLI_SQL if args.type == "cli" else SET_CONSOLE_SQL
    await ctx.conn.execute(sql, msgspec.json.encode(args.state).decode())
    return SUCCESS


OPERATIONS = [
    Operation(
        name="get_catalog_state",
        handler=get_catalog_state,
        args=GetCatalogState,
        read_only=True,
        checks=SYNC_ONLY,  # a no-op: neither changes the document or the catalog
    ),
    Operation(
        name="set_catalog_state",
        handler=set_catalog_state,
        args=SetCatalogState,
        read_only=False,
        checks=SYNC_ONLY,  # a no-op: neither changes the document or the catalog
    ),
]
"""The catalog-state operations (merged into `svc.api.metadata.REGISTRY`)."""
