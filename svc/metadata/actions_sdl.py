"""`actions.graphql` ⇄ actions and custom types of the metadata directory (spec 2.1).

The SDL holds what is GraphQL: the actions as fields of `type Query` / `type Mutation`
(arguments, their descriptions, output type) and the custom types (`enum`, `input`,
`type`, `scalar`, with descriptions and fields). `actions.yaml` holds the rest: per action
`{name, definition: {kind?, handler, headers?, forward_client_headers?, timeout?,
*_transform?}, permissions?, comment?}` and per custom type `{name}` plus an object's
`relationships`. Pure functions over the plain JSON form of the document; the directory
module (`svc.metadata.directory`) canonicalises and writes YAML.

`split_actions(obj)` → `(yaml object, SDL text)`; `join_actions(yaml object, SDL)` →
`(actions, custom_types)` (plain JSON) or `SdlError(message, file, path)`. The SDL is
printed by graphql-core from an AST built in a fixed order (Query, Mutation, then enums,
input objects, objects, scalars, each by name), so writing is deterministic and
`split(join(split(x))) == split(x)`.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    DocumentNode,
    EnumTypeDefinitionNode,
    EnumValueDefinitionNode,
    FieldDefinitionNode,
    GraphQLError,
    InputObjectTypeDefinitionNode,
    InputValueDefinitionNode,
    NameNode,
    ObjectTypeDefinitionNode,
    ScalarTypeDefinitionNode,
    StringValueNode,
    parse,
    parse_type,
    print_ast,
)
from graphql.language import ArgumentNode, DirectiveNode

# Definition keys that live in the SDL, not in actions.yaml.
SDL_KEYS = ("arguments", "output_type", "type")
ROOTS = {"query": "Query", "mutation": "Mutation"}


class SdlError(Exception):
    """A problem of `actions.graphql` or of `actions.yaml` against it."""

    def __init__(self, message: str, file: str = "actions.graphql", path: str = "$") -> None:
        super().__init__(message)
        self.message, self.file, self.path = message, file, path


def _name(text: str) -> NameNode:
    return NameNode(value=text)


def _desc(text: Any) -> StringValueNode | None:
    return StringValueNode(value=text, block=True) if isinstance(text, str) and text else None


def _input_value(name: str, type_text: str, description: Any) -> InputValueDefinitionNode:
    return InputValueDefinitionNode(
        name=_name(name),
        type=parse_type(type_text, no_location=True),
        description=_desc(description),
        directives=(),
    )


def _field(name: str, type_text: str, description: Any, args: Any = ()) -> FieldDefinitionNode:
    return FieldDefinitionNode(
        name=_name(name),
        type=parse_type(type_text, no_location=True),
        description=_desc(description),
        arguments=tuple(_input_value(a["name"], a["type"], a.get("description")) for a in args),
        directives=(),
    )


def _by_name(items: Any) -> list[dict[str, Any]]:
    return sorted((i for i in items or () if isinstance(i, dict)), key=lambda i: str(i["name"]))


def split_actions(obj: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The `actions.yaml` object and the `actions.graphql` text of a document `obj`."""
    actions = _by_name(obj.get("actions"))
    types = obj.get("custom_types") or {}
    definitions: list[Any] = []
    for kind in ("query", "mutation"):
        fields = [
            _field(a["name"], d["output_type"], None, d.get("arguments") or ())
            for a in actions
            for d in (a["definition"],)
            if "output_type" in d and (d.get("type") == "query") == (kind == "query")
        ]
        if fields:
            definitions.append(
                ObjectTypeDefinitionNode(
                    name=_name(ROOTS[kind]), fields=tuple(fields), interfaces=(), directives=()
                )
            )
    definitions += _type_definitions(types)
    sdl = print_ast(DocumentNode(definitions=tuple(definitions))) + "\n" if definitions else ""
    yaml_actions = []
    for a in actions:
        definition = a["definition"]
        if "output_type" in definition:  # else it cannot be SDL: kept whole (stored before)
            definition = {k: v for k, v in definition.items() if k not in SDL_KEYS}
        yaml_actions.append({**a, "definition": definition})
    yaml_types = {
        kind: [
            {
                "name": t["name"],
                **({"relationships": t["relationships"]} if t.get("relationships") else {}),
            }
            for t in _by_name(types.get(kind))
        ]
        for kind in ("enums", "input_objects", "objects", "scalars")
    }
    return {"actions": yaml_actions, "custom_types": yaml_types}, sdl


