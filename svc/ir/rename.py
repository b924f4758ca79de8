"""Follow renamed tables and columns through metadata, and find what depends on a column's
type (spec 4.2; Hasura's behaviour for `run_sql`).

Permission filters are walked with the IR built before the change, so a key is known to be
a relationship, a computed field or a column of the right table at every depth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET
from msgspec.structs import replace

from svc.ir.model import Ir
from svc.ir.operators import is_column_operator, typed_operand
from svc.metadata.model import Metadata, QualifiedName, Relationship, RelUsing, TableEntry, qualify
from svc.metadata.permission_model import Permission
from svc.session_vars import is_session_variable

PERMISSION_KINDS = ("insert", "select", "update", "delete")

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
                    if is_column_operator(_op(k)) and isinstance(v, str)
                    else v
                    for k, v in value.items()
                }
            out[on_column(table, key, value)] = value
    return out


def _permissions(entry: TableEntry) -> list[tuple[str, Permission[Any]]]:
    return [(kind, p) for kind in PERMISSION_KINDS for p in getattr(entry, f"{kind}_permissions")]


def _rules(entry: TableEntry, edit: Callable[[Any], Any]) -> TableEntry:
    """`entry` with every permission's rule replaced by `edit(rule)`."""
    changes = {
        f"{kind}_permissions": tuple(
            replace(p, permission=edit(p.permission)) for p in getattr(entry, f"{kind}_permissions")
        )
        for kind in PERMISSION_KINDS
    }
    out: TableEntry = replace(entry, **changes)
    return out


def _map_expressions(rule: Any, fn: Callable[[Any], Any]) -> Any:
    """`rule` with `fn` applied to its `filter` and `check` (those it has and were given)."""
    changes = {
        key: fn(getattr(rule, key))
        for key in ("filter", "check")
        if key in rule.__struct_fields__ and getattr(rule, key) is not UNSET
    }
    return replace(rule, **changes) if changes else rule


# -- renames --------------------------------------------------------------------------


def rename_columns(md: Metadata, ir: Ir, table: QualifiedName, names: dict[str, str]) -> Metadata:
    """A copy of `md` with the columns of `table` renamed (`{old: new}`) everywhere:
    permissions (columns, presets, filters of every table that reaches `table`),
    relationships on either side, and column customisation."""

    def rename(t: QualifiedName, name: str, _: Any) -> str:
        return names.get(name, name) if t == table else name

    def entry_of(entry: TableEntry) -> TableEntry:
        def rule_of(rule: Any) -> Any:
            rule = _map_expressions(rule, lambda exp: map_filter(exp, entry.table, ir, rename))
            return _rename_column_lists(rule, names) if entry.table == table else rule

        entry = _rules(entry, rule_of)
        entry = _rename_relationship_columns(entry, table, names)
        config = entry.configuration
        if entry.table != table or config is None:
            return entry
        config = replace(
            config,
            custom_column_names={names.get(k, k): v for k, v in config.custom_column_names.items()},
            column_config={names.get(k, k): v for k, v in config.column_config.items()},
        )
        return replace(entry, configuration=config)

    return replace(md, tables=tuple(entry_of(e) for e in md.tables))


def _rename_column_lists(rule: Any, names: dict[str, str]) -> Any:
    changes: dict[str, Any] = {}
    columns = getattr(rule, "columns", UNSET)
    if isinstance(columns, tuple):
        changes["columns"] = tuple(names.get(c, c) for c in columns)
    preset = getattr(rule, "set", UNSET)
    if isinstance(preset, dict):
        changes["set"] = {names.get(k, k): v for k, v in preset.items()}
    return replace(rule, **changes) if changes else rule


