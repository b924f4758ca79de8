"""A select permission's `query_root_fields` and `subscription_root_fields` (Hasura v2.8+),
checked as the reference parses them.

Hasura `server/src-lib/Hasura/RQL/Types/Permission.hs`: `SelPerm` reads both keys with
`.:?` as lists of `QueryRootFieldType` (`select`, `select_by_pk`, `select_aggregate`) and
`SubscriptionRootFieldType` (those and `select_stream`), generic aeson enums; an absent
key or `null` is `ARFAllowAllRootFields` (every root field), which its `ToJSON` leaves
out. So a value the reference cannot parse is 400 `parse-failed` with aeson's message at
its path, and `null` is dropped (it exports as the key's absence). What the kinds mean is
decided in `svc.ir.role_view` (`TableAccess.query_roots`, `.subscription_roots`); the
`select_aggregate`-needs-`allow_aggregations` rule is a permission inconsistency
(`svc.ir.permissions.select_permission`).
"""

from __future__ import annotations

import json
from typing import Any

from svc.errors import ErrorCode, SvcError

#: key → (the reference's type name in aeson messages, its tags in declaration order).
ROOT_FIELD_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "query_root_fields": (
        "Hasura.RQL.Types.Permission.QueryRootFieldType",
        ("select", "select_by_pk", "select_aggregate"),
    ),
    "subscription_root_fields": (
        "Hasura.RQL.Types.Permission.SubscriptionRootFieldType",
        ("select", "select_by_pk", "select_aggregate", "select_stream"),
    ),
}

_JSON_TYPES = ((bool, "Boolean"), (str, "String"), (int, "Number"), (float, "Number"))


def _json_type(value: Any) -> str:
    """aeson's name of a JSON value's type (`typeMismatch`)."""
    if value is None:
        return "Null"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "Object")


def check_root_fields(permission: Any, path: str) -> Any:
    """A select permission body (plain JSON) with its root field lists checked; `null`
    ones dropped (`permission` itself when there is nothing to drop or it is not an
    object). Raises 400 `parse-failed` at `<path>.<key>` when a list is not an array
    (`parsing [] failed, expected Array, but encountered String`) or at
    `<path>.<key>[i]` when an entry is not one of the kinds (`parsing
    Hasura.RQL.Types.Permission.QueryRootFieldType failed, expected one of the tags
    ["select","select_by_pk","select_aggregate"], but found tag "x"`, or `… expected
    String, but encountered Number`) — aeson's messages for the reference's types."""
    if not isinstance(permission, dict):
        return permission
    dropped = [key for key in ROOT_FIELD_KEYS if key in permission and permission[key] is None]
    for key, (type_name, tags) in ROOT_FIELD_KEYS.items():
        listed = permission.get(key)
        if listed is None:
            continue
        if not isinstance(listed, list):
            raise SvcError(
                ErrorCode.PARSE_FAILED,
                f"parsing [] failed, expected Array, but encountered {_json_type(listed)}",
                path=f"{path}.{key}",
            )
        for i, tag in enumerate(listed):
            if not isinstance(tag, str):
                problem = f"expected String, but encountered {_json_type(tag)}"
            elif tag not in tags:
                shown = json.dumps(list(tags), separators=(",", ":"))
                problem = f"expected one of the tags {shown}, but found tag {json.dumps(tag)}"
            else:
                continue
            raise SvcError(
                ErrorCode.PARSE_FAILED,
                f"parsing {type_name} failed, {problem}",
                path=f"{path}.{key}[{i}]",
            )
    if not dropped:
        return permission
    return {k: v for k, v in permission.items() if k not in dropped}


def check_table_entries(tables: Any, path: str) -> Any:
    """`tables` of a metadata document (plain JSON, at `path`) with every select
    permission's body passed through `check_root_fields` (at
    `<path>[i].select_permissions[j].permission`); anything that is not the expected
    shape is left for the document's own parser to report."""
    if not isinstance(tables, list):
        return tables
    out = []
    for i, entry in enumerate(tables):
        perms = entry.get("select_permissions") if isinstance(entry, dict) else None
        if isinstance(perms, list):
            checked = [
                {
                    **p,
                    "permission": check_root_fields(
                        p["permission"], f"{path}[{i}].select_permissions[{j}].permission"
                    ),
                }
                if isinstance(p, dict) and "permission" in p
                else p
                for j, p in enumerate(perms)
            ]
            entry = {**entry, "select_permissions": checked}
        out.append(entry)
    return out
