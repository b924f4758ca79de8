"""Arguments of the `/v1/query` metadata operations, decoded with msgspec.

Each operation's `args` is converted with `parse_args(Struct, args)`, which reports the
first bad value as `parse-failed` at its JSON path under `$.args` (Hasura's behaviour).
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from svc.metadata.model import (
    ManualConfiguration,
    RelUsing,
    TableConfiguration,
    convert_error,
)
from svc.metadata.plain_names import check_plain_name

T = TypeVar("T")


def parse_args(kind: type[T], args: Any, path: str = "$.args") -> T:
    """Convert `args` (plain JSON) to `kind`; raises `parse-failed` at the bad path."""
    try:
        return msgspec.convert(args, kind)
    except msgspec.ValidationError as exc:
        raise convert_error(exc, path) from None


class TrackTableV1(msgspec.Struct):
    """`track_table` version 1: `{schema, name}` (a bare string is accepted too)."""

    name: str
    schema: str = "public"
    is_enum: bool = False


class TrackTableV2(msgspec.Struct):
    """`track_table` version 2: `{table, configuration}`."""

    table: Any
    configuration: TableConfiguration | None = None
    is_enum: bool = False
    source: str = "default"


class UntrackTable(msgspec.Struct):
    """`untrack_table`: `{table, cascade}`."""

    table: Any
    cascade: bool = False
    source: str = "default"


class CreateRelationship(msgspec.Struct):
    """`create_object_relationship` / `create_array_relationship`."""

    table: Any
    name: str
    using: RelUsing
    comment: str | None = None
    source: str = "default"


class DropRelationship(msgspec.Struct):
    """`drop_relationship`: `{table, relationship, cascade}`."""

    table: Any
    relationship: str
    cascade: bool = False
    source: str = "default"


class SetTableCustomization(msgspec.Struct):
    """`set_table_customization`: `{table, configuration}`."""

    table: Any
    configuration: TableConfiguration = msgspec.field(default_factory=TableConfiguration)
    source: str = "default"


class RunSql(msgspec.Struct):
    """`run_sql` arguments (spec 4.2)."""

    sql: str
    cascade: bool = False
    check_metadata_consistency: bool | None = None
    read_only: bool = False
    source: str = "default"


__all__ = [
    "CreateRelationship",
    "DropRelationship",
    "ManualConfiguration",
    "RunSql",
    "SetTableCustomization",
    "TrackTableV1",
    "TrackTableV2",
    "UntrackTable",
    "parse_args",
]


class CreatePermission(msgspec.Struct):
    """`create_<type>_permission`: `{table, role, permission, comment}`."""

    table: Any
    role: str
    permission: dict[str, Any]
    comment: str | None = None
    source: str = "default"

    def __post_init__(self) -> None:
        check_plain_name(self.role, "role")


class DropPermission(msgspec.Struct):
    """`drop_<type>_permission`: `{table, role}`."""

    table: Any
    role: str
    source: str = "default"


class SetPermissionComment(msgspec.Struct):
    """`set_permission_comment`: `{table, role, type, comment}`."""

    table: Any
    role: str
    type: str
    comment: str | None = None
    source: str = "default"


class RenameRelationship(msgspec.Struct):
    """`rename_relationship`: `{table, name, new_name}`."""

    table: Any
    name: str
    new_name: str
    source: str = "default"


class AddComputedField(msgspec.Struct):
    """`add_computed_field`: `{table, name, definition: {function, table_argument,
    session_argument}, comment}`."""

    table: Any
    name: str
    definition: dict[str, Any]
    comment: str | None = None
    source: str = "default"


class DropComputedField(msgspec.Struct):
    """`drop_computed_field`: `{table, name, cascade}`."""

    table: Any
    name: str
    cascade: bool = False
    source: str = "default"


class SetRelationshipComment(msgspec.Struct):
    """`set_relationship_comment`: `{table, name, comment}` (comment null removes it)."""

    table: Any
    name: str
    comment: str | None = None
    source: str = "default"


class SetTableCustomFields(msgspec.Struct):
    """`set_table_custom_fields` (deprecated, version 2): `{table, custom_root_fields,
    custom_column_names}`."""

    table: Any
    custom_root_fields: dict[str, Any] = msgspec.field(default_factory=dict)
    custom_column_names: dict[str, str] = msgspec.field(default_factory=dict)
    source: str = "default"


class FunctionPermission(msgspec.Struct):
    """`pg_create_function_permission` / `pg_drop_function_permission`: `{function, role}`."""

    function: Any
    role: str
    source: str = "default"
