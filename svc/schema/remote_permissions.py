"""Remote schema permissions (Hasura's `add_remote_schema_permissions`): a role
sees the SDL subset its permission declares.

`role_schema(sdl)` is that subset as a graphql-core schema, for the SDL the role view
gives a role (`svc.ir.role_view.remote_access`). Arguments carrying `@preset(value: …)`
are hidden from the role: execution sends their preset instead (`presets`). `check_subset(sdl,
remote)` validates a permission's SDL against the remote's schema when it is added
(400 `validation-failed`, the reference's code).
"""

from __future__ import annotations

from typing import Any

from graphql import (
    ArgumentNode,
    DirectiveNode,
    DocumentNode,
    GraphQLEnumType,
    GraphQLError,
    GraphQLInputObjectType,
    GraphQLNonNull,
    GraphQLSchema,
    GraphQLUnionType,
    InputObjectTypeDefinitionNode,
    InputValueDefinitionNode,
    InterfaceTypeDefinitionNode,
    ObjectTypeDefinitionNode,
    Undefined,
    build_ast_schema,
    build_client_schema,
    coerce_input_value,
    is_input_object_type,
    is_interface_type,
    is_object_type,
    parse,
    value_from_ast_untyped,
)

from svc.errors import ErrorCode, SvcError
from svc.session_vars import is_session_variable

PRESET = "preset"


def _without_presets(
    doc: DocumentNode, *, drop: bool = True
) -> tuple[DocumentNode, dict[tuple[str, str, str], Any]]:
    """`doc` without `@preset` directives on arguments and input fields (with `drop`,
    preset arguments removed too: the role does not see them), and the presets by
    (type, field, argument; "" for an input field)."""
    presets: dict[tuple[str, str, str], Any] = {}
    defs = []
    for d in doc.definitions:
        if isinstance(d, ObjectTypeDefinitionNode | InterfaceTypeDefinitionNode) and d.fields:
            fields = []
            for f in d.fields:
                kept = []
                for a in f.arguments or ():
                    value = _preset(a)
                    if value is not _NONE:
                        presets[(d.name.value, f.name.value, a.name.value)] = value
                    if value is _NONE or not drop:
                        kept.append(_no_directives(a))
                fields.append(_copy(f, arguments=tuple(kept)))
            d = _copy(d, fields=tuple(fields))
        elif isinstance(d, InputObjectTypeDefinitionNode) and d.fields:
            for input_field in d.fields:
                value = _preset(input_field)
                if value is not _NONE:
                    presets[(d.name.value, input_field.name.value, "")] = value
            d = _copy(d, fields=tuple(_no_directives(i) for i in d.fields))
        defs.append(d)
    return DocumentNode(definitions=tuple(defs)), presets


_NONE = object()


def _copy(node: Any, **changes: Any) -> Any:
    kw = {k: getattr(node, k) for k in node.keys if k != "loc"}
    kw.update(changes)
    return type(node)(**kw)


def _no_directives(arg: InputValueDefinitionNode) -> InputValueDefinitionNode:
    kept = tuple(d for d in arg.directives or () if d.name.value != PRESET)
    result: InputValueDefinitionNode = _copy(arg, directives=kept)
    return result


def _preset(arg: InputValueDefinitionNode) -> Any:
    for d in arg.directives or ():
        if d.name.value == PRESET:
            return _preset_value(d)
    return _NONE


def _preset_value(d: DirectiveNode) -> Any:
    value: ArgumentNode | None = next(
        (a for a in d.arguments or () if a.name.value == "value"), None
    )
    return None if value is None else value_from_ast_untyped(value.value)


def parse_role_sdl(
    sdl: str, *, drop: bool = True
) -> tuple[GraphQLSchema, dict[tuple[str, str, str], Any]]:
    """The schema of a permission's SDL (preset arguments removed with `drop`) and its
    presets; raises `GraphQLError`."""
    doc, presets = _without_presets(parse(sdl, no_location=True), drop=drop)
    return build_ast_schema(doc, assume_valid_sdl=True), presets


def role_schema(sdl: str) -> GraphQLSchema | None:
    """The subset of a remote a permission's `sdl` declares (None: it does not build)."""
    try:
        return parse_role_sdl(sdl)[0]
    except (GraphQLError, TypeError):
        return None


def presets(sdl: str) -> dict[tuple[str, str, str], Any]:
    """The argument presets of a permission's `sdl`: (type, field, argument) → value
    (none when it does not build)."""
    try:
        return parse_role_sdl(sdl)[1]
    except (GraphQLError, TypeError):
        return {}


def check_subset(sdl: str, data: dict[str, Any]) -> None:
    """Raise 400 `validation-failed` ("validation for the given role-based schema failed
    …", the reference's wording) when the SDL is not a subset of the remote: a type,
    field, argument, enum value, union member or interface the remote lacks; a field or
    argument of another type; a non-null argument of the remote left out; a `@preset`
    anywhere but on an argument or input field, or of a value its type refuses."""
    try:
        doc = parse(sdl, no_location=True)
        mine, presets = parse_role_sdl(sdl, drop=False)
    except (GraphQLError, TypeError) as exc:
        raise _failed([str(exc)]) from None
    remote = build_client_schema(data)  # type: ignore[arg-type]
    problems = _ast_problems(doc)
    for name, t in mine.type_map.items():
        if name.startswith("__") or name in BUILTIN:
            continue
        theirs = _counterpart(mine, remote, t)
        if theirs is None:
            problems.append(f'"{_kind(t)}": "{name}" does not exist in the upstream remote schema')
        elif type(theirs) is not type(t):
            problems.append(f'"{name}" is a {_kind(theirs)} in the upstream remote schema')
        else:
            problems += _type_problems(t, theirs, presets)
    problems += _preset_problems(mine, presets)
    if problems:
        raise _failed(problems)


