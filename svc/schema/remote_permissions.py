"""Remote schema permissions (issue 17; Hasura's `add_remote_schema_permissions`): a role
sees the SDL subset its permission declares.

`role_schema(entry, role, data)` is that subset as a graphql-core schema (None when the
role has no permission on the remote). Arguments carrying `@preset(value: …)` are hidden
from the role: execution sends their preset instead (`presets`). `check_subset(sdl,
remote)` validates a permission's SDL against the remote's schema when it is added
(400 `validation-failed`, the reference's code).
"""

from __future__ import annotations

from typing import Any

from graphql import (
    ArgumentNode,
    DirectiveNode,
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    InputValueDefinitionNode,
    ObjectTypeDefinitionNode,
    build_ast_schema,
    build_client_schema,
    get_named_type,
    is_input_object_type,
    is_interface_type,
    is_object_type,
    parse,
    value_from_ast_untyped,
)

from svc.errors import ErrorCode, SvcError
from svc.metadata.remote_schemas import RemoteSchema

PRESET = "preset"


def _sdl(entry: RemoteSchema, role: str) -> str | None:
    for perm in entry.permissions or ():
        if perm.role == role and isinstance(perm.definition, dict):
            sdl = perm.definition.get("schema")
            return sdl if isinstance(sdl, str) else None
    return None


def _without_presets(doc: DocumentNode) -> tuple[DocumentNode, dict[tuple[str, str, str], Any]]:
    """`doc` with `@preset` arguments removed, and the presets by (type, field, arg)."""
    presets: dict[tuple[str, str, str], Any] = {}
    defs = []
    for d in doc.definitions:
        if isinstance(d, ObjectTypeDefinitionNode) and d.fields:
            fields = []
            for f in d.fields:
                kept = []
                for a in f.arguments or ():
                    value = _preset(a)
                    if value is None:
                        kept.append(_no_directives(a))
                    else:
                        presets[(d.name.value, f.name.value, a.name.value)] = value
                fields.append(_copy(f, arguments=tuple(kept)))
            d = _copy(d, fields=tuple(fields))
        defs.append(d)
    return DocumentNode(definitions=tuple(defs)), presets


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
    return None


def _preset_value(d: DirectiveNode) -> Any:
    value: ArgumentNode | None = next(
        (a for a in d.arguments or () if a.name.value == "value"), None
    )
    return None if value is None else value_from_ast_untyped(value.value)


def parse_role_sdl(sdl: str) -> tuple[GraphQLSchema, dict[tuple[str, str, str], Any]]:
    """The schema of a permission's SDL and its presets; raises `GraphQLError`."""
    doc, presets = _without_presets(parse(sdl, no_location=True))
    return build_ast_schema(doc, assume_valid_sdl=True), presets


def role_schema(entry: RemoteSchema, role: str, data: dict[str, Any]) -> GraphQLSchema | None:
    """`role`'s subset of the remote (None: no permission, or an SDL that does not build)."""
    sdl = _sdl(entry, role)
    if sdl is None:
        return None
    try:
        return parse_role_sdl(sdl)[0]
    except (GraphQLError, TypeError):
        return None


def presets(entry: RemoteSchema, role: str) -> dict[tuple[str, str, str], Any]:
    """`role`'s argument presets on `entry`: (type, field, argument) → value."""
    sdl = _sdl(entry, role)
    if sdl is None:
        return {}
    try:
        return parse_role_sdl(sdl)[1]
    except (GraphQLError, TypeError):
        return {}


def check_subset(sdl: str, data: dict[str, Any]) -> None:
    """Raise 400 `validation-failed` when the SDL is not a subset of the remote (a type,
    field or argument the remote lacks, or a different type of one)."""
    try:
        mine, _ = parse_role_sdl(sdl)
    except (GraphQLError, TypeError) as exc:
        raise SvcError(ErrorCode.VALIDATION_FAILED, str(exc), path="$.args") from None
    remote = build_client_schema(data)  # type: ignore[arg-type]
    problems: list[str] = []
    for name, t in mine.type_map.items():
        if name.startswith("__"):
            continue
        theirs = remote.type_map.get(name)
        if theirs is None:
            if is_object_type(t) and t in (mine.query_type, mine.mutation_type):
                theirs = remote.query_type if t is mine.query_type else remote.mutation_type
            if theirs is None:
                problems.append(f"'{name}' does not exist in the remote schema")
                continue
        if is_object_type(t) or is_interface_type(t) or is_input_object_type(t):
            problems += _field_problems(name, t, theirs)
    if problems:
        raise SvcError(
            ErrorCode.VALIDATION_FAILED,
            "validation for the given role's schema failed",
            path="$.args",
            internal=problems,
        )


def _field_problems(name: str, mine: Any, theirs: Any) -> list[str]:
    out = []
    fields = getattr(theirs, "fields", {})
    for fname, f in mine.fields.items():
        other = fields.get(fname)
        if other is None:
            out.append(f"field '{fname}' does not exist in type '{name}'")
            continue
        if str(get_named_type(f.type)) != str(get_named_type(other.type)):
            out.append(f"field '{name}.{fname}' has a different type")
        for aname, a in getattr(f, "args", {}).items():
            theirs_arg = other.args.get(aname) if hasattr(other, "args") else None
            if theirs_arg is None:
                out.append(f"argument '{aname}' of '{name}.{fname}' does not exist")
            elif str(a.type) != str(theirs_arg.type):
                out.append(f"argument '{aname}' of '{name}.{fname}' has a different type")
    return out
