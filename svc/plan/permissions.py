"""Turn a resolved permission filter (`svc.ir.permissions`) into plan boolean expressions.

Session variables become `SessionRef` parameters, read per request, so one plan serves every
user of a role (design brief 3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svc.errors import SvcError
from svc.ir.model import Table
from svc.ir.permissions import is_session_variable
from svc.metadata.model import QualifiedName
from svc.plan.calls import computed_call
from svc.plan.nodes import (
    TRUE,
    And,
    BoolExp,
    ColCompare,
    Compare,
    Const,
    DWithin,
    Exists,
    FnCall,
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
        ref = SessionRef(value.lower(), optional=is_list)
        return Param(ref, f"{pg_type}[]" if is_list else pg_type)
    return Param(Const(value), pg_type, is_list)


def d_within(column: str | FnCall, pg_type: str, value: Any, make: Callable[..., Param]) -> DWithin:
    """`_st_d_within: {distance, from, use_spheroid?}`; `make(value, type, is_list=)` gives
    the parameters (constants, GraphQL variables or session variables)."""
    if not isinstance(value, dict) or "distance" not in value or "from" not in value:
        raise SvcError("validation-failed", "_st_d_within expects an object with distance and from")
    spheroid = value.get("use_spheroid")
    return DWithin(
        column,
        make(value["from"], pg_type, is_list=False),
        make(value["distance"], "double precision", is_list=False),
        make(spheroid, "boolean", is_list=False) if spheroid is not None else None,
    )


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
        elif isinstance(value, dict) and "_computed" in value:
            cf = table.computed_field_map[key]
            items.extend(_ops(computed_call(cf), cf.pg_type or "text", value["_computed"]))
        elif isinstance(value, dict) and "_computed_rel" in value:
            cf = table.computed_field_map[key]
            assert cf.returns_table is not None
            target = tables[cf.returns_table]
            where = filter_exp(tables, target, value["_computed_rel"])
            items.append(Exists(target.name, (), where, computed_call(cf)))
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
    return _ops(column, table.column_map[column].pg_type, ops)


def _ops(column: str | FnCall, pg_type: str, ops: dict[str, Any]) -> list[BoolExp]:
    out: list[BoolExp] = []
    for op, value in ops.items():
        if op == "_is_null":
            out.append(IsNull(column, not value))
        elif op.startswith("_c") and op not in ("_contains", "_contained_in"):
            assert isinstance(column, str)
            out.append(ColCompare(column, op, value))
        elif op in ("_has_keys_any", "_has_keys_all"):
            out.append(Compare(column, op, _value(value, "text", is_list=True)))
        elif op == "_st_d_within":
            out.append(d_within(column, pg_type, value, _value))
        elif op == "_has_key":
            out.append(Compare(column, op, _value(value, "text", is_list=False)))
        else:
            out.append(Compare(column, op, _value(value, pg_type, is_list=op in LIST_OPS)))
    return out
