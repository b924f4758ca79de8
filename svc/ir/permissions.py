"""Resolve permission rules of the metadata against a table (Hasura's permission syntax).

A filter is a boolean expression keyed by Postgres column and relationship names (not
GraphQL names): `{id: X-Svc-User-Id}` is an implicit `_eq`; operators may be spelled `$eq`
or `_eq`; `_exists: {_table, _where}` tests another table; strings that start with
`x-svc-` (any case) are session variables. Normalised here once (operators with `_`,
implicit equality made explicit); `svc.plan.permissions` turns it into plan nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET

from svc.errors import ErrorCode, SvcError
from svc.ir.input_validation import ValidateInput, validate_input
from svc.ir.operators import CAST_OPERATOR, OPERATORS, PERMISSION_CASTS, Operand
from svc.metadata.model import QualifiedName, qualify
from svc.metadata.permission_model import (
    DeleteRule,
    InsertRule,
    SelectRule,
    UpdateRule,
    given,
)


def unresolved(reason: str) -> SvcError:
    """A rule names something that does not exist: 400 `validation-failed` (the IR builder
    records it as the permission's inconsistency)."""
    return SvcError(ErrorCode.VALIDATION_FAILED, reason)


@dataclass(frozen=True, slots=True)
class SelectPermission:
    """A role's select rule: visible columns, row filter, row cap, aggregate access, and
    the root fields it may have: `query_root_fields` (kinds `select`, `select_by_pk`,
    `select_aggregate`) and `subscription_root_fields` (those and `select_stream`); None
    allows every kind (Hasura `Hasura.RQL.Types.Permission`, `AllowedRootFields`:
    `ARFAllowAllRootFields` when the key is absent or null). `cases`: see below."""

    role: str
    columns: tuple[str, ...]
    filter: Any
    limit: int | None
    allow_aggregations: bool
    computed_fields: tuple[str, ...]
    query_root_fields: frozenset[str] | None = None
    subscription_root_fields: frozenset[str] | None = None
    cases: Mapping[str, Any] = field(default_factory=dict)
    """An inherited role's column (or scalar computed field) → the normalised filter of
    the rows where its value is shown, `null` elsewhere (`svc.ir.inherited`); empty for
    a permission of the metadata."""


def _op(key: str) -> str:
    return "_" + key[1:] if key.startswith("$") else key


@dataclass(frozen=True, slots=True)
class InsertPermission:
    """A role's insert rule: `check` on new rows, `set` presets, insertable columns."""

    role: str
    check: Any
    set: dict[str, Any]
    columns: tuple[str, ...]
    backend_only: bool
    validate: ValidateInput | None = None  # `validate_input` (svc.ir.input_validation)


@dataclass(frozen=True, slots=True)
class UpdatePermission:
    """A role's update rule: rows it may update (`filter`), `check` after, presets, columns."""

    role: str
    filter: Any
    check: Any
    set: dict[str, Any]
    columns: tuple[str, ...]
    backend_only: bool
    validate: ValidateInput | None = None  # `validate_input` (svc.ir.input_validation)


@dataclass(frozen=True, slots=True)
class DeletePermission:
    """A role's delete rule: the rows it may delete."""

    role: str
    filter: Any
    backend_only: bool
    validate: ValidateInput | None = None  # `validate_input` (svc.ir.input_validation)


@dataclass(frozen=True, slots=True)
class TableShape:
    """What a filter over a table may name: columns, relationships (to their target) and
    computed fields (to their `SETOF` target, or None for scalar ones)."""

    columns: frozenset[str]
    relationships: dict[str, QualifiedName]
    computed_fields: dict[str, QualifiedName | None]
    # column -> internal type name (`jsonb`, `geometry`): what `_cast` may convert it to
    column_types: Mapping[str, str] = field(default_factory=dict)


class FilterResolver:
    """Normalises filters over the tables described by `tables`."""

    def __init__(self, tables: Mapping[QualifiedName, TableShape]) -> None:
        self.tables = tables

    def resolve(self, table: QualifiedName, exp: Any) -> dict[str, Any]:
        """The normalised form of `exp` over `table`; raises `SvcError` (`unresolved`)."""
        if exp is None:
            return {}
        if not isinstance(exp, dict):
            raise unresolved("a boolean expression must be an object")
        shape = self.tables[table]
        columns, rels = shape.columns, shape.relationships
        out: dict[str, Any] = {}
        for raw_key, value in exp.items():
            key = _op(raw_key)
            if key in ("_and", "_or"):
                if not isinstance(value, list):
                    raise unresolved(f"{raw_key} expects a list")
                out[key] = [self.resolve(table, v) for v in value]
            elif key == "_not":
                out[key] = self.resolve(table, value)
            elif key == "_exists":
                other = qualify(value.get("_table") if isinstance(value, dict) else None)
                if other not in self.tables:
                    raise unresolved(f"table {other.quoted()} is not tracked")
                out[key] = {"_table": other, "_where": self.resolve(other, value.get("_where"))}
            elif raw_key in rels:
                out[raw_key] = {"_rel": self.resolve(rels[raw_key], value)}
            elif raw_key in columns:
                out[raw_key] = self._column(table, raw_key, value)
            elif raw_key in shape.computed_fields:
                target = shape.computed_fields[raw_key]
                if target is None:
                    out[raw_key] = {"_computed": self._column(table, raw_key, value)}
                else:
                    out[raw_key] = {"_computed_rel": self.resolve(target, value)}
            else:
                raise unresolved(f'no such column exists : "{raw_key}"')
        return out

    def _column(self, table: QualifiedName, column: str, value: Any) -> dict[str, Any]:
        shape = self.tables[table]
        return _operations(value, shape.columns, shape.column_types.get(column, ""))


def _operations(value: Any, columns: frozenset[str], type_name: str) -> dict[str, Any]:
    """The normalised comparisons `value` makes on a value of internal type `type_name`
    (a non-object is an implicit `_eq`; `_cast: {<pg type>: <comparisons>}` nests, its
    target allowed by `PERMISSION_CASTS`, the reference's `checkValidCast`)."""
    if not isinstance(value, dict):
        return {"_eq": value}
    ops: dict[str, Any] = {}
    for raw_op, operand in value.items():
        if _op(raw_op) == CAST_OPERATOR:
            ops[CAST_OPERATOR] = _casts(operand, columns, type_name)
            continue
        op = OPERATORS.get(_op(raw_op))
        if op is None:
            raise unresolved(f"Unknown operator : {raw_op}")
        if op.operand is Operand.COLUMN and operand not in columns:
            raise unresolved(f'no such column exists : "{operand}"')
        ops[op.canonical or op.name] = operand
    return ops


def _casts(value: Any, columns: frozenset[str], type_name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise unresolved("_cast expects an object")
    allowed = PERMISSION_CASTS.get(type_name, {})
    out: dict[str, Any] = {}
    for target, comparisons in value.items():
        cast = allowed.get(target)
        if cast is None:
            raise unresolved(f'cannot cast column of type "{type_name}" to type "{target}"')
        out[target] = _operations(comparisons, columns, cast.type_name)
    return out


def _columns(cols: Any, all_columns: tuple[str, ...]) -> tuple[str, ...]:
    if cols == "*":
        return all_columns
    if not isinstance(cols, tuple | list):
        raise unresolved('columns must be a list of column names or "*"')
    for c in cols:
        if c not in all_columns:
            raise unresolved(f'no such column exists : "{c}"')
    return tuple(c for c in all_columns if c in set(cols))


def _presets(raw: Any, all_columns: tuple[str, ...]) -> dict[str, Any]:
    presets = raw or {}
    for c in presets:
        if c not in all_columns:
            raise unresolved(f'no such column exists : "{c}"')
    return dict(presets)


def insert_permission(
    role: str,
    rule: InsertRule,
    all_columns: tuple[str, ...],
    table: QualifiedName,
    resolver: FilterResolver,
) -> InsertPermission:
    """Resolve one `insert_permissions` rule (absent `columns`: all); raises `SvcError`
    (`unresolved`)."""
    return InsertPermission(
        role=role,
        check=resolver.resolve(table, given(rule.check, None)),
        set=_presets(given(rule.set, None), all_columns),
        columns=_columns(given(rule.columns, "*"), all_columns),
        backend_only=bool(given(rule.backend_only, False)),
        validate=validate_input(given(rule.validate_input, None)),
    )


def update_permission(
    role: str,
    rule: UpdateRule,
    all_columns: tuple[str, ...],
    table: QualifiedName,
    resolver: FilterResolver,
) -> UpdatePermission:
    """Resolve one `update_permissions` rule (absent `columns`: none); raises `SvcError`
    (`unresolved`)."""
    return UpdatePermission(
        role=role,
        filter=resolver.resolve(table, given(rule.filter, None)),
        check=resolver.resolve(table, given(rule.check, None)),
        set=_presets(given(rule.set, None), all_columns),
        columns=_columns(given(rule.columns, ()), all_columns),
        backend_only=bool(given(rule.backend_only, False)),
        validate=validate_input(given(rule.validate_input, None)),
    )


def delete_permission(
    role: str,
    rule: DeleteRule,
    all_columns: tuple[str, ...],
    table: QualifiedName,
    resolver: FilterResolver,
) -> DeletePermission:
    """Resolve one `delete_permissions` rule; raises `SvcError` (`unresolved`)."""
    return DeletePermission(
        role=role,
        filter=resolver.resolve(table, given(rule.filter, None)),
        backend_only=bool(given(rule.backend_only, False)),
        validate=validate_input(given(rule.validate_input, None)),
    )


def select_permission(
    role: str,
    rule: SelectRule,
    all_columns: tuple[str, ...],
    table: QualifiedName,
    resolver: FilterResolver,
) -> SelectPermission:
    """Resolve one `select_permissions` rule (absent `columns`: none); raises `SvcError`
    (`unresolved`), or 400 `invalid-configuration` when `query_root_fields` or
    `subscription_root_fields` lists `select_aggregate` without `allow_aggregations`
    (the reference's message, `Test.Auth.Authorization.DisableRootFields.SelectPermission.
    EnableAggSpec`; the kinds themselves are checked when the document is parsed,
    `svc.metadata.root_fields`)."""
    columns = _columns(given(rule.columns, ()), all_columns)
    computed = given(rule.computed_fields, ())
    for name in computed:
        if name not in resolver.tables[table].computed_fields:
            raise unresolved(f'computed field "{name}" does not exist')
    limit = given(rule.limit, None)
    allow_aggregations = bool(given(rule.allow_aggregations, False))
    query_roots = _allowed_roots(rule.query_root_fields)
    subscription_roots = _allowed_roots(rule.subscription_root_fields)
    if not allow_aggregations and any(
        roots is not None and "select_aggregate" in roots
        for roots in (query_roots, subscription_roots)
    ):
        raise SvcError(
            ErrorCode.INVALID_CONFIGURATION,
            'The "select_aggregate" root field can only be enabled in the query_root_fields '
            'or  the subscription_root_fields when "allow_aggregations" is set to true',
        )
    return SelectPermission(
        role=role,
        columns=columns,
        filter=resolver.resolve(table, given(rule.filter, None)),
        limit=limit,
        allow_aggregations=allow_aggregations,
        computed_fields=tuple(computed),
        query_root_fields=query_roots,
        subscription_root_fields=subscription_roots,
    )


def _allowed_roots(listed: Any) -> frozenset[str] | None:
    """The root field kinds a `query_root_fields`/`subscription_root_fields` value allows:
    None (every kind) when absent or null, else the set listed."""
    if listed is None or listed is UNSET:
        return None
    return frozenset(listed)
