"""Argument presets of remote schema permissions at execution (Hasura's
`@preset(value: …)`): an argument a role's SDL presets is hidden from the role, and every
request of that role to the remote carries it with the preset value: a static value, or
a session variable's when the value is a string naming one (`x-svc-…`, any case).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphql import (
    ArgumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLSchema,
    InlineFragmentNode,
    NameNode,
    SelectionSetNode,
    ast_from_value,
    get_named_type,
)

from svc.errors import ErrorCode, SvcError
from svc.ir.role_view import remote_access
from svc.metadata.remote_schemas import RemoteSchema
from svc.schema.remote_merge import permissions_enabled
from svc.schema.remote_permissions import parse_role_sdl, presets
from svc.session_vars import is_session_variable, session_key

Presets = dict[tuple[str, str, str], Any]


def _value(value: Any, session: dict[str, str]) -> Any:
    if isinstance(value, str) and is_session_variable(value):
        found = session.get(session_key(value))
        if found is None:
            raise SvcError(ErrorCode.NOT_FOUND, f'missing session variable: "{session_key(value)}"')
        return found
    return value


class _Injector:
    def __init__(self, full: GraphQLSchema, found: Presets, session: dict[str, str]) -> None:
        self.full = full
        self.presets = found
        self.session = session

    def selection(self, sel: SelectionSetNode | None, parent: Any) -> SelectionSetNode | None:
        if sel is None or parent is None:
            return sel
        out: list[Any] = []
        for node in sel.selections:
            if isinstance(node, FieldNode):
                out.append(self.field(node, parent))
            elif isinstance(node, InlineFragmentNode):
                cond = node.type_condition
                inner = self.full.get_type(cond.name.value) if cond else parent
                out.append(
                    InlineFragmentNode(
                        type_condition=cond,
                        directives=node.directives,
                        selection_set=self.selection(node.selection_set, inner),
                    )
                )
            else:
                out.append(node)
        return SelectionSetNode(selections=tuple(out))

    def field(self, node: FieldNode, parent: Any) -> FieldNode:
        named = get_named_type(parent)
        fdef = getattr(named, "fields", {}).get(node.name.value)
        if fdef is None:
            return node
        args = list(node.arguments or ())
        for (tname, fname, aname), value in self.presets.items():
            if tname == named.name and fname == node.name.value and aname:
                literal = ast_from_value(_value(value, self.session), fdef.args[aname].type)
                if literal is not None:
                    args = [a for a in args if a.name.value != aname]
                    args.append(ArgumentNode(name=NameNode(value=aname), value=literal))
        return FieldNode(
            alias=node.alias,
            name=node.name,
            arguments=tuple(args),
            directives=node.directives,
            selection_set=self.selection(node.selection_set, get_named_type(fdef.type)),
        )


def apply_presets(
    entry: RemoteSchema,
    role: str,
    session: dict[str, str],
    nodes: list[FieldNode],
    fragments: dict[str, FragmentDefinitionNode],
    *,
    mutation: bool = False,
    parents: Mapping[str, tuple[str, ...]],
) -> tuple[list[FieldNode], dict[str, FragmentDefinitionNode]]:
    """Root fields `nodes` and the fragments with `role`'s presets on `entry` added (none
    when the role view gives the role the whole remote: admin, or permissions off);
    `parents`: the inherited roles (an inherited role's presets are its parents').
    Raises 400 `not-found` for a session variable the request lacks."""
    sdl = remote_access(entry, role, enforced=permissions_enabled(), parents=parents).sdl
    found = {} if sdl is None else presets(sdl)
    if sdl is None or not found:
        return nodes, fragments
    full, _ = parse_role_sdl(sdl, drop=False)
    inject = _Injector(full, found, session)
    root = full.mutation_type if mutation else full.query_type
    new_nodes = [inject.field(n, root) for n in nodes]
    new_fragments = {
        name: FragmentDefinitionNode(
            name=f.name,
            type_condition=f.type_condition,
            directives=f.directives,
            selection_set=inject.selection(
                f.selection_set, full.get_type(f.type_condition.name.value)
            )
            or f.selection_set,
            variable_definitions=f.variable_definitions,
        )
        for name, f in fragments.items()
    }
    return new_nodes, new_fragments