def _rename_relationship_columns(
    entry: TableEntry, table: QualifiedName, names: dict[str, str]
) -> TableEntry:
    def one(value: Any) -> Any:
        if isinstance(value, str):
            return names.get(value, value)
        if isinstance(value, list):
            return [names.get(v, v) if isinstance(v, str) else v for v in value]
        return value

    def using_of(using: RelUsing) -> RelUsing:
        manual = using.manual_configuration
        if manual is not UNSET:
            mapping = manual.column_mapping
            if entry.table == table:
                mapping = {names.get(k, k): v for k, v in mapping.items()}
            if qualify(manual.remote_table) == table:
                mapping = {k: names.get(v, v) for k, v in mapping.items()}
            return replace(using, manual_configuration=replace(manual, column_mapping=mapping))
        fk = using.foreign_key_constraint_on
        if isinstance(fk, dict):
            if qualify(fk.get("table")) == table:
                fk = {k: one(v) if k in ("column", "columns") else v for k, v in fk.items()}
                return replace(using, foreign_key_constraint_on=fk)
        elif entry.table == table and fk is not UNSET:
            return replace(using, foreign_key_constraint_on=one(fk))
        return using

    return _relationships(entry, lambda rel: replace(rel, using=using_of(rel.using)))


def _relationships(entry: TableEntry, edit: Callable[[Relationship], Relationship]) -> TableEntry:
    """`entry` with every relationship replaced by `edit(relationship)`."""
    return replace(
        entry,
        object_relationships=tuple(edit(r) for r in entry.object_relationships),
        array_relationships=tuple(edit(r) for r in entry.array_relationships),
    )


def rename_table(md: Metadata, old: QualifiedName, new: QualifiedName) -> Metadata:
    """A copy of `md` in which table `old` is called `new` everywhere: its entry, the
    relationships that point at it, and `_exists` in permission filters."""
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

    def relationship_of(rel: Relationship) -> Relationship:
        using = rel.using
        manual = using.manual_configuration
        if manual is not UNSET and qualify(manual.remote_table) == old:
            using = replace(using, manual_configuration=replace(manual, remote_table=as_json))
        fk = using.foreign_key_constraint_on
        if isinstance(fk, dict) and qualify(fk.get("table")) == old:
            using = replace(using, foreign_key_constraint_on={**fk, "table": as_json})
        return rel if using is rel.using else replace(rel, using=using)

    def entry_of(entry: TableEntry) -> TableEntry:
        if entry.table == old:
            entry = replace(entry, table=new)
        entry = _rules(entry, lambda rule: _map_expressions(rule, fix_exists))
        return _relationships(entry, relationship_of)

    return replace(md, tables=tuple(entry_of(e) for e in md.tables))


# -- type dependencies ----------------------------------------------------------------


def type_dependents(md: Metadata, ir: Ir, table: QualifiedName, column: str) -> list[str]:
    """Permissions that compare `table.column` with, or preset it to, a static value: those
    values were read as the column's type, so the type cannot change under them (Hasura).
    Names as the reference prints them: `permission article.user.select`."""
    found: list[str] = []
    for entry in md.tables:
        for kind, perm in _permissions(entry):
            rule = perm.permission
            hit = False

            def visit(t: QualifiedName, name: str, operand: Any) -> str:
                nonlocal hit
                if t == table and name == column and _static(operand):
                    hit = True
                return name

            for key in ("filter", "check"):
                exp = getattr(rule, key, None)
                map_filter(None if exp is UNSET else exp, entry.table, ir, visit)
            preset = getattr(rule, "set", None)
            if entry.table == table and isinstance(preset, dict) and column in preset:
                hit = hit or not is_session_variable(preset[column])
            if hit:
                found.append(f"permission {entry.table}.{perm.role}.{kind}")
    return sorted(found)


def _static(operand: Any) -> bool:
    """True when a column's operand holds a value of the column's own type."""
    if operand is None:
        return False
    if not isinstance(operand, dict):
        return not is_session_variable(operand)
    return any(
        typed_operand(_op(op)) and not is_session_variable(value) for op, value in operand.items()
    )
