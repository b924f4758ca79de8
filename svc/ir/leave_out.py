"""Which objects a role's schema is made of, and the IR and document without some of
them: what `svc.schema.role_schema` leaves out of a role's schema that cannot be built
with them. The objects are never changed: leaving out makes new `Table`s (`with_parts`),
a new `Ir` and a new document, used for that one role's schema only."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from svc.ir.model import Ir
from svc.ir.role_view import PERMISSION_KINDS, metadata_permissions
from svc.metadata.model import Metadata, QualifiedName, plain
from svc.metadata.remote_schemas import remote_schemas


@dataclass(frozen=True, slots=True)
class Candidate:
    """An object the role's schema is made of: `kind` is its inconsistency type, `table`
    its table (None for functions, actions, remote schemas), `name` the relationship,
    computed field, remote relationship, function, action or remote schema name, or
    `role.kind` of a permission."""

    kind: str
    table: QualifiedName | None
    name: str


def candidates(
    ir: Ir, md: Metadata, role: str, admin: bool, named: Iterable[str]
) -> list[Candidate]:
    """The objects `role`'s schema is made of (another role: its permissions, then
    relationships, computed fields, remote relationships, functions, actions, remote
    schemas; admin: no permissions, its tables last), those whose table or own name is
    one of `named` (or a prefix of one, `author` of `author_bool_exp`) first."""
    named = set(named)
    out: list[Candidate] = []
    for name, table in ir.tables.items():
        if not admin:
            for kind in PERMISSION_KINDS:
                if role in getattr(table, f"{kind}_permissions"):
                    out.append(Candidate(f"{kind}_permission", name, f"{role}.{kind}"))
        for rel in table.relationships:
            out.append(Candidate(f"{rel.kind}_relation", name, rel.name))
        for cf in table.computed_fields:
            out.append(Candidate("computed_field", name, cf.name))
    for entry in md.tables:
        if entry.table in ir.tables:
            for raw in entry.remote_relationships:
                if isinstance(raw, dict) and isinstance(raw.get("name"), str):
                    out.append(Candidate("remote_relationship", entry.table, raw["name"]))
    out.extend(Candidate("function", None, str(fn)) for fn in ir.functions)
    if ir.actions is not None:
        out.extend(Candidate("action", None, a) for a in ir.actions.actions)
    out.extend(Candidate("remote_schema", None, r.name) for r in remote_schemas(md))
    if admin:
        out.extend(Candidate("table", name, "") for name in ir.tables)

    def hinted(c: Candidate) -> bool:
        table = ir.tables.get(c.table) if c.table is not None else None
        words = set() if c.kind.endswith("_permission") else {c.name}
        if table is not None and table.gql_name:
            words.add(table.gql_name)
        return any(n == w or n.startswith(w + "_") for n in named for w in words if w)

    return sorted(out, key=lambda c: not hinted(c))  # stable: document order within


def definition(md: Metadata, c: Candidate) -> Any:
    """The object `c` as the document holds it (its table named in it)."""
    if c.kind == "function":
        return next((plain(f) for f in md.functions if str(f.name) == c.name), {"function": c.name})
    if c.kind == "action":
        return next((plain(a) for a in md.actions if a.name == c.name), {"name": c.name})
    if c.kind == "remote_schema":
        return next(
            (r for r in md.remote_schemas if isinstance(r, dict) and r.get("name") == c.name),
            {"name": c.name},
        )
    assert c.table is not None
    table = msgspec.to_builtins(c.table)
    entry = md.table(c.table)
    if entry is None or c.kind == "table":
        return table
    if c.kind.endswith("_permission"):
        role, kind = c.name.rsplit(".", 1)
        found = next((p for p in metadata_permissions(entry, kind) if p.role == role), None)
        return {"table": table, **(plain(found) if found is not None else {"role": role})}
    if c.kind.endswith("_relation"):
        rel = entry.relationship(c.name)
        return {"table": table, **(plain(rel) if rel is not None else {"name": c.name})}
    if c.kind == "computed_field":
        cf = next((f for f in entry.computed_fields if f.name == c.name), None)
        return {"table": table, **(plain(cf) if cf is not None else {"name": c.name})}
    raw = next(
        (r for r in entry.remote_relationships if isinstance(r, dict) and r.get("name") == c.name),
        {"name": c.name},
    )
    return {"table": table, **raw}


def leave_out(ir: Ir, md: Metadata, without: tuple[Candidate, ...]) -> tuple[Ir, Metadata]:
    """`ir` and `md` without the objects `without` (new objects; the given ones are never
    changed): what the role's schema is then built from."""
    if not without:
        return ir, md
    tables = dict(ir.tables)
    functions = dict(ir.functions)
    actions = ir.actions
    dropped_remotes: set[str] = set()
    dropped_rels: set[tuple[QualifiedName, str]] = set()
    edits: dict[QualifiedName, list[Callable[[Any], Any]]] = {}
    for c in without:
        if c.kind == "table" and c.table is not None:
            tables.pop(c.table, None)
        elif c.kind == "function":
            functions = {k: v for k, v in functions.items() if str(k) != c.name}
        elif c.kind == "action" and actions is not None:
            kept = {k: v for k, v in actions.actions.items() if k != c.name}
            actions = replace(actions, actions=kept)
        elif c.kind == "remote_schema":
            dropped_remotes.add(c.name)
        elif c.kind == "remote_relationship" and c.table is not None:
            dropped_rels.add((c.table, c.name))
        elif c.table is not None:
            edits.setdefault(c.table, []).append(_table_edit(c))
    for name, changes in edits.items():
        table = tables.get(name)
        if table is None:
            continue
        parts: dict[str, Any] = {}
        for change in changes:
            parts.update(change({**_parts(table), **parts}))
        tables[name] = table.with_parts(**parts)
    new_ir = Ir(
        tables=tables,
        inconsistencies=ir.inconsistencies,
        functions=functions,
        actions=actions,
    )
    if dropped_remotes or dropped_rels:
        md = _md_without(md, dropped_remotes, dropped_rels)
    return new_ir, md


