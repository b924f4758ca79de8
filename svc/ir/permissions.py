"""Resolve permission rules of the metadata against a table (Hasura's permission syntax).

A filter is a boolean expression keyed by Postgres column and relationship names (not
GraphQL names): `{id: X-Svc-User-Id}` is an implicit `_eq`; operators may be spelled `$eq`
or `_eq`; `_exists: {_table, _where}` tests another table; strings that start with
`x-svc-` (any case) are session variables. Normalised here once (operators with `_`,
implicit equality made explicit); `svc.plan.permissions` turns it into plan nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from svc.ir.operators import (
    COLUMN_COMPARISON_OPS,
    GENERAL_OPS,
    JSONB_OPS,
    LIST_OPS,
    POSTGIS_OPS,
    TEXT_OPS,
)
from svc.metadata.model import QualifiedName, qualify

COLUMN_OPS = frozenset(
    (
        *GENERAL_OPS,
        *LIST_OPS,
        "_ne",
        "_is_null",
        *TEXT_OPS,
        *JSONB_OPS,
        *COLUMN_COMPARISON_OPS,
        *POSTGIS_OPS,
    )
)


class PermissionError_(Exception):
    """A filter names something that does not exist (becomes an inconsistency)."""


@dataclass(frozen=True, slots=True)
class SelectPermission:
    """A role's select rule: visible columns, row filter, row cap, aggregate access."""

    role: str
    columns: tuple[str, ...]
    filter: Any
    limit: int | None
    allow_aggregations: bool
    computed_fields: tuple[str, ...]


def is_session_variable(value: Any) -> bool:
    """True for a string naming a session variable (`X-Svc-User-Id`)."""
    return isinstance(value, str) and value.lower().startswith("x-svc-")


def _op(key: str) -> str:
    return "_" + key[1:] if key.startswith("$") else key


class FilterResolver:
    """Normalises filters; `tables` maps names to (column names, relationship targets)."""

    def __init__(
        self, tables: dict[QualifiedName, tuple[frozenset[str], dict[str, QualifiedName]]]
    ) -> None:
        self.tables = tables

    def resolve(self, table: QualifiedName, exp: Any) -> dict[str, Any]:
        """The normalised form of `exp` over `table`; raises `PermissionError_`."""
        if exp is None:
            return {}
        if not isinstance(exp, dict):
            raise PermissionError_("a boolean expression must be an object")
        columns, rels = self.tables[table]
        out: dict[str, Any] = {}
        for raw_key, value in exp.items():
            key = _op(raw_key)
            if key in ("_and", "_or"):
                if not isinstance(value, list):
                    raise PermissionError_(f"{raw_key} expects a list")
                out[key] = [self.resolve(table, v) for v in value]
            elif key == "_not":
                out[key] = self.resolve(table, value)
            elif key == "_exists":
                other = qualify(value.get("_table") if isinstance(value, dict) else None)
                if other not in self.tables:
                    raise PermissionError_(f"table {other.quoted()} is not tracked")
                out[key] = {"_table": other, "_where": self.resolve(other, value.get("_where"))}
            elif raw_key in rels:
                out[raw_key] = {"_rel": self.resolve(rels[raw_key], value)}
            elif raw_key in columns:
                out[raw_key] = self._column(table, raw_key, value)
            else:
                raise PermissionError_(f'no such column exists : "{raw_key}"')
        return out

    def _column(self, table: QualifiedName, column: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            return {"_eq": value}
        ops: dict[str, Any] = {}
        columns, _ = self.tables[table]
        for raw_op, operand in value.items():
            op = _op(raw_op)
            if op not in COLUMN_OPS:
                raise PermissionError_(f"Unknown operator : {raw_op}")
            is_column_op = op.startswith("_c") and op not in ("_contains", "_contained_in")
            if is_column_op and operand not in columns:
                raise PermissionError_(f'no such column exists : "{operand}"')
            ops["_neq" if op == "_ne" else op] = operand
        return ops


def select_permission(
    role: str,
    raw: dict[str, Any],
    all_columns: tuple[str, ...],
    table: QualifiedName,
    resolver: FilterResolver,
) -> SelectPermission:
    """Resolve one `select_permissions` entry; raises `PermissionError_`."""
    cols = raw.get("columns", [])
    if cols == "*":
        columns = all_columns
    else:
        for c in cols:
            if c not in all_columns:
                raise PermissionError_(f'no such column exists : "{c}"')
        columns = tuple(c for c in all_columns if c in set(cols))
    limit = raw.get("limit")
    return SelectPermission(
        role=role,
        columns=columns,
        filter=resolver.resolve(table, raw.get("filter")),
        limit=int(limit) if limit is not None else None,
        allow_aggregations=bool(raw.get("allow_aggregations", False)),
        computed_fields=tuple(raw.get("computed_fields", ())),
    )
