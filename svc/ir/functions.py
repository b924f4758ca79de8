"""Resolve tracked functions and computed fields against the catalog (spec 2.5, 4.6).

Hasura's rules: a tracked function returns `SETOF <tracked table>` (or one row of it) and has
only IN arguments; it must not be overloaded; VOLATILE functions are exposed as mutations by
default and STABLE/IMMUTABLE ones only as queries. A computed field's function takes the
table's row (`table_argument`, default the first argument), optionally the session as JSON
(`session_argument`), and returns a base type (scalar field) or `SETOF <tracked table>`.
Failures raise `FunctionError`, which the IR builder records as an inconsistency.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from svc.catalog.introspect import DbFunction
from svc.ir.model import SCALAR_NAMES, ComputedField, Function, FunctionArg
from svc.metadata.model import QualifiedName, qualify
from svc.metadata.names import is_graphql_name

JSON_TYPES = frozenset({"json", "jsonb"})


class FunctionError(Exception):
    """A function or computed field that does not resolve; `code` is the error code."""

    def __init__(self, reason: str, code: str = "invalid-configuration") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


def lookup(index: dict[tuple[str, str], list[DbFunction]], name: QualifiedName) -> DbFunction:
    """The one function called `name`; raises `FunctionError` if absent or overloaded."""
    found = index.get((name.schema, name.name), [])
    if not found:
        raise FunctionError(f"no such function exists in postgres : {name.quoted()}", "not-exists")
    if len(found) > 1:
        raise FunctionError(
            f"function {name.quoted()} is overloaded. Overloaded functions are not supported"
        )
    fn = found[0]
    if any(m != "i" for m in fn.arg_modes):
        raise FunctionError(
            f"function {name.quoted()} has OUT or INOUT arguments; only IN arguments are supported"
        )
    return fn


def _arg_names(fn: DbFunction) -> list[str]:
    names = list(fn.arg_names[: len(fn.arg_types)])
    return names + [""] * (len(fn.arg_types) - len(names))


def _input_arg(fn: DbFunction, i: int, name: str) -> FunctionArg:
    first_default = len(fn.arg_types) - fn.defaults
    type_name = fn.arg_type_names[i]
    return FunctionArg(
        name=name,
        gql_name=name or f"arg_{i + 1}",
        pg_type=fn.arg_types[i],
        scalar=SCALAR_NAMES.get(type_name, type_name),
        has_default=i >= first_default,
    )


def _session_index(fn: DbFunction, session_argument: Any, names: list[str]) -> int | None:
    if session_argument is None:
        return None
    if session_argument not in names:
        raise FunctionError(f"{session_argument} is not an input argument of the function")
    i = names.index(session_argument)
    if fn.arg_type_names[i] not in JSON_TYPES:
        raise FunctionError(f'session argument "{session_argument}" must be of type json')
    return i


def resolve_function(
    entry: dict[str, Any],
    index: dict[tuple[str, str], list[DbFunction]],
    tracked: set[QualifiedName],
) -> Function:
    """A `functions` metadata entry (`{function, configuration, permissions}`) resolved."""
    name = qualify(entry.get("function"))
    fn = lookup(index, name)
    config = entry.get("configuration") or {}
    returns = QualifiedName(name=fn.return_type_name, schema=fn.return_type_schema)
    if fn.return_type_kind != "c" or returns not in tracked:
        raise FunctionError(
            f"the function {name.quoted()} cannot be tracked because the function does not "
            "return a SETOF table or a tracked table type",
            "not-supported",
        )
    exposed_as = config.get("exposed_as") or ("mutation" if fn.volatility == "v" else "query")
    if exposed_as == "mutation" and fn.volatility != "v":
        raise FunctionError(
            f"the function {name.quoted()} is STABLE or IMMUTABLE; "
            "it can only be exposed as a query"
        )
    names = _arg_names(fn)
    session = _session_index(fn, config.get("session_argument"), names)
    args: list[FunctionArg] = []
    order: list[tuple[str, str]] = []
    for i, arg_name in enumerate(names):
        if i == session:
            order.append(("session", ""))
            continue
        arg = _input_arg(fn, i, arg_name)
        args.append(arg)
        order.append(("input", arg.gql_name))
    gql_name = config.get("custom_name") or (
        name.name if name.schema == "public" else f"{name.schema}_{name.name}"
    )
    if not is_graphql_name(gql_name):
        raise FunctionError(f"function name {name.quoted()} is not a valid GraphQL name")
    roles = frozenset(str(p.get("role")) for p in entry.get("permissions") or [])
    return Function(
        name=name,
        gql_name=gql_name,
        returns=returns,
        returns_set=fn.returns_set,
        args=tuple(args),
        arg_order=tuple(order),
        exposed_as=exposed_as,
        roles=roles,
        comment=entry.get("comment") or fn.comment,
    )


def resolve_computed_field(
    entry: dict[str, Any],
    table: QualifiedName,
    index: dict[tuple[str, str], list[DbFunction]],
    tracked: Container[QualifiedName],
) -> ComputedField:
    """A table's `computed_fields` entry (`{name, definition, comment}`) resolved."""
    name = str(entry.get("name"))
    definition = entry.get("definition") or {}
    fname = qualify(definition.get("function"))
    fn = lookup(index, fname)
    names = _arg_names(fn)
    if not names:
        raise FunctionError(f"the function {fname.quoted()} has no input arguments")
    table_arg = definition.get("table_argument")
    row = names.index(table_arg) if table_arg in names else 0
    if table_arg is not None and table_arg not in names:
        raise FunctionError(
            f"{table_arg} is not an input argument of the function {fname.quoted()}"
        )
    session = _session_index(fn, definition.get("session_argument"), names)
    if row == session:
        row = 1 if session == 0 and len(names) > 1 else row
    row_type = QualifiedName(name=fn.arg_type_names[row], schema=fn.arg_type_schemas[row])
    if row_type != table:
        raise FunctionError(
            f"first argument of the function {fname.quoted()} is not COMPOSITE type of "
            f"table {table.quoted()}"
            if table_arg is None
            else f'the table argument "{table_arg}" is not of type {table.quoted()}'
        )
    args: list[FunctionArg] = []
    order: list[tuple[str, str]] = []
    for i, arg_name in enumerate(names):
        if i == row:
            order.append(("row", ""))
        elif i == session:
            order.append(("session", ""))
        else:
            arg = _input_arg(fn, i, arg_name)
            args.append(arg)
            order.append(("input", arg.gql_name))
    common: dict[str, Any] = {
        "name": name,
        "function": fname,
        "args": tuple(args),
        "arg_order": tuple(order),
        "comment": entry.get("comment") or fn.comment,
    }
    if fn.return_type_kind == "c":
        target = QualifiedName(name=fn.return_type_name, schema=fn.return_type_schema)
        if not fn.returns_set or target not in tracked:
            raise FunctionError(
                f"the function {fname.quoted()} must return a base type or SETOF a tracked table"
            )
        return ComputedField(returns_table=target, **common)
    if fn.returns_set:
        raise FunctionError(f"the function {fname.quoted()} returns a SETOF a base type")
    return ComputedField(
        scalar=SCALAR_NAMES.get(fn.return_type_name, fn.return_type_name),
        pg_type=fn.return_type,
        type_name=fn.return_type_name,
        **common,
    )
