"""Map a customized remote's names back before a request is sent to it.

The client selects customized names (`svc.schema.remote_custom`); the remote knows its
own. `Translation.nodes(...)` rewrites the selected root fields: every field gets its
original name with the client's response key as alias, type conditions and variable
types their original type names, and a namespace field is replaced by the fields inside
it. After the call, `forward(data)` renames the `__typename` values the remote answered
to their customized names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLSchema,
    InlineFragmentNode,
    ListTypeNode,
    NamedTypeNode,
    NameNode,
    NonNullTypeNode,
    SelectionSetNode,
    VariableDefinitionNode,
    get_named_type,
)

from svc.schema.remote_custom import Customization


@dataclass
class Translation:
    """One remote's customization, read against the role's merged `schema`; `typenames`
    collects the response keys of `__typename` selections."""

    schema: GraphQLSchema
    custom: Customization
    originals: dict[str, str]  # customized type name → original
    typenames: set[str] = field(default_factory=set)

    def original(self, name: str) -> str:
        """The original name of customized type `name`."""
        return self.originals.get(name, name)

    def selection(self, sel: SelectionSetNode | None, parent: Any) -> SelectionSetNode | None:
        """`sel` (selected on customized type `parent`) in the remote's names."""
        if sel is None:
            return None
        out: list[Any] = []
        for node in sel.selections:
            if isinstance(node, FieldNode):
                out.append(self.field(node, parent))
            elif isinstance(node, InlineFragmentNode):
                cond = node.type_condition
                inner_parent = self.schema.get_type(cond.name.value) if cond else parent
                out.append(
                    InlineFragmentNode(
                        type_condition=self.named(cond) if cond else None,
                        directives=node.directives,
                        selection_set=self.selection(node.selection_set, inner_parent),
                    )
                )
            else:
                out.append(node)
        return SelectionSetNode(selections=tuple(out))

    def field(self, node: FieldNode, parent: Any) -> FieldNode:
        """One field in the remote's names, aliased to the client's response key."""
        name = node.name.value
        key = node.alias.value if node.alias else name
        if name == "__typename":
            self.typenames.add(key)
            return node
        parent_name = get_named_type(parent).name if parent is not None else ""
        original = self.original_field(parent_name, name)
        fdef = getattr(get_named_type(parent), "fields", {}).get(name) if parent else None
        inner = get_named_type(fdef.type) if fdef is not None else None
        alias = node.alias if original == name else NameNode(value=key)
        return FieldNode(
            alias=alias,
            name=NameNode(value=original),
            arguments=node.arguments,
            directives=node.directives,
            selection_set=self.selection(node.selection_set, inner),
        )

    def original_field(self, parent: str, name: str) -> str:
        """The remote's own name of field `name` of customized type `parent`."""
        rule = self.custom.field_rules.get(self.original(parent))
        if rule is None:
            return name
        for orig, new in rule.mapping.items():
            if new == name:
                return orig
        if name.startswith(rule.prefix) and name.endswith(rule.suffix):
            end = len(name) - len(rule.suffix) if rule.suffix else len(name)
            return name[len(rule.prefix) : end]
        return name

    def named(self, node: NamedTypeNode) -> NamedTypeNode:
        """A type condition in the remote's names."""
        return NamedTypeNode(name=NameNode(value=self.original(node.name.value)))

    def var_type(self, t: Any) -> Any:
        """A variable's declared type in the remote's names."""
        if isinstance(t, NonNullTypeNode):
            return NonNullTypeNode(type=self.var_type(t.type))
        if isinstance(t, ListTypeNode):
            return ListTypeNode(type=self.var_type(t.type))
        return self.named(t)

    def variable(self, d: VariableDefinitionNode) -> VariableDefinitionNode:
        """A variable definition in the remote's names."""
        return VariableDefinitionNode(
            variable=d.variable,
            type=self.var_type(d.type),
            default_value=d.default_value,
            directives=d.directives,
        )

    def fragment(self, frag: FragmentDefinitionNode) -> FragmentDefinitionNode:
        """A fragment definition in the remote's names."""
        parent = self.schema.get_type(frag.type_condition.name.value)
        return FragmentDefinitionNode(
            name=frag.name,
            type_condition=self.named(frag.type_condition),
            directives=frag.directives,
            selection_set=self.selection(frag.selection_set, parent),
            variable_definitions=frag.variable_definitions,
        )

    def forward(self, value: Any) -> Any:
        """`value` with `__typename` answers renamed to customized type names."""
        if isinstance(value, list):
            return [self.forward(v) for v in value]
        if isinstance(value, dict):
            return {
                k: self.custom.type_name(v)
                if k in self.typenames and isinstance(v, str)
                else self.forward(v)
                for k, v in value.items()
            }
        return value


def translate_call(
    schema: GraphQLSchema,
    root: Any,
    custom: Customization,
    type_names: list[str],
    nodes: list[FieldNode],
    fragments: dict[str, FragmentDefinitionNode],
    variable_definitions: tuple[VariableDefinitionNode, ...],
) -> tuple[
    list[FieldNode],
    dict[str, FragmentDefinitionNode],
    tuple[VariableDefinitionNode, ...],
    Callable[[dict[str, Any]], dict[str, Any]],
]:
    """Root fields `nodes` (of the merged `root` type), the document's fragments and
    variable definitions in a customized remote's own names, and the function mapping
    the remote's `data` back to what the client selected (namespaces re-wrapped,
    `__typename` renamed). `type_names` are the remote's original type names."""
    tr = Translation(schema, custom, custom.original_types(type_names))
    sent: list[FieldNode] = []
    wraps: list[tuple[str, str, list[str]]] = []  # (key, holder type, inner keys)
    for node in nodes:
        fdef = root.fields.get(node.name.value)
        if fdef is not None and "svc_namespace" in fdef.extensions:
            holder = get_named_type(fdef.type)
            inner = tr.selection(node.selection_set, holder)
            keys = []
            for sub in inner.selections if inner else ():
                if isinstance(sub, FieldNode) and sub.name.value != "__typename":
                    sent.append(sub)
                    keys.append(sub.alias.value if sub.alias else sub.name.value)
                elif isinstance(sub, FieldNode):
                    keys.append("\0" + (sub.alias.value if sub.alias else sub.name.value))
            wraps.append((node.alias.value if node.alias else node.name.value, holder.name, keys))
        else:
            sent.append(tr.field(node, root))
    frags = {n: tr.fragment(f) for n, f in fragments.items()}
    defs = tuple(tr.variable(d) for d in variable_definitions)

    def back(data: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = tr.forward(data)
        for key, holder, keys in wraps:
            out[key] = {
                k[1:] if k.startswith("\0") else k: holder
                if k.startswith("\0")
                else out.pop(k, None)
                for k in keys
            }
        return out

    return sent, frags, defs, back