def _parts(table: Any) -> dict[str, Any]:
    return {
        "relationships": table.relationships,
        "computed_fields": table.computed_fields,
        **{f"{k}_permissions": getattr(table, f"{k}_permissions") for k in PERMISSION_KINDS},
    }


def _table_edit(c: Candidate) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The change leaving `c` (a permission, relationship or computed field) out of its
    table: parts → changed parts."""
    if c.kind.endswith("_permission"):
        role, kind = c.name.rsplit(".", 1)
        key = f"{kind}_permissions"
        return lambda p: {key: {r: v for r, v in p[key].items() if r != role}}
    if c.kind.endswith("_relation"):
        return lambda p: {"relationships": tuple(r for r in p["relationships"] if r.name != c.name)}
    return lambda p: {"computed_fields": tuple(f for f in p["computed_fields"] if f.name != c.name)}


def _md_without(md: Metadata, remotes: set[str], rels: set[tuple[QualifiedName, str]]) -> Metadata:
    """`md` without the remote schemas named in `remotes` and the remote relationships
    `(table, name)` of `rels` (only the merge reads them)."""
    schemas = tuple(
        r for r in md.remote_schemas if not (isinstance(r, dict) and r.get("name") in remotes)
    )
    entries = []
    for entry in md.tables:
        if any(t == entry.table for t, _ in rels):
            kept = tuple(
                r
                for r in entry.remote_relationships
                if not (isinstance(r, dict) and (entry.table, r.get("name")) in rels)
            )
            entry = msgspec.structs.replace(entry, remote_relationships=kept)
        entries.append(entry)
    return msgspec.structs.replace(md, remote_schemas=schemas, tables=tuple(entries))
