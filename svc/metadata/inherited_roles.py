"""Inherited roles (Hasura's `inherited_roles`): a role made of other roles.

The document keeps `inherited_roles` as the reference writes it: a list of
`{role_name, role_set: [role, ...]}`. This module holds the pure parts: the operations'
arguments and transitions (`add_inherited_role`, `drop_inherited_role`; the reference's
`Hasura/RQL/DDL/InheritedRoles.hs`), the parents of each role, and the cycle check the
reference runs whenever it builds the schema cache (`orderRoles` in
`Hasura/RQL/DDL/Schema/Cache/Permission.hs`): a document whose roles form a cycle is
refused with 400 `cyclic-dependency` and `found cycle(s) in roles: [...]`.

What a role made of others may do is decided in `svc.ir.inherited` (read by
`svc.ir.role_view`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec.structs import replace

from svc.errors import ErrorCode, SvcError
from svc.metadata.plain_names import check_plain_name

if TYPE_CHECKING:  # the model imports `svc.metadata.unsupported`, which imports this
    from svc.metadata.model import Metadata


class AddInheritedRole(msgspec.Struct):
    """`add_inherited_role`: `{role_name, role_set}`."""

    role_name: str
    role_set: list[str]

    def __post_init__(self) -> None:
        check_plain_name(self.role_name, "role_name")
        for role in self.role_set:
            check_plain_name(role, "role_set")


class DropInheritedRole(msgspec.Struct):
    """`drop_inherited_role`: `{role_name}`."""

    role_name: str


def parents(md: Metadata) -> dict[str, tuple[str, ...]]:
    """Each inherited role of `md` → its role set, in document order."""
    out: dict[str, tuple[str, ...]] = {}
    for entry in md.inherited_roles:
        name = entry.get("role_name")
        if isinstance(name, str):
            out[name] = tuple(str(r) for r in entry.get("role_set") or ())
    return out


def add_inherited_role(md: Metadata, args: AddInheritedRole) -> Metadata:
    """`md` with the inherited role added (replacing one of the same name, as the
    reference's `OMap.insert`); 400 `invalid-params` when the role is in its own set,
    `cyclic-dependency` when it closes a cycle."""
    if args.role_name in args.role_set:
        raise SvcError(
            ErrorCode.INVALID_PARAMS,
            "an inherited role name cannot be in the role combination",
            path="$.args",
        )
    entry = {"role_name": args.role_name, "role_set": list(args.role_set)}
    kept = [r for r in md.inherited_roles if r.get("role_name") != args.role_name]
    replaced = len(kept) != len(md.inherited_roles)
    roles = (
        [entry if r.get("role_name") == args.role_name else r for r in md.inherited_roles]
        if replaced
        else [*md.inherited_roles, entry]
    )
    check_cycles(roles)
    return replace(md, inherited_roles=tuple(roles))


def drop_inherited_role(md: Metadata, args: DropInheritedRole) -> Metadata:
    """`md` without the inherited role; 400 `not-exists` when there is none
    (`"<name>" inherited role doesn't exist`, the reference's message)."""
    kept = tuple(r for r in md.inherited_roles if r.get("role_name") != args.role_name)
    if len(kept) == len(md.inherited_roles):
        raise SvcError(
            ErrorCode.NOT_EXISTS,
            f'"{args.role_name}" inherited role doesn\'t exist',
            path="$.args",
        )
    return replace(md, inherited_roles=kept)


def check_cycles(roles: Iterable[Mapping[str, Any]]) -> None:
    """Refuse roles that inherit from themselves through others: 400 `cyclic-dependency`,
    `found cycle(s) in roles: ["a","b","a"]` (each cycle as the reference prints it: a
    JSON list of the names from a role back to itself)."""
    graph: dict[str, tuple[str, ...]] = {}
    for r in roles:
        name = r.get("role_name")
        if isinstance(name, str):
            graph[name] = tuple(str(p) for p in r.get("role_set") or ())
    cycles = [_cycle(graph, component) for component in _cyclic_components(graph)]
    if cycles:
        shown = ", ".join(json.dumps(c, separators=(",", ":")) for c in cycles)
        raise SvcError(ErrorCode.CYCLIC_DEPENDENCY, f"found cycle(s) in roles: {shown}")


def _cyclic_components(graph: Mapping[str, tuple[str, ...]]) -> list[set[str]]:
    """The strongly connected components of `graph` that hold a cycle (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in graph:
                continue  # a role without parents closes no cycle
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(component)

    for node in graph:
        if node not in index:
            visit(node)
    return found


def _cycle(graph: Mapping[str, tuple[str, ...]], component: set[str]) -> list[str]:
    """One cycle through `component`: from its first role by name, following the first
    parent in the component each time, back to the start."""
    start = min(component)
    path, node, seen = [start], start, {start}
    while True:
        node = next(p for p in graph[node] if p in component)
        path.append(node)
        if node in seen:
            return path[path.index(node) :]
        seen.add(node)