BUILTIN = frozenset({"String", "Int", "Float", "Boolean", "ID"})


def _failed(problems: list[str]) -> SvcError:
    if len(problems) == 1:
        text = f"validation for the given role-based schema failed because {problems[0]}"
    else:
        reasons = "".join(f"\n • {p}" for p in problems)
        text = (
            "validation for the given role-based schema failed for the following "
            f"reasons:{reasons}\n"
        )
    return SvcError(ErrorCode.VALIDATION_FAILED, text, path="$.args")


def _kind(t: Any) -> str:
    return type(t).__name__.removeprefix("GraphQL").removesuffix("Type")


def _counterpart(mine: GraphQLSchema, remote: GraphQLSchema, t: Any) -> Any:
    """The remote's type for role type `t` (root types by role, others by name)."""
    for role_root, remote_root in (
        (mine.query_type, remote.query_type),
        (mine.mutation_type, remote.mutation_type),
    ):
        if t is role_root:
            return remote_root
    return remote.type_map.get(t.name)


def _ast_problems(doc: DocumentNode) -> list[str]:
    """Duplicate enum values and `@preset` on an object or interface field."""
    out = []
    for d in doc.definitions:
        values = [v.name.value for v in getattr(d, "values", None) or ()]
        for v in {v for v in values if values.count(v) > 1}:
            out.append(f'duplicate enum value "{v}" in the enum "{d.name.value}"')  # type: ignore[attr-defined]
        if isinstance(d, ObjectTypeDefinitionNode | InterfaceTypeDefinitionNode):
            for f in d.fields or ():
                if any(x.name.value == PRESET for x in f.directives or ()):
                    out.append(
                        "Preset directives can be defined only on INPUT_FIELD_DEFINITION "
                        "or ARGUMENT_DEFINITION"
                    )
    return out


def _type_problems(mine: Any, theirs: Any, presets: dict[tuple[str, str, str], Any]) -> list[str]:
    if isinstance(mine, GraphQLEnumType):
        return [
            f'enum value "{v}" does not exist in the enum "{mine.name}"'
            for v in mine.values
            if v not in theirs.values
        ]
    if isinstance(mine, GraphQLUnionType):
        names = {m.name for m in theirs.types}
        return [
            f'member "{m.name}" does not exist in the union "{mine.name}"'
            for m in mine.types
            if m.name not in names
        ]
    if not (is_object_type(mine) or is_interface_type(mine) or is_input_object_type(mine)):
        return []
    out = []
    if is_object_type(mine) or is_interface_type(mine):
        upstream = {i.name for i in theirs.interfaces}
        custom = [i.name for i in mine.interfaces if i.name not in upstream]
        if custom:
            out.append(
                "custom interfaces are not supported. "
                f'Object"{mine.name}" implements the following custom interfaces: '
                + ", ".join(f'"{c}"' for c in custom)
            )
    for fname, f in mine.fields.items():
        other = theirs.fields.get(fname)
        if other is None:
            out.append(f'field "{fname}" does not exist in the "{_kind(mine)}": "{mine.name}"')
            continue
        if str(f.type) != str(other.type):
            out.append(f'expected type of "{fname}" to be {other.type} but received {f.type}')
        out += _arg_problems(mine, theirs, fname, f, other, presets)
    return out


def _arg_problems(
    mine: Any, theirs: Any, fname: str, f: Any, other: Any, presets: Any
) -> list[str]:
    out = []
    for aname, a in getattr(f, "args", {}).items():
        theirs_arg = other.args.get(aname)
        if theirs_arg is None:
            out.append(f'argument "{aname}" does not exist in the field "{fname}"')
        elif str(a.type) != str(theirs_arg.type):
            out.append(
                f'expected type of argument "{aname}" to be {theirs_arg.type} but received {a.type}'
            )
    missing = [
        n
        for n, a in getattr(other, "args", {}).items()
        if isinstance(a.type, GraphQLNonNull)
        and a.default_value is Undefined
        and n not in getattr(f, "args", {})
        and (mine.name, fname, n) not in presets
    ]
    if missing:
        names = ", ".join(f'"{n}"' for n in missing)
        out.append(
            f'field: "{fname}" expects the following non nullable arguments to be present: {names}'
        )
    return out


def _preset_problems(mine: GraphQLSchema, presets: dict[tuple[str, str, str], Any]) -> list[str]:
    """Presets whose value the argument's or input field's type refuses (session
    variables are read when sent)."""
    out = []
    for (tname, fname, aname), value in presets.items():
        t: Any = mine.type_map.get(tname)
        f = getattr(t, "fields", {}).get(fname)
        if f is None:
            continue
        target = f.args.get(aname) if aname else f
        if target is not None:
            out += _value_problems(value, target.type)
    return out


def _value_problems(value: Any, t: Any) -> list[str]:
    if isinstance(t, GraphQLNonNull):
        t = t.of_type
    if is_session_variable(value):
        return []
    if isinstance(t, GraphQLInputObjectType):
        if not isinstance(value, dict):
            return [
                f'expected preset value "{value}" of type "{t.name}" to be an input object value'
            ]
        out = []
        for k, v in value.items():
            if k not in t.fields:
                out.append(f'"{k}" does not exist in the input object "{t.name}"')
            else:
                out += _value_problems(v, t.fields[k].type)
        return out
    try:
        coerce_input_value(value, t)
    except GraphQLError as exc:
        return [exc.message]
    return []
