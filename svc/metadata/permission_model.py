"""Table permissions as the metadata document stores them (Hasura v2 export, spec 2.6).

`<kind>_permissions: [{role, permission: {...}, comment?}]`; the body of each kind is a
frozen struct. Every optional key defaults to `UNSET`, so a document exports exactly the
keys it was given (`export_metadata` round-trips `replace_metadata`); what an absent key
means is decided where the rule is resolved (`svc.ir.permissions`), e.g. `columns` is
`"*"` for inserts and `[]` elsewhere. Keys the reference does not know are ignored, as its
parsers (aeson `withObject`) ignore them. `filter`, `check` and `set` stay JSON: they are
user expressions that `svc.ir.permissions` normalises once.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from svc.metadata.plain_names import check_plain_name
from svc.metadata.qualified import JSON

T = TypeVar("T")
D = TypeVar("D")

# `columns`: `"*"` (every column) or a list of names; another string is reported by the IR
# as it always was (`columns must be a list of column names or "*"`).
Columns = tuple[str, ...] | str
BoolExp = dict[str, Any]


def given(value: T | UnsetType, default: D) -> T | D:
    """`value`, or `default` when the key was absent (`UNSET`)."""
    return default if value is UNSET else value


class SelectRule(msgspec.Struct, frozen=True, omit_defaults=True):
    """`permission` of a select permission: visible columns and computed fields, row
    filter, row cap, aggregate access, which root fields the role gets (null: all)."""

    columns: Columns | UnsetType = UNSET
    computed_fields: tuple[str, ...] | UnsetType = UNSET
    filter: BoolExp | UnsetType | None = UNSET
    limit: int | UnsetType | None = UNSET
    allow_aggregations: bool | UnsetType = UNSET
    query_root_fields: tuple[str, ...] | UnsetType | None = UNSET
    subscription_root_fields: tuple[str, ...] | UnsetType | None = UNSET


class InsertRule(msgspec.Struct, frozen=True, omit_defaults=True):
    """`permission` of an insert permission: `check` on new rows, `set` presets (column →
    value or session variable), insertable columns (absent: all), `backend_only`."""

    check: BoolExp | UnsetType | None = UNSET
    set: JSON | UnsetType | None = UNSET
    columns: Columns | UnsetType = UNSET
    backend_only: bool | UnsetType = UNSET
    validate_input: JSON | UnsetType | None = UNSET


class UpdateRule(msgspec.Struct, frozen=True, omit_defaults=True):
    """`permission` of an update permission: rows it may update (`filter`), `check` after,
    presets, updatable columns (absent: none), `backend_only`."""

    columns: Columns | UnsetType = UNSET
    filter: BoolExp | UnsetType | None = UNSET
    check: BoolExp | UnsetType | None = UNSET
    set: JSON | UnsetType | None = UNSET
    backend_only: bool | UnsetType = UNSET
    validate_input: JSON | UnsetType | None = UNSET


class DeleteRule(msgspec.Struct, frozen=True, omit_defaults=True):
    """`permission` of a delete permission: the rows it may delete, `backend_only`."""

    filter: BoolExp | UnsetType | None = UNSET
    backend_only: bool | UnsetType = UNSET
    validate_input: JSON | UnsetType | None = UNSET


R = TypeVar("R", SelectRule, InsertRule, UpdateRule, DeleteRule)


class Permission(msgspec.Struct, Generic[R], frozen=True, omit_defaults=True):
    """One entry of a `<kind>_permissions` list: `{role, permission, comment?}`."""

    role: str
    permission: R
    comment: str | UnsetType | None = UNSET

    def __post_init__(self) -> None:
        check_plain_name(self.role, "role")


SelectPermission = Permission[SelectRule]
InsertPermission = Permission[InsertRule]
UpdatePermission = Permission[UpdateRule]
DeletePermission = Permission[DeleteRule]
AnyPermission = SelectPermission | InsertPermission | UpdatePermission | DeletePermission

PERMISSION_TYPES = ("insert", "select", "update", "delete")
RULES: dict[str, type[Any]] = {
    "insert": InsertRule,
    "select": SelectRule,
    "update": UpdateRule,
    "delete": DeleteRule,
}
