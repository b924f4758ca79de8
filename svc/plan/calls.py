"""Calls of SQL functions: tracked functions and computed fields (spec 4.6)."""

from __future__ import annotations

from typing import Any

from svc.errors import SvcError
from svc.ir.model import ComputedField, FunctionArg
from svc.metadata.model import QualifiedName
from svc.plan.nodes import Const, FnCall, Param, RowArg, SessionJson, VarRef


def build_call(
    function: QualifiedName,
    defs: tuple[FunctionArg, ...],
    order: tuple[tuple[str, str], ...],
    given: dict[str, Any],
) -> FnCall:
    """A call of `function` with the row, the session JSON and the `given` input arguments
    (`{gql_name: value or VarRef}`).

    Arguments go positionally until one is left to its default, the rest by name. Raises
    400 `validation-failed` when an argument without a default is missing.
    """
    by_gql = {a.gql_name: a for a in defs}
    out: list[tuple[str, Param | RowArg]] = []
    named = False
    for kind, gql_name in order:
        if kind == "row":
            out.append(("", RowArg()))
            continue
        if kind == "session":
            out.append(("", Param(SessionJson(), "json")))
            continue
        arg = by_gql[gql_name]
        if gql_name not in given:
            if not arg.has_default:
                raise SvcError(
                    "validation-failed",
                    f'missing argument "{gql_name}" of function {function.quoted()}',
                    path="$.selectionSet.args",
                )
            named = True
            continue
        if named and not arg.name:
            raise SvcError(
                "not-supported",
                f"function {function.quoted()}: an unnamed argument follows a defaulted one",
            )
        value = given[gql_name]
        source = value if isinstance(value, VarRef) else Const(value)
        out.append((arg.name if named else "", Param(source, arg.pg_type)))
    return FnCall(function, tuple(out))


def computed_call(cf: ComputedField, given: dict[str, Any] | None = None) -> FnCall:
    """The call of a computed field's function on the current row."""
    return build_call(cf.function, cf.args, cf.arg_order, given or {})
