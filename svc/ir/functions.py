"""Resolve tracked functions and computed fields against the catalog (spec 2.5, 4.6).

Hasura's rules: a tracked function returns `SETOF <tracked table>` (or one row of it) and has
only IN arguments; it must not be overloaded; VOLATILE functions are exposed as mutations by
default and STABLE/IMMUTABLE ones only as queries. A computed field's function takes the
table's row (`table_argument`, default the first argument), optionally the session as JSON
(`session_argument`), and returns a base type (scalar field) or `SETOF <tracked table>`.
Failures raise `SvcError` (the code and reason of the reference's inconsistency), which the
IR builder records as an inconsistency.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from msgspec import UNSET

from svc.catalog.introspect import DbFunction
from svc.errors import ErrorCode, SvcError
from svc.ir.model import SCALAR_NAMES, ComputedField, Function, FunctionArg
from svc.metadata.function_model import ComputedField as ComputedFieldEntry
from svc.metadata.function_model import FunctionConfiguration, TrackedFunction
from svc.metadata.model import DEFAULT_SOURCE, QualifiedName
from svc.metadata.names import is_graphql_name

JSON_TYPES = frozenset({"json", "jsonb"})


def unresolved(reason: str, code: ErrorCode = ErrorCode.INVALID_CONFIGURATION) -> SvcError:
    """The error of a function or computed field that does not resolve (400, `code`)."""
    return SvcError(code, reason)


def lookup(index: dict[tuple[str, str], list[DbFunction]], name: QualifiedName) -> DbFunction:
    """The one function called `name`; raises `SvcError` (`unresolved`) if absent, overloaded
    or with OUT arguments."""
    found = index.get((name.schema, name.name), [])
    if not found:
        raise unresolved(
            f"no such function exists in postgres : {name.quoted()}", ErrorCode.NOT_EXISTS
        )
    if len(found) > 1:
        raise unresolved(
            f"function {name.quoted()} is overloaded. Overloaded functions are not supported"
        )
    fn = found[0]
    if any(m != "i" for m in fn.arg_modes):
        raise unresolved(
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
        raise unresolved(f"{session_argument} is not an input argument of the function")
    i = names.index(session_argument)
    if fn.arg_type_names[i] not in JSON_TYPES:
        raise unresolved(f'session argument "{session_argument}" must be of type json')
    return i


def resolve_function(
    entry: TrackedFunction,
    index: dict[tuple[str, str], list[DbFunction]],
    tracked: set[QualifiedName],
) -> Function:
    """A `functions` metadata entry (`{function, configuration, permissions}`) resolved;
    raises `SvcError` (`unresolved`)."""
    name = entry.name
    fn = lookup(index, name)
    config = FunctionConfiguration() if entry.configuration is UNSET else entry.configuration
    returns = QualifiedName(name=fn.return_type_name, schema=fn.return_type_schema)
    if fn.return_type_kind != "c" or returns not in tracked:
        raise unresolved(
            f"the function {name.quoted()} cannot be tracked because the function does not "
            "return a SETOF table or a tracked table type",
            ErrorCode.NOT_SUPPORTED,
        )
    exposed_as = _given(config.exposed_as) or ("mutation" if fn.volatility == "v" else "query")
    if exposed_as == "mutation" and fn.volatility != "v":
        raise unresolved(
            f"the function {name.quoted()} is STABLE or IMMUTABLE; "
            "it can only be exposed as a query"
        )
    names = _arg_names(fn)
    session = _session_index(fn, _given(config.session_argument), names)
    args, order = _call_order(fn, names, None, session)
    gql_name = _given(config.custom_name) or (
        name.name if name.schema == "public" else f"{name.schema}_{name.name}"
    )
    if not is_graphql_name(gql_name):
        raise unresolved(f"function name {name.quoted()} is not a valid GraphQL name")
    roles = frozenset(entry.roles)
    return Function(
        name=name,
        gql_name=gql_name,
        returns=returns,
        returns_set=fn.returns_set,
        args=args,
        arg_order=order,
        exposed_as=exposed_as,
        roles=roles,
        comment=_given(entry.comment) or fn.comment,
        source=DEFAULT_SOURCE,  # tracked in the document's one source, as its `returns`
    )


def _given(value: Any) -> Any:
    """`value`, None for an absent key."""
    return None if value is UNSET else value


def _call_order(
    fn: DbFunction, names: list[str], row: int | None, session: int | None
) -> tuple[tuple[FunctionArg, ...], tuple[tuple[str, str], ...]]:
    """The GraphQL input arguments of `fn` and every argument in declaration order as
    `("row", "")`, `("session", "")` or `("input", gql_name)`."""
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
    return tuple(args), tuple(order)


def resolve_computed_field(
    entry: ComputedFieldEntry,
    table: QualifiedName,
    index: dict[tuple[str, str], list[DbFunction]],
    tracked: Container[QualifiedName],
) -> ComputedField:
    """A table's `computed_fields` entry (`{name, definition, comment}`) resolved; raises
    `SvcError` (`unresolved`)."""
    name = entry.name
    definition = entry.definition
    fname = definition.function_name
    fn = lookup(index, fname)
    names = _arg_names(fn)
    if not names:
        raise unresolved(f"the function {fname.quoted()} has no input arguments")
    table_arg = _given(definition.table_argument)
    row = names.index(table_arg) if table_arg in names else 0
    if table_arg is not None and table_arg not in names:
        raise unresolved(f"{table_arg} is not an input argument of the function {fname.quoted()}")
    session = _session_index(fn, _given(definition.session_argument), names)
    if row == session:
        row = 1 if session == 0 and len(names) > 1 else row
    row_type = QualifiedName(name=fn.arg_type_names[row], schema=fn.arg_type_schemas[row])
    if row_type != table:
        raise unresolved(
            f"first argument of the function {fname.quoted()} is not COMPOSITE type of "
            f"table {table.quoted()}"
            if table_arg is None
            else f'the table argument "{table_arg}" is not of type {table.quoted()}'
        )
    args, order = _call_order(fn, names, row, session)
    common: dict[str, Any] = {
        "name": name,
        "function": fname,
        "args": args,
        "arg_order": order,
        "comment": _given(entry.comment) or fn.comment,
    }
    if fn.return_type_kind == "c":
        target = QualifiedName(name=fn.return_type_name, schema=fn.return_type_schema)
        if not fn.returns_set or target not in tracked:
            raise unresolved(
                f"the function {fname.quoted()} must return a base type or SETOF a tracked table"
            )
        return ComputedField(returns_table=target, **common)
    if fn.returns_set:
        raise unresolved(f"the function {fname.quoted()} returns a SETOF a base type")
    return ComputedField(
        scalar=SCALAR_NAMES.get(fn.return_type_name, fn.return_type_name),
        pg_type=fn.return_type,
        type_name=fn.return_type_name,
        **common,
    )