def _type_definitions(types: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for e in _by_name(types.get("enums")):
        values = tuple(
            EnumValueDefinitionNode(
                name=_name(v["value"]),
                description=_desc(v.get("description")),
                directives=(_deprecated(),) if v.get("is_deprecated") else (),
            )
            for v in e.get("values") or ()
        )
        out.append(
            EnumTypeDefinitionNode(
                name=_name(e["name"]),
                description=_desc(e.get("description")),
                values=values,
                directives=(),
            )
        )
    for i in _by_name(types.get("input_objects")):
        fields = tuple(
            _input_value(f["name"], f["type"], f.get("description")) for f in i["fields"]
        )
        out.append(
            InputObjectTypeDefinitionNode(
                name=_name(i["name"]),
                description=_desc(i.get("description")),
                fields=fields,
                directives=(),
            )
        )
    for o in _by_name(types.get("objects")):
        out_fields = tuple(_field(f["name"], f["type"], f.get("description")) for f in o["fields"])
        out.append(
            ObjectTypeDefinitionNode(
                name=_name(o["name"]),
                description=_desc(o.get("description")),
                fields=out_fields,
                interfaces=(),
                directives=(),
            )
        )
    for s in _by_name(types.get("scalars")):
        out.append(
            ScalarTypeDefinitionNode(
                name=_name(s["name"]), description=_desc(s.get("description")), directives=()
            )
        )
    return out


def _deprecated() -> DirectiveNode:
    return DirectiveNode(name=_name("deprecated"), arguments=tuple[ArgumentNode, ...]())


def _text(node: Any) -> str | None:
    return node.value if node is not None else None


def _with_description(out: dict[str, Any], node: Any) -> dict[str, Any]:
    text = _text(getattr(node, "description", None))
    if text is not None:
        out["description"] = text
    return out


def _arg(node: InputValueDefinitionNode) -> dict[str, Any]:
    return _with_description({"name": node.name.value, "type": print_ast(node.type)}, node)


def _parse(sdl: str) -> DocumentNode | None:
    if not sdl.strip():
        return None
    try:
        return parse(sdl, no_location=True)
    except GraphQLError as exc:
        raise SdlError(f"not valid GraphQL SDL: {exc.message}") from None


def join_actions(yaml_obj: dict[str, Any], sdl: str) -> tuple[list[Any], dict[str, Any]]:
    """`(actions, custom_types)` of the document from `actions.yaml`'s object and the
    SDL; raises `SdlError` for SDL that does not parse, a definition it cannot hold, an
    action or custom type of the SDL missing from `actions.yaml`, and a custom type of
    `actions.yaml` that is neither in the SDL nor written whole there."""
    document = _parse(sdl)
    roots: dict[str, dict[str, Any]] = {}
    types: dict[str, list[dict[str, Any]]] = {}
    for d in document.definitions if document is not None else ():
        name = getattr(getattr(d, "name", None), "value", "")
        if isinstance(d, ObjectTypeDefinitionNode) and name in ("Query", "Mutation"):
            kind = "query" if name == "Query" else "mutation"
            for f in d.fields or ():
                definition: dict[str, Any] = {"output_type": print_ast(f.type), "type": kind}
                if f.arguments:
                    definition["arguments"] = [_arg(a) for a in f.arguments]
                roots[f.name.value] = definition
        else:
            kind_name, entry = _custom_type(d)
            types.setdefault(kind_name, []).append(entry)
    actions = []
    for i, a in enumerate(yaml_obj.get("actions") or ()):
        if not isinstance(a, dict) or not isinstance(a.get("definition"), dict):
            raise SdlError("expected {name, definition}", "actions.yaml", f"$.actions[{i}]")
        # Not in the SDL: taken as written in actions.yaml (the layout of documents from
        # before actions.graphql; an action without `output_type` is then inconsistent).
        found = roots.pop(str(a.get("name")), {})
        actions.append({**a, "definition": {**a["definition"], **found}})
    if roots:
        raise SdlError(f'action "{next(iter(roots))}" has no entry in actions.yaml')
    return actions, _merge_types(types, yaml_obj.get("custom_types") or {})


def _custom_type(d: Any) -> tuple[str, dict[str, Any]]:
    """(custom_types key, entry) of one SDL type definition."""
    if isinstance(d, ObjectTypeDefinitionNode):
        fields = [
            _with_description({"name": f.name.value, "type": print_ast(f.type)}, f)
            for f in d.fields or ()
        ]
        return "objects", _with_description({"name": d.name.value, "fields": fields}, d)
    if isinstance(d, InputObjectTypeDefinitionNode):
        fields = [_arg(f) for f in d.fields or ()]
        return "input_objects", _with_description({"name": d.name.value, "fields": fields}, d)
    if isinstance(d, ScalarTypeDefinitionNode):
        return "scalars", _with_description({"name": d.name.value}, d)
    if isinstance(d, EnumTypeDefinitionNode):
        values = []
        for v in d.values or ():
            value = _with_description({"value": v.name.value}, v)
            if any(x.name.value == "deprecated" for x in v.directives or ()):
                value["is_deprecated"] = True
            values.append(value)
        return "enums", _with_description({"name": d.name.value, "values": values}, d)
    raise SdlError(f"actions.graphql cannot hold a {type(d).__name__.removesuffix('Node')}")


def _merge_types(
    types: dict[str, list[dict[str, Any]]], yaml_types: dict[str, Any]
) -> dict[str, Any]:
    """The SDL's types with `relationships` from `actions.yaml` (matched by name)."""
    out: dict[str, Any] = {}
    for kind in ("enums", "input_objects", "objects", "scalars"):
        extra = {t.get("name"): t for t in yaml_types.get(kind) or () if isinstance(t, dict)}
        entries = []
        for entry in types.get(kind, []):
            more = extra.pop(entry["name"], {})
            if more.get("relationships"):
                entry = {**entry, "relationships": more["relationships"]}
            entries.append(entry)
        for name in [n for n, t in extra.items() if "fields" in t or "values" in t]:
            entries.append(extra.pop(name))  # written whole in actions.yaml (from before)
        if extra:
            name = next(iter(extra))
            raise SdlError(f'custom type "{name}" is not defined in actions.graphql')
        if entries:
            out[kind] = entries
    return out
