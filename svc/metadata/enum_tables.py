"""`set_table_is_enum`: switch a tracked table to or from an enum table (Hasura's
`is_enum`; `Hasura/RQL/DDL/Schema/Table.hs`, `runSetExistingTableIsEnumQ`).

Whether the table can be an enum is decided when the IR is built against the catalog and
its rows (`svc.ir.enums`); this transition only records the flag.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec.structs import replace

from svc.metadata.apply import replace_table, tracked_entry
from svc.metadata.model import Metadata


class SetTableIsEnum(msgspec.Struct):
    """`set_table_is_enum` / `pg_set_table_is_enum`: `{table, is_enum, source}`."""

    table: Any
    is_enum: bool
    source: str = "default"


def set_table_is_enum(md: Metadata, args: SetTableIsEnum) -> Metadata:
    """`md` with the table's `is_enum` set; 400 `not-exists` at `$.args.table` when the
    table is not tracked, `parse-failed` for a bad name."""
    table, _ = tracked_entry(md, args.table)
    return replace_table(md, table, lambda e: replace(e, is_enum=args.is_enum))
