"""Turn a resolved permission filter (`svc.ir.permissions`) into plan boolean expressions.

Session variables become `SessionRef` parameters, read per request, so one plan serves every
user of a role (design brief 3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svc.errors import SvcError
from svc.ir.model import Table
from svc.ir.operators import CAST_OPERATOR, OPERATORS, PERMISSION_CASTS, Operand
from svc.metadata.model import QualifiedName
from svc.plan.calls import computed_call
from svc.plan.nodes import (
    TRUE,
    And,
    BoolExp,
    Cast,
    ColCompare,
    Compare,
    Compared,
    Const,
    DWithin,
    Exists,
    IsNull,
    Not,
    Or,
    Param,
    SessionRef,
)
from svc.session_vars import is_session_variable

# Makes an operand's parameter: `make(value, pg_type, is_list=)`.
MakeParam = Callable[..., Param]


def _value(value: Any, pg_type: str, *, is_list: bool) -> Param:
    if is_session_variable(value):
        # A session variable holding a list is a Postgres array literal: cast it whole.
        ref = SessionRef(value.lower(), optional=is_list)
        return Param(ref, f"{pg_type}[]" if is_list else pg_type)
    return Param(Const(value), pg_type, is_list)


def d_within(column: Compared, pg_type: str, value: Any, make: MakeParam) -> DWithin:
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


def _ops(column: Compared, pg_type: str, ops: dict[str, Any]) -> list[BoolExp]:
    out: list[BoolExp] = []
    for op, value in ops.items():
        if op != CAST_OPERATOR:
            out.append(operator_exp(column, pg_type, op, value, _value))
            continue
        targets = PERMISSION_CASTS[pg_type.rsplit(".", 1)[-1]]
        for name, inner in value.items():  # targets checked by `svc.ir.permissions`
            target = targets[name].pg_type
            out.extend(_ops(Cast(column, target), target, inner))
    return out


def operator_exp(column: Compared, pg_type: str, name: str, value: Any, make: MakeParam) -> BoolExp:
    """The plan node of operator `name` (a key of `svc.ir.operators.OPERATORS`) applied to
    `column` (of Postgres type `pg_type`) with operand `value`, read as the table's operand
    kind says: `_is_null` a concrete boolean, `_st_d_within` a concrete object, a column
    comparison the other column's name; every other operand becomes a parameter made by
    `make` (its type: the column's, or `text` for jsonb key operators). Raises `SvcError`
    `validation-failed` for a malformed `_st_d_within` object."""
    kind = OPERATORS[name].operand
    if kind is Operand.BOOLEAN:
        return IsNull(column, not value)
    if kind is Operand.COLUMN:
        assert isinstance(column, str)
        return ColCompare(column, name, value)
    if kind is Operand.D_WITHIN:
        return d_within(column, pg_type, value, make)
    is_text = kind is Operand.TEXT or kind is Operand.TEXT_LIST
    is_list = kind is Operand.LIST or kind is Operand.TEXT_LIST
    return Compare(column, name, make(value, "text" if is_text else pg_type, is_list=is_list))
