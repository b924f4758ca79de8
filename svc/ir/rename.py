"""Follow renamed tables and columns through metadata, and find what depends on a column's
type (spec 4.2; Hasura's behaviour for `run_sql`).

Permission filters are walked with the IR built before the change, so a key is known to be
a relationship, a computed field or a column of the right table at every depth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from svc.ir.model import Ir
from svc.ir.permissions import is_session_variable
from svc.metadata.apply import clone
from svc.metadata.model import Metadata, QualifiedName, TableEntry, qualify

PERMISSION_KINDS = ("insert", "select", "update", "delete")
COLUMN_OPERAND_OPS = frozenset({"_ceq", "_cne", "_cneq", "_cgt", "_clt", "_cgte", "_clte"})
# Operators whose operand is not a value of the column's type.
UNTYPED_OPS = frozenset({"_is_null", "_has_key", "_has_keys_any", "_has_keys_all"})

OnColumn = Callable[[QualifiedName, str, Any], str]


def _op(key: str) -> str:
    return "_" + key[1:] if key.startswith("$") else key


def map_filter(exp: Any, table: QualifiedName, ir: Ir, on_column: OnColumn) -> Any:
    """A copy of the boolean expression `exp` over `table` in which every column key (and
    column-comparison operand) is replaced by `on_column(table, name, operand)`."""
    if not isinstance(exp, dict):
        return exp
    out: dict[str, Any] = {}
    known = ir.tables.get(table)
    for key, value in exp.items():
        op = _op(key)
        if op in ("_and", "_or") and isinstance(value, list):
            out[key] = [map_filter(v, table, ir, on_column) for v in value]
        elif op == "_not":
            out[key] = map_filter(value, table, ir, on_column)
        elif op == "_exists" and isinstance(value, dict):
            other = qualify(value.get("_table"))
            out[key] = {**value, "_where": map_filter(value.get("_where"), other, ir, on_column)}
        elif known is not None and key in known.relationship_map:
            target = known.relationship_map[key].target
            out[key] = map_filter(value, target, ir, on_column)
        elif known is not None and key in known.computed_field_map:
            returns = known.computed_field_map[key].returns_table
            out[key] = map_filter(value, returns, ir, on_column) if returns else value
        else:
            if isinstance(value, dict):
                value = {
                    k: on_column(table, v, None)
                    if _op(k) in COLUMN_OPERAND_OPS and isinstance(v, str)
                    else v
                    for k, v in value.items()
                }
            out[on_column(table, key, value)] = value
    return out


def _permissions(entry: TableEntry) -> list[tuple[str, dict[str, Any]]]:
    return [(kind, p) for kind in PERMISSION_KINDS for p in getattr(entry, f"{kind}_permissions")]


# -- renames --------------------------------------------------------------------------


def rename_columns(md: Metadata, ir: Ir, table: QualifiedName, names: dict[str, str]) -> Metadata:
    """A copy of `md` with the columns of `table` renamed (`{old: new}`) everywhere:
    permissions (columns, presets, filters of every table that reaches `table`),
    relationships on either side, and column customisation."""
    md = clone(md)

    def rename(t: QualifiedName, name: str, _: Any) -> str:
        return names.get(name, name) if t == table else name

    for entry in md.tables:
        for _, perm in _permissions(entry):
            body = perm.get("permission")
            if not isinstance(body, dict):
                continue
            for key in ("filter", "check"):
                if key in body:
                    body[key] = map_filter(body[key], entry.table, ir, rename)
            if entry.table == table:
                _rename_column_lists(body, names)
        _rename_relationship_columns(entry, table, names)
    own = md.table(table)
    if own is not None and own.configuration is not None:
        config = own.configuration
        config.custom_column_names = {
            names.get(k, k): v for k, v in config.custom_column_names.items()
        }
        config.column_config = {names.get(k, k): v for k, v in config.column_config.items()}
    return md


def _rename_column_lists(body: dict[str, Any], names: dict[str, str]) -> None:
    columns = body.get("columns")
    if isinstance(columns, list):
        body["columns"] = [names.get(c, c) for c in columns]
    preset = body.get("set")
    if isinstance(preset, dict):
        body["set"] = {names.get(k, k): v for k, v in preset.items()}


def _rename_relationship_columns(
    entry: TableEntry, table: QualifiedName, names: dict[str, str]
) -> None:
    def one(value: Any) -> Any:
        if isinstance(value, str):
            return names.get(value, value)
        if isinstance(value, list):
            return [names.get(v, v) if isinstance(v, str) else v for v in value]
        return value

    for rel in (*entry.object_relationships, *entry.array_relationships):
        using = rel.using
        manual = using.manual_configuration
        if manual is not msgspec.UNSET:
            mapping = manual.column_mapping
            if entry.table == table:
                mapping = {names.get(k, k): v for k, v in mapping.items()}
            if qualify(manual.remote_table) == table:
                mapping = {k: names.get(v, v) for k, v in mapping.items()}
            manual.column_mapping = mapping
            continue
        fk = using.foreign_key_constraint_on
        if isinstance(fk, dict):
            if qualify(fk.get("table")) == table:
                using.foreign_key_constraint_on = {
                    k: one(v) if k in ("column", "columns") else v for k, v in fk.items()
                }
        elif entry.table == table and fk is not msgspec.UNSET:
            using.foreign_key_constraint_on = one(fk)


def rename_table(md: Metadata, old: QualifiedName, new: QualifiedName) -> Metadata:
    """A copy of `md` in which table `old` is called `new` everywhere: its entry, the
    relationships that point at it, and `_exists` in permission filters."""
    md = clone(md)
    as_json = msgspec.to_builtins(new)

    def fix_exists(exp: Any) -> Any:
        if isinstance(exp, list):
            return [fix_exists(v) for v in exp]
        if not isinstance(exp, dict):
            return exp
        out = {k: fix_exists(v) for k, v in exp.items()}
        for key in ("_exists", "$exists"):
            inner = out.get(key)
            if isinstance(inner, dict) and qualify(inner.get("_table")) == old:
                out[key] = {**inner, "_table": as_json}
        return out

    for entry in md.tables:
        if entry.table == old:
            entry.table = new
        for _, perm in _permissions(entry):
            body = perm.get("permission")
            if isinstance(body, dict):
                for key in ("filter", "check"):
                    if key in body:
                        body[key] = fix_exists(body[key])
        for rel in (*entry.object_relationships, *entry.array_relationships):
            manual = rel.using.manual_configuration
            if manual is not msgspec.UNSET and qualify(manual.remote_table) == old:
                manual.remote_table = as_json
            fk = rel.using.foreign_key_constraint_on
            if isinstance(fk, dict) and qualify(fk.get("table")) == old:
                rel.using.foreign_key_constraint_on = {**fk, "table": as_json}
    return md


# -- type dependencies ----------------------------------------------------------------


def type_dependents(md: Metadata, ir: Ir, table: QualifiedName, column: str) -> list[str]:
    """Permissions that compare `table.column` with, or preset it to, a static value: those
    values were read as the column's type, so the type cannot change under them (Hasura).
    Names as the reference prints them: `permission article.user.select`."""
    found: list[str] = []
    for entry in md.tables:
        for kind, perm in _permissions(entry):
            body = perm.get("permission")
            if not isinstance(body, dict):
                continue
            hit = False

            def visit(t: QualifiedName, name: str, operand: Any) -> str:
                nonlocal hit
                if t == table and name == column and _static(operand):
                    hit = True
                return name

            for key in ("filter", "check"):
                map_filter(body.get(key), entry.table, ir, visit)
            preset = body.get("set")
            if entry.table == table and isinstance(preset, dict) and column in preset:
                hit = hit or not is_session_variable(preset[column])
            if hit:
                found.append(f"permission {entry.table}.{perm.get('role')}.{kind}")
    return sorted(found)


def _static(operand: Any) -> bool:
    """True when a column's operand holds a value of the column's own type."""
    if operand is None:
        return False
    if not isinstance(operand, dict):
        return not is_session_variable(operand)
    return any(
        _op(op) not in UNTYPED_OPS
        and _op(op) not in COLUMN_OPERAND_OPS
        and not is_session_variable(value)
        for op, value in operand.items()
    )
