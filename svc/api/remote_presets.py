"""Argument presets of remote schema permissions at execution (Hasura's
`@preset(value: …, static: …)`), following the reference's input parsers
(`Hasura/GraphQL/Schema/Remote.hs`: `argumentsParser`, `remoteInputObjectParser`,
`inputValueDefinitionParser`) and its `resolveRemoteVariable`
(`Hasura/GraphQL/Execute/Remote.hs`):

- a preset argument is hidden from the role and always sent;
- a preset field of an input object is hidden and sent whenever that input object is
  (a literal, an element of a list, or a variable's value, which is then written into the
  request as a literal); when the client leaves the argument out, nothing is sent (its
  default value, when the role's SDL gives one, is filled in instead);
- an input object whose every field is preset (`RolePermission.implicit`) is hidden with
  the arguments and fields of its type, and always sent;
- a string value naming a session variable (`x-svc-…`, any case; not with `static: true`)
  is the session's value, coerced by the scalar's name (`Int`, `Float`, `Boolean`;
  strings otherwise) or checked against the enum's values: 400 `not-found` when the
  session lacks it, 400 `coercion-error` when it does not fit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from graphql import (
    ArgumentNode,
    BooleanValueNode,
    EnumValueNode,
    FieldNode,
    FloatValueNode,
    FragmentDefinitionNode,
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    NameNode,
    NullValueNode,
    ObjectFieldNode,
    ObjectValueNode,
    SelectionSetNode,
    StringValueNode,
    ValueNode,
    VariableDefinitionNode,
    VariableNode,
    get_named_type,
)

from svc.errors import ErrorCode, SvcError
from svc.ir.role_view import remote_access
from svc.metadata.remote_schemas import RemoteSchema
from svc.schema.remote_merge import permissions_enabled
from svc.schema.remote_permissions import Preset, RolePermission, role_permission
from svc.session_vars import is_session_variable, session_key

_INT = re.compile(r"\s*-?\d+\s*")
_FLOAT = re.compile(r"\s*-?\d+(\.\d+)?([eE][-+]?\d+)?\s*")
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*")


def _session_value(name: str, session: Mapping[str, str]) -> str:
    key = session_key(name)
    found = session.get(key)
    if found is None:
        raise SvcError(ErrorCode.NOT_FOUND, f'"{key}" session variable expected, but not found')
    return found


def _coerced(text: str, scalar: str) -> ValueNode:
    """The reference's coercion of a session variable's value by the scalar's name."""
    if scalar == "Int":
        if not _INT.fullmatch(text):
            raise SvcError(
                ErrorCode.COERCION_ERROR, f'"{text}" cannot be coerced into an Int value'
            )
        return IntValueNode(value=str(int(text)))
    if scalar == "Float":
        if not _FLOAT.fullmatch(text):
            raise SvcError(
                ErrorCode.COERCION_ERROR, f'"{text}" cannot be coerced into a Float value'
            )
        return FloatValueNode(value=repr(float(text)))
    if scalar == "Boolean":
        if text not in ("true", "false"):
            raise SvcError(
                ErrorCode.COERCION_ERROR, f'"{text}" cannot be coerced into a Boolean value'
            )
        return BooleanValueNode(value=text == "true")
    return StringValueNode(value=text)  # String, ID and custom scalars


def _literal(value: Any, t: Any) -> ValueNode:
    """A variable's JSON value as a GraphQL literal of input type `t`."""
    if isinstance(t, GraphQLNonNull):
        t = t.of_type
    if value is None:
        return NullValueNode()
    if isinstance(t, GraphQLList):
        if isinstance(value, list):
            return ListValueNode(values=tuple(_literal(v, t.of_type) for v in value))
        return _literal(value, t.of_type)
    if isinstance(t, GraphQLInputObjectType) and isinstance(value, dict):
        return ObjectValueNode(
            fields=tuple(
                ObjectFieldNode(
                    name=NameNode(value=k),
                    value=_literal(v, t.fields[k].type if k in t.fields else None),
                )
                for k, v in value.items()
            )
        )
    if isinstance(t, GraphQLEnumType) and isinstance(value, str):
        return EnumValueNode(value=value)
    return _untyped(value)


