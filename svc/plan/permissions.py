"""Turn a resolved permission filter (`svc.ir.permissions`) into plan boolean expressions.

Session variables become `SessionRef` parameters, read per request, so one plan serves every
user of a role (design brief 3).
"""

from __future__ import annotations

from typing import Any

from svc.ir.model import Table
from svc.ir.permissions import is_session_variable
from svc.metadata.model import QualifiedName
from svc.plan.nodes import (
    TRUE,
    And,
    BoolExp,
    ColCompare,
    Compare,
    Const,
    Exists,
    IsNull,
    Not,
    Or,
    Param,
    SessionRef,
)

LIST_OPS = frozenset({"_in", "_nin", "_has_keys_any", "_has_keys_all"})


def _value(value: Any, pg_type: str, *, is_list: bool) -> Param:
    if is_session_variable(value):
        # A session variable holding a list is a Postgres array literal: cast it whole.
        return Param(SessionRef(value.lower()), f"{pg_type}[]" if is_list else pg_type)
    return Param(Const(value), pg_type, is_list)


def filter_exp(tables: dict[QualifiedName, Table], table: Table, exp: dict[str, Any]) -> BoolExp:
    """The plan form of a normalised permission filter over `table`."""
    items: list[BoolExp] = []
    for key, value in exp.items():
        if key == "_and":
            items.append(And(tuple(filter_exp(tables, table, v) for v in value)))
        elif key == "_or":
            items.append(Or(tuple(filter_exp(tables, table, v) for v in value)))
        elif key == "_not":
            items.append(Not(filter_exp(tables, table, value)))
        elif key == "_exists":
            other = tables[value["_table"]]
            items.append(Exists(other.name, (), filter_exp(tables, other, value["_where"])))
        elif isinstance(value, dict) and "_rel" in value:
            rel = table.relationship_map[key]
            target = tables[rel.target]
            items.append(
                Exists(target.name, rel.mapping, filter_exp(tables, target, value["_rel"]))
            )
        else:
            items.extend(_column(table, key, value))
    if len(items) == 1:
        return items[0]
    return And(tuple(items)) if items else TRUE


def _column(table: Table, column: str, ops: dict[str, Any]) -> list[BoolExp]:
    col = table.column_map[column]
    out: list[BoolExp] = []
    for op, value in ops.items():
        if op == "_is_null":
            out.append(IsNull(column, not value))
        elif op.startswith("_c") and op not in ("_contains", "_contained_in"):
            out.append(ColCompare(column, op, value))
        elif op in ("_has_keys_any", "_has_keys_all"):
            out.append(Compare(column, op, _value(value, "text", is_list=True)))
        elif op == "_has_key":
            out.append(Compare(column, op, _value(value, "text", is_list=False)))
        else:
            out.append(Compare(column, op, _value(value, col.pg_type, is_list=op in LIST_OPS)))
    return out
