"""What an inherited role may do: its parents' permissions combined (Hasura's rules).

An inherited role (`inherited_roles` of the document, `svc.metadata.inherited_roles`) has,
on a table where it has no select permission of its own, the combination of its
parents' select permissions (the reference's `combinedSelPermInfoToSelPermInfo`,
`Hasura/RQL/Types/Table.hs`, and the docs page "Inherited roles"):

- rows: those any parent's filter admits (the filters OR-ed);
- columns and scalar computed fields: those any parent grants. A column every parent
  grants (with no condition of its own) is plain; any other gets a *case filter*: the OR
  of the filters of the parents that grant it, so in a row no such parent admits, its
  value is `null` (`AnnColumnCaseBoolExp`; the planner wraps the column in
  `CASE WHEN <case filter> THEN <column> ELSE NULL END`). Such columns are nullable in
  the role's schema;
- `limit`: the largest of the parents' limits (a parent without one does not count, as
  the reference's `Maybe (Max Int)`); `allow_aggregations`: any parent's; root fields:
  all when any parent allows all, else the union;
- a parent that is itself inherited contributes its combined permission. Where that
  parent gives a column under a case filter, svc keeps the condition (the parent's filter
  AND its case filter) so no cell the parent would hide appears; the reference keeps only
  the parent's filter there.

Parents without a permission on the table are ignored (so is a parent with no permission
at all: it adds nothing); a table no parent may select is not the role's. Function and
action permissions: the role has one when it or any role it inherits from has one
(`mkBooleanPermissionMap`). Insert, update and delete permissions: the role's own, else
the one its parents that have one agree on; parents that differ make it none, reported as
the reference reports it (`write_conflicts`, type `inherited role permission
inconsistency`) until the role is given its own. Remote schema permissions are inherited
the same way (`inherited_remote`; the note "Roles Inheritance" of the reference's
`Hasura/RQL/DDL/Schema/Cache.hs`): parents' SDLs must be equal up to the order of
definitions, fields, arguments and values (`sdl_key`), a conflict hides the remote from
the role and is reported (`remote_conflicts`, entity `{"remote_schema": name}`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from graphql import DocumentNode, GraphQLError, parse, print_ast

from svc.errors import ErrorCode
from svc.ir.model import Inconsistency, Table
from svc.ir.permissions import SelectPermission
from svc.metadata.drop import ObjectRef

Parents = Mapping[str, tuple[str, ...]]
T = TypeVar("T")


def inherited_select(
    table: Table, role: str, parents: Parents, _seen: frozenset[str] = frozenset()
) -> SelectPermission | None:
    """`role`'s select permission on `table`: its own when it has one, else its parents'
    combined (None: neither). Cycles are refused before an IR is built; `_seen` guards."""
    own = table.select_permissions.get(role)
    if own is not None or role not in parents or role in _seen:
        return own
    seen = _seen | {role}
    found = [
        sp
        for sp in (inherited_select(table, p, parents, seen) for p in parents[role])
        if sp is not None
    ]
    return combine(role, found, [c.name for c in table.columns]) if found else None


def combine(role: str, perms: list[SelectPermission], column_order: list[str]) -> SelectPermission:
    """The select permission of `role` made of `perms` (at least one), as the module says."""
    columns = [c for c in column_order if any(c in sp.columns for sp in perms)]
    computed = list(dict.fromkeys(n for sp in perms for n in sp.computed_fields))
    cases: dict[str, Any] = {}
    for name in (*columns, *computed):
        grants = [sp for sp in perms if name in sp.columns or name in sp.computed_fields]
        conditional = [sp for sp in grants if name in sp.cases]
        if len(grants) == len(perms) and not conditional:
            continue  # every parent shows it in every row it admits
        cases[name] = any_of(_and(sp.filter, sp.cases.get(name)) for sp in grants)
    limits = [sp.limit for sp in perms if sp.limit is not None]
    return SelectPermission(
        role=role,
        columns=tuple(columns),
        filter=any_of(sp.filter for sp in perms),
        limit=max(limits) if limits else None,
        allow_aggregations=any(sp.allow_aggregations for sp in perms),
        computed_fields=tuple(computed),
        query_root_fields=_roots(sp.query_root_fields for sp in perms),
        subscription_root_fields=_roots(sp.subscription_root_fields for sp in perms),
        cases=cases,
    )


def any_of(filters: Iterable[Any]) -> dict[str, Any]:
    """The OR of normalised filters (`{}`: every row); one filter stays as it is."""
    items: list[dict[str, Any]] = []
    for f in filters:
        f = f or {}
        if not f:
            return {}
        if f not in items:
            items.append(f)
    return items[0] if len(items) == 1 else {"_or": items}


def _and(first: Any, second: Any) -> dict[str, Any]:
    if not second:
        return dict(first or {})
    if not first:
        return dict(second)
    return {"_and": [first, second]}


def _roots(listed: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    out: set[str] = set()
    for roots in listed:
        if roots is None:
            return None
        out |= roots
    return frozenset(out)


def granted(role: str, roles: Iterable[str], parents: Parents) -> bool:
    """Whether `role` or a role it inherits from (at any depth) is among `roles`."""
    wanted = set(roles)
    todo, seen = [role], set()
    while todo:
        r = todo.pop()
        if r in wanted:
            return True
        if r not in seen:
            seen.add(r)
            todo.extend(parents.get(r, ()))
    return False


# -- insert, update and delete ---------------------------------------------------------------
WRITE_KINDS = {"i": "insert", "u": "update", "d": "delete"}


def inherited_write(table: Table, kind: str, role: str, parents: Parents) -> tuple[Any, bool]:
    """`role`'s insert (`i`), update (`u`) or delete (`d`) permission on `table` and
    whether inheriting it conflicts: its own when it has one; else the one its parents
    that have one all have (the reference's `CheckPermission`: undefined parents are
    ignored, equal ones agree, different ones — or a conflicting parent — make it
    `(None, True)`, the role then has none until it is given its own)."""
    perm, conflict = agreed(_write_map(table, kind).get, _without_role, role, parents)
    if perm is not None and perm.role != role:
        perm = replace(perm, role=role)
    return perm, conflict


def _without_role(perm: Any) -> Any:
    return replace(perm, role="")


def agreed(
    own_of: Callable[[str], T | None],
    key: Callable[[Any], Any],
    role: str,
    parents: Parents,
    _seen: frozenset[str] = frozenset(),
) -> tuple[T | None, bool]:
    """The rule every inherited write and remote schema permission follows (the
    reference's `CheckPermission` semigroup): `role`'s own (`own_of`) when it has one;
    else the one the roles it inherits from that have one agree on (`key` equal), and
    whether they conflict. A conflicting parent conflicts too. `_seen` guards cycles
    (refused before an IR is built)."""
    own = own_of(role)
    if own is not None or role not in parents or role in _seen:
        return own, False
    found: list[T] = []
    for parent in parents[role]:
        perm, conflict = agreed(own_of, key, parent, parents, _seen | {role})
        if conflict:
            return None, True
        if perm is not None:
            found.append(perm)
    if not found:
        return None, False
    if any(key(p) != key(found[0]) for p in found[1:]):
        return None, True
    return found[0], False


def _write_map(table: Table, kind: str) -> Mapping[str, Any]:
    maps: dict[str, Mapping[str, Any]] = {
        "i": table.insert_permissions,
        "u": table.update_permissions,
        "d": table.delete_permissions,
    }
    return maps[kind]


@dataclass(frozen=True, slots=True)
class InheritedConflict(Inconsistency):
    """An inherited role's write permission its parents disagree on, listed as the
    reference lists it (`ConflictingInheritedPermission`: type `inherited role
    permission inconsistency`, `name`, `entity`; no `definition`)."""

    def to_json(self) -> dict[str, Any]:
        """The `get_inconsistent_metadata` entry."""
        return {
            "reason": self.reason,
            "name": self.relationship,
            "type": self.type,
            "entity": self.definition,
        }

    def target(self) -> ObjectRef:
        """Nothing to drop: the role gets the permission once it is given its own (or its
        parents agree), as the reference's informational inconsistency."""
        return ObjectRef(self.type)


def write_conflicts(tables: Mapping[Any, Table], parents: Parents) -> list[Inconsistency]:
    """One `InheritedConflict` per (inherited role, table, write kind) whose parents'
    permissions differ (the reference's message: `Could not inherit permission for the
    role 'r' for the entity: 'insert permission, table: t, source: 'default''`)."""
    out: list[Inconsistency] = []
    for role in parents:
        for table in tables.values():
            for kind, word in WRITE_KINDS.items():
                if not inherited_write(table, kind, role, parents)[1]:
                    continue
                if _write_map(table, kind).get(role) is not None:
                    continue
                if any(inherited_write(table, kind, p, parents)[1] for p in parents[role]):
                    continue  # reported at the parent
                out.append(
                    _conflict(
                        role,
                        f"{word} permission, table: {table.name.name}, source: 'default'",
                        {"permission_type": word, "source": "default", "table": table.name.name},
                        f"{word} {table.name}",
                        table.name,
                    )
                )
    return out


# -- remote schemas ---------------------------------------------------------------------------
def inherited_remote(
    sdls: Mapping[str, str], role: str, parents: Parents
) -> tuple[str | None, bool]:
    """`role`'s remote schema permission SDL given each role's own (`sdls`: role → SDL)
    and whether inheriting it conflicts (`agreed`, SDLs compared by `sdl_key`: the
    reference compares `IntrospectionResult`s, whose maps ignore order)."""
    return agreed(sdls.get, sdl_key, role, parents)


@functools.lru_cache(maxsize=512)
def sdl_key(sdl: str) -> str:
    """`sdl` printed with its definitions, fields, arguments, enum values, union members
    and interfaces sorted by name: two permissions with the same key grant the same thing
    (an SDL that does not parse is its own key; it was refused when added)."""
    try:
        doc = parse(sdl, no_location=True)
    except GraphQLError:
        return sdl
    definitions = tuple(_sorted_node(d) for d in _by_name(doc.definitions))
    return print_ast(DocumentNode(definitions=definitions))


_LISTS = ("fields", "arguments", "values", "types", "interfaces")


def _sorted_node(node: Any) -> Any:
    changes = {
        k: tuple(_sorted_node(n) for n in _by_name(getattr(node, k)))
        for k in _LISTS
        if getattr(node, k, None)
    }
    if not changes:
        return node
    copy = node.__copy__()
    for k, v in changes.items():
        setattr(copy, k, v)
    return copy


def _by_name(nodes: Any) -> list[Any]:
    def key(n: Any) -> tuple[str, str]:
        name = getattr(n, "name", None)
        return (n.kind, name.value if name is not None else "")

    return sorted(nodes, key=key)


def remote_conflicts(
    remotes: Iterable[tuple[str, Mapping[str, str]]], parents: Parents
) -> list[Inconsistency]:
    """One `InheritedConflict` per (inherited role, remote schema) whose parents'
    permissions differ; `remotes`: (remote schema name, role → SDL). The reference's
    message names the entity `remote schema: 'name'`."""
    out: list[Inconsistency] = []
    for name, sdls in remotes:
        for role in parents:
            if role in sdls or not inherited_remote(sdls, role, parents)[1]:
                continue
            if any(inherited_remote(sdls, p, parents)[1] for p in parents[role]):
                continue  # reported at the parent
            entity = f"remote schema: '{name}'"
            out.append(_conflict(role, entity, {"remote_schema": name}, f"remote_schema {name}"))
    return out


def _conflict(
    role: str, entity: str, definition: dict[str, Any], what: str, table: Any = None
) -> InheritedConflict:
    """The reference's `ConflictingInheritedPermission` for `role` on `entity` (its text
    in the reason, `definition` its JSON)."""
    return InheritedConflict(
        "inherited role permission inconsistency",
        definition,
        f"Could not inherit permission for the role '{role}' for the entity: '{entity}'",
        ErrorCode.UNEXPECTED,
        f"inherited_role {role} {what}",
        table,
        role,
    )