def _untyped(value: Any) -> ValueNode:
    if value is None:
        return NullValueNode()
    if isinstance(value, bool):
        return BooleanValueNode(value=value)
    if isinstance(value, int):
        return IntValueNode(value=str(value))
    if isinstance(value, float):
        return FloatValueNode(value=repr(value))
    if isinstance(value, list):
        return ListValueNode(values=tuple(_untyped(v) for v in value))
    if isinstance(value, dict):
        return ObjectValueNode(
            fields=tuple(
                ObjectFieldNode(name=NameNode(value=str(k)), value=_untyped(v))
                for k, v in value.items()
            )
        )
    return StringValueNode(value=str(value))


def _field(name: str, value: ValueNode) -> ObjectFieldNode:
    return ObjectFieldNode(name=NameNode(value=name), value=value)


class _Injector:
    """One request's presets: the role's whole SDL schema (`RolePermission.full`), its
    presets, the session and the request's variables."""

    def __init__(
        self,
        perm: RolePermission,
        session: Mapping[str, str],
        variables: Mapping[str, Any],
        definitions: tuple[VariableDefinitionNode, ...],
    ) -> None:
        self.full: GraphQLSchema = perm.full
        self.perm = perm
        self.session = session
        self.variables = variables
        self.defaults = {d.variable.name.value: d.default_value for d in definitions}
        self._altered: dict[str, bool] = {}

    # -- preset values ------------------------------------------------------------------
    def preset(self, p: Preset, t: Any) -> ValueNode:
        """A preset's value for input type `t`, session variables read."""
        return self._resolve(p.value, t, p.static)

    def _resolve(self, value: ValueNode, t: Any, static: bool) -> ValueNode:
        if isinstance(t, GraphQLNonNull):
            t = t.of_type
        if isinstance(t, GraphQLList):
            if isinstance(value, ListValueNode):
                return ListValueNode(
                    values=tuple(self._resolve(v, t.of_type, static) for v in value.values)
                )
            return self._resolve(value, t.of_type, static)
        if isinstance(t, GraphQLInputObjectType) and isinstance(value, ObjectValueNode):
            return ObjectValueNode(
                fields=tuple(
                    _field(
                        f.name.value, self._resolve(f.value, t.fields[f.name.value].type, static)
                    )
                    if f.name.value in t.fields
                    else f
                    for f in value.fields
                )
            )
        if isinstance(value, StringValueNode) and is_session_variable(value.value):
            if isinstance(t, GraphQLEnumType):
                text = _session_value(value.value, self.session)
                if not _NAME.fullmatch(text):
                    raise SvcError(
                        ErrorCode.COERCION_ERROR, f'"{text}" is not a valid GraphQL name'
                    )
                if text not in t.values:
                    raise SvcError(
                        ErrorCode.COERCION_ERROR, f'"{text}" is not one of the valid enum values'
                    )
                return EnumValueNode(value=text)
            if not static and t is not None and not isinstance(t, GraphQLInputObjectType):
                return _coerced(_session_value(value.value, self.session), t.name)
        return value

    def implicit(self, t: GraphQLInputObjectType) -> ValueNode:
        """The value always sent for an input object none of whose fields the role gives."""
        fields = []
        for name, f in t.fields.items():
            p = self.perm.presets.get((t.name, name, ""))
            if p is not None:
                fields.append(_field(name, self.preset(p, f.type)))
            else:
                inner = get_named_type(f.type)
                if isinstance(inner, GraphQLInputObjectType):
                    fields.append(_field(name, self.implicit(inner)))
        return ObjectValueNode(fields=tuple(fields))

    # -- client values ------------------------------------------------------------------
    def altered(self, t: Any) -> bool:
        """Whether a value of input type `t` gets presets somewhere inside."""
        named = get_named_type(t)
        if not isinstance(named, GraphQLInputObjectType):
            return False
        known = self._altered.get(named.name)
        if known is not None:
            return known
        self._altered[named.name] = False  # a cycle adds nothing
        found = named.name in self.perm.implicit or any(
            (named.name, n, "") in self.perm.presets
            or get_named_type(f.type).name in self.perm.implicit
            or self.altered(f.type)
            for n, f in named.fields.items()
        )
        self._altered[named.name] = found
        return found

    def value(self, node: ValueNode, t: Any) -> ValueNode | None:
        """The client's value `node` of input type `t` with the presets inside it added
        (None: a variable the request does not give, so nothing is sent)."""
        if not self.altered(t):
            return node
        if isinstance(node, VariableNode):
            name = node.name.value
            if name in self.variables:
                return self.value(_literal(self.variables[name], t), t)
            default = self.defaults.get(name)
            return None if default is None else self.value(default, t)
        if isinstance(t, GraphQLNonNull):
            t = t.of_type
        if isinstance(node, NullValueNode):
            return node
        if isinstance(t, GraphQLList):
            if isinstance(node, ListValueNode):
                return ListValueNode(
                    values=tuple(self.value(v, t.of_type) or NullValueNode() for v in node.values)
                )
            return self.value(node, t.of_type)
        if isinstance(t, GraphQLInputObjectType) and isinstance(node, ObjectValueNode):
            return self.object(t, {f.name.value: f.value for f in node.fields})
        return node

    def object(self, t: GraphQLInputObjectType, given: Mapping[str, ValueNode]) -> ValueNode:
        """Input object `t` from the client's fields `given`, presets added."""
        fields = []
        for name, f in t.fields.items():
            p = self.perm.presets.get((t.name, name, ""))
            inner = get_named_type(f.type)
            if p is not None:
                fields.append(_field(name, self.preset(p, f.type)))
            elif isinstance(inner, GraphQLInputObjectType) and inner.name in self.perm.implicit:
                fields.append(_field(name, self.implicit(inner)))
            elif name in given:
                v = self.value(given[name], f.type)
                if v is not None:
                    fields.append(_field(name, v))
        return ObjectValueNode(fields=tuple(fields))

    # -- selections -----------------------------------------------------------------------
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
        """Field `node` of `parent` with its presets (see the module)."""
        named = get_named_type(parent)
        fdef = getattr(named, "fields", {}).get(node.name.value)
        if fdef is None:
            return node
        given = {a.name.value: a for a in node.arguments or ()}
        args: list[ArgumentNode] = []
        for a in node.arguments or ():
            adef = fdef.args.get(a.name.value)
            if adef is None or (named.name, node.name.value, a.name.value) in self.perm.presets:
                continue
            v = self.value(a.value, adef.type)
            if v is not None:
                args.append(ArgumentNode(name=a.name, value=v))
        for aname, adef in fdef.args.items():
            p = self.perm.presets.get((named.name, node.name.value, aname))
            inner = get_named_type(adef.type)
            value: ValueNode | None = None
            if p is not None:
                value = self.preset(p, adef.type)
            elif isinstance(inner, GraphQLInputObjectType) and inner.name in self.perm.implicit:
                value = self.implicit(inner)
            elif aname not in given and adef.ast_node is not None:
                default = adef.ast_node.default_value
                if default is not None and self.altered(adef.type):
                    value = self.value(default, adef.type)
            if value is not None:
                args.append(ArgumentNode(name=NameNode(value=aname), value=value))
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
    variables: Mapping[str, Any] | None = None,
    definitions: tuple[VariableDefinitionNode, ...] = (),
) -> tuple[list[FieldNode], dict[str, FragmentDefinitionNode]]:
    """Root fields `nodes` (in the remote's own names) and the fragments with `role`'s
    presets on `entry` added (none when the role view gives the role the whole remote:
    admin, or permissions off); `parents`: the inherited roles (an inherited role's
    presets are its parents'); `variables`/`definitions`: the request's, for a variable
    whose value gets presets (written into the request as a literal). Raises 400
    `not-found` for a session variable the request lacks, 400 `coercion-error` for a
    session value its type refuses."""
    sdl = remote_access(entry, role, enforced=permissions_enabled(), parents=parents).sdl
    perm = None if sdl is None else role_permission(sdl)
    if perm is None or not (perm.presets or perm.implicit):
        return nodes, fragments
    inject = _Injector(perm, session, variables or {}, definitions)
    full = perm.full
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
