"""Remote schema permissions (Hasura's `add_remote_schema_permissions`): a role sees the
SDL subset its permission declares.

`role_permission(sdl)` is the permission as execution and the schema need it: the role's
schema (`schema`: `@preset` arguments and input fields hidden, and so is an input object
whose every field is preset, with the arguments and fields of its type: the reference's
`remoteInputObjectParser`, which always sends it), the whole SDL (`full`) and the presets
(`svc.api.remote_presets` fills them in). `role_introspection(sdl)` is the role's schema as
an introspection answer, which the merge customizes like the remote's own
(`svc.schema.remote_merge`). The SDL is checked against the remote by
`svc.schema.remote_permission_check`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphql import (
    BooleanValueNode,
    DirectiveNode,
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    InputObjectTypeDefinitionNode,
    InputValueDefinitionNode,
    InterfaceTypeDefinitionNode,
    NamedTypeNode,
    ObjectTypeDefinitionNode,
    ValueNode,
    build_ast_schema,
    introspection_from_schema,
    parse,
)

PRESET = "preset"
BUILTIN = ("ID", "Int", "Float", "Boolean", "String")  # the reference's `defaultScalars`


# -- the permission as the role's schema and execution read it ------------------------------
@dataclass(frozen=True)
class Preset:
    """One `@preset(value: …, static: …)`: the value as written (a string naming a session
    variable is read from the session at execution unless `static`)."""

    value: ValueNode
    static: bool = False


#: (type, field, argument) for a field argument; (input object, field, "") for an input field.
PresetKey = tuple[str, str, str]


@dataclass(frozen=True)
class RolePermission:
    """A permission's SDL built: `schema` as the role sees it, `full` with every field
    (what execution walks), `presets` by `PresetKey`, `implicit` the input objects whose
    every field is preset (or itself implicit): hidden, always sent whole."""

    schema: GraphQLSchema
    full: GraphQLSchema
    presets: dict[PresetKey, Preset]
    implicit: frozenset[str]


def directive_args(d: DirectiveNode) -> dict[str, ValueNode]:
    """A directive's arguments by name."""
    return {a.name.value: a.value for a in d.arguments or ()}


def _preset_of(node: InputValueDefinitionNode) -> Preset | None:
    for d in node.directives or ():
        if d.name.value == PRESET:
            args = directive_args(d)
            value = args.get("value")
            static = args.get("static")
            if value is None:
                return None
            return Preset(value, isinstance(static, BooleanValueNode) and static.value)
    return None


def _copy(node: Any, **changes: Any) -> Any:
    kw = {k: getattr(node, k) for k in node.keys if k != "loc"}
    kw.update(changes)
    return type(node)(**kw)


def base_name(t: Any) -> str:
    """The named type inside a type reference node (list and non-null unwrapped)."""
    while not isinstance(t, NamedTypeNode):
        t = t.type
    return str(t.name.value)


def _no_preset(node: Any) -> Any:
    return _copy(node, directives=tuple(d for d in node.directives or () if d.name.value != PRESET))


def _collect_presets(doc: DocumentNode) -> dict[PresetKey, Preset]:
    found: dict[PresetKey, Preset] = {}
    for d in doc.definitions:
        if isinstance(d, ObjectTypeDefinitionNode | InterfaceTypeDefinitionNode):
            for f in d.fields or ():
                for a in f.arguments or ():
                    p = _preset_of(a)
                    if p is not None:
                        found[(d.name.value, f.name.value, a.name.value)] = p
        elif isinstance(d, InputObjectTypeDefinitionNode):
            for i in d.fields or ():
                p = _preset_of(i)
                if p is not None:
                    found[(d.name.value, i.name.value, "")] = p
    return found


def _implicit(doc: DocumentNode, presets: dict[PresetKey, Preset]) -> frozenset[str]:
    """The input objects none of whose fields the role can give (each preset, or of such
    an input object's type): the reference builds no parser for them (an input object
    needs a field) and always sends their presets (`remoteInputObjectParser`)."""
    inputs = [d for d in doc.definitions if isinstance(d, InputObjectTypeDefinitionNode)]
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for d in inputs:
            name = d.name.value
            if name in found:
                continue
            if all(
                (name, i.name.value, "") in presets or base_name(i.type) in found
                for i in d.fields or ()
            ):
                found.add(name)
                changed = True
    return frozenset(found)


def _role_doc(
    doc: DocumentNode, presets: dict[PresetKey, Preset], implicit: frozenset[str]
) -> DocumentNode:
    """`doc` as the role sees it: preset arguments and input fields, and those of an
    implicit input object's type, left out with the implicit input objects."""
    defs: list[Any] = []
    for d in doc.definitions:
        if isinstance(d, ObjectTypeDefinitionNode | InterfaceTypeDefinitionNode):
            fields = []
            for f in d.fields or ():
                kept = tuple(
                    _no_preset(a)
                    for a in f.arguments or ()
                    if (d.name.value, f.name.value, a.name.value) not in presets
                    and base_name(a.type) not in implicit
                )
                fields.append(_copy(_no_preset(f), arguments=kept))
            d = _copy(d, fields=tuple(fields))
        elif isinstance(d, InputObjectTypeDefinitionNode):
            if d.name.value in implicit:
                continue
            kept = tuple(
                _no_preset(i)
                for i in d.fields or ()
                if (d.name.value, i.name.value, "") not in presets
                and base_name(i.type) not in implicit
            )
            d = _copy(d, fields=kept)
        defs.append(d)
    return DocumentNode(definitions=tuple(defs))


def _full_doc(doc: DocumentNode) -> DocumentNode:
    defs: list[Any] = []
    for d in doc.definitions:
        if isinstance(d, ObjectTypeDefinitionNode | InterfaceTypeDefinitionNode):
            fields = tuple(
                _copy(_no_preset(f), arguments=tuple(_no_preset(a) for a in f.arguments or ()))
                for f in d.fields or ()
            )
            d = _copy(d, fields=fields)
        elif isinstance(d, InputObjectTypeDefinitionNode):
            d = _copy(d, fields=tuple(_no_preset(i) for i in d.fields or ()))
        defs.append(d)
    return DocumentNode(definitions=tuple(defs))


@lru_cache(maxsize=512)
def role_permission(sdl: str) -> RolePermission | None:
    """A permission's `sdl` built (see `RolePermission`); None when it does not build (it
    was validated when added; a remote changed since is the remote's inconsistency)."""
    try:
        doc = parse(sdl, no_location=True)
        presets = _collect_presets(doc)
        implicit = _implicit(doc, presets)
        schema = build_ast_schema(_role_doc(doc, presets, implicit), assume_valid_sdl=True)
        full = build_ast_schema(_full_doc(doc), assume_valid_sdl=True)
    except (GraphQLError, TypeError):
        return None
    return RolePermission(schema, full, presets, implicit)


def role_schema(sdl: str) -> GraphQLSchema | None:
    """The subset of a remote a permission's `sdl` declares, as the role sees it (None:
    it does not build)."""
    perm = role_permission(sdl)
    return None if perm is None else perm.schema


@lru_cache(maxsize=512)
def role_introspection(sdl: str) -> dict[str, Any] | None:
    """The role's schema of a permission's `sdl` as an introspection answer (`{"__schema":
    …}`, in the remote's own names; None: it does not build)."""
    perm = role_permission(sdl)
    return None if perm is None else dict(introspection_from_schema(perm.schema))
