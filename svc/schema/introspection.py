"""GraphQL introspection (`__schema`, `__type`) answered by walking the schema directly.

graphql-core's executor answers introspection as any query: per field of the answer it
builds a resolve info, coerces arguments, calls a resolver and completes the value by its
type (~5 µs a field). A role's `__schema { types { … } }` over 10,000 tables is some 3.4
million fields: 19 s of executor for a 55 MB answer. Here the request's selection is
compiled once into a plan per introspection type (fields collected through fragments and
`@skip`/`@include`, arguments coerced, aliases kept), and the plan writes the answer's
JSON over the schema's objects in plain loops, without a dict per object; a type's answer
under one plan is made once per request and repeated wherever the type appears (a
field's `type { name kind ofType { … } }`).

The values are graphql-core's (3.2, `graphql.type.introspection`'s resolvers, mirrored one
for one: `kind`'s and `locations`' enum names, `defaultValue` printed from
`ast_from_value`, deprecated items left out unless `includeDeprecated`), so the answer is
the one the executor gives; `tests/test_introspection.py` compares the two on the
standard introspection query and on selections with fragments, aliases and directives.
The document is validated against the schema before it gets here (`svc.api.validate`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLUnionType,
    InlineFragmentNode,
    SelectionSetNode,
    ast_from_value,
    print_ast,
)
from graphql.execution.values import get_argument_values, get_directive_values
from graphql.type import GraphQLIncludeDirective, GraphQLSkipDirective
from graphql.type.introspection import TypeMetaFieldDef, introspection_types

Getter = Callable[[Any, Mapping[str, Any]], Any]
_encode = msgspec.json.encode

# `__TypeKind`'s value names by graphql-core class (subclasses such as the lazy types of
# `svc.schema.lazy` are found by `_kind`'s walk of the class's bases).
_KINDS: dict[type, str] = {
    GraphQLScalarType: "SCALAR",
    GraphQLObjectType: "OBJECT",
    GraphQLInterfaceType: "INTERFACE",
    GraphQLUnionType: "UNION",
    GraphQLEnumType: "ENUM",
    GraphQLInputObjectType: "INPUT_OBJECT",
    GraphQLList: "LIST",
    GraphQLNonNull: "NON_NULL",
}


def _kind(t: Any) -> str:
    found = _KINDS.get(type(t))
    if found is None:
        found = next(_KINDS[c] for c in type(t).__mro__ if c in _KINDS)
        _KINDS[type(t)] = found
    return found


def _live(items: Iterable[tuple[str, Any]], args: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """`items` without the deprecated ones unless `includeDeprecated` (graphql-core)."""
    if args.get("includeDeprecated"):
        return list(items)
    return [item for item in items if item[1].deprecation_reason is None]


def _fields(t: Any, args: Mapping[str, Any]) -> Any:
    kind = _kind(t)
    return _live(t.fields.items(), args) if kind in ("OBJECT", "INTERFACE") else None


def _interfaces(t: Any, _args: Mapping[str, Any]) -> Any:
    return list(t.interfaces) if _kind(t) in ("OBJECT", "INTERFACE") else None


def _enum_values(t: Any, args: Mapping[str, Any]) -> Any:
    return _live(t.values.items(), args) if _kind(t) == "ENUM" else None


def _input_fields(t: Any, args: Mapping[str, Any]) -> Any:
    return _live(t.fields.items(), args) if _kind(t) == "INPUT_OBJECT" else None


def _default_value(item: tuple[str, Any], _args: Mapping[str, Any]) -> Any:
    value_ast = ast_from_value(item[1].default_value, item[1].type)
    return print_ast(value_ast) if value_ast else None


def _attr(name: str) -> Getter:
    return lambda obj, _args: getattr(obj, name, None)


def _item(name: str) -> Getter:
    return lambda item, _args: getattr(item[1], name)


def _deprecated(item: tuple[str, Any], _args: Mapping[str, Any]) -> bool:
    return item[1].deprecation_reason is not None


def _item_name(item: tuple[str, Any], _args: Mapping[str, Any]) -> str:
    return item[0]


def _item_args(item: tuple[str, Any], args: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return _live(item[1].args.items(), args)


def _item_type(item: tuple[str, Any], _args: Mapping[str, Any]) -> Any:
    return item[1].type


# Per introspection type, per field: the value of the field for an object and the field's
# arguments, and the introspection type of the value (None for a leaf) with whether it
# is a list. Objects are those of graphql-core's resolvers: the schema, a type, a
# (name, field), (name, argument or input field) or (name, enum value) pair, a directive.
_FIELD_ITEM: dict[str, tuple[Getter, str | None, bool]] = {
    "name": (_item_name, None, False),
    "description": (_item("description"), None, False),
    "isDeprecated": (_deprecated, None, False),
    "deprecationReason": (_item("deprecation_reason"), None, False),
}
RESOLVERS: dict[str, dict[str, tuple[Getter, str | None, bool]]] = {
    "__Schema": {
        "description": (_attr("description"), None, False),
        "types": (lambda s, _a: list(s.type_map.values()), "__Type", True),
        "queryType": (lambda s, _a: s.query_type, "__Type", False),
        "mutationType": (lambda s, _a: s.mutation_type, "__Type", False),
        "subscriptionType": (lambda s, _a: s.subscription_type, "__Type", False),
        "directives": (
            lambda s, a: [
                d
                for d in s.directives
                if a.get("includeDeprecated") or d.deprecation_reason is None
            ],
            "__Directive",
            True,
        ),
    },
    "__Type": {
        "kind": (lambda t, _a: _kind(t), None, False),
        "name": (_attr("name"), None, False),
        "description": (_attr("description"), None, False),
        "specifiedByURL": (_attr("specified_by_url"), None, False),
        "fields": (_fields, "__Field", True),
        "interfaces": (_interfaces, "__Type", True),
        "possibleTypes": (lambda _t, _a: None, "__Type", True),  # `_Compiler._possible_types`
        "enumValues": (_enum_values, "__EnumValue", True),
        "inputFields": (_input_fields, "__InputValue", True),
        "ofType": (_attr("of_type"), "__Type", False),
        "isOneOf": (
            lambda t, _a: t.is_one_of if _kind(t) == "INPUT_OBJECT" else None,
            None,
            False,
        ),
    },
    "__Field": {
        **_FIELD_ITEM,
        "args": (_item_args, "__InputValue", True),
        "type": (_item_type, "__Type", False),
    },
    "__InputValue": {
        **_FIELD_ITEM,
        "type": (_item_type, "__Type", False),
        "defaultValue": (_default_value, None, False),
    },
    "__EnumValue": dict(_FIELD_ITEM),
    "__Directive": {
        "name": (_attr("name"), None, False),
        "description": (_attr("description"), None, False),
        "isRepeatable": (_attr("is_repeatable"), None, False),
        "locations": (lambda d, _a: [loc.name for loc in d.locations], None, False),
        "isDeprecated": (lambda d, _a: d.deprecation_reason is not None, None, False),
        "deprecationReason": (_attr("deprecation_reason"), None, False),
        "args": (
            lambda d, a: _live(d.args.items(), a),
            "__InputValue",
            True,
        ),
    },
}


@dataclass(frozen=True)
class _Entry:
    """One response key of a plan: the JSON before its value (`{"key":` for the first key,
    `,"key":` after), the value's getter and arguments, and the plan of the value's fields
    (None for a leaf) and whether the value is a list."""

    prefix: bytes
    get: Getter
    args: Mapping[str, Any]
    sub: _Plan | None
    many: bool


@dataclass(frozen=True)
class _Plan:
    """The compiled selection of one introspection type. `memo`, for a `__Type` reached
    through a field (not the schema's `types`, each met once): the JSON of each type made
    under this plan, by the type object's id (the schema holds every such object for the
    request), since a type's answer is the same wherever it appears."""

    type_name: str
    entries: tuple[_Entry, ...] = ()
    memo: dict[int, bytes] | None = None
    fields: frozenset[str] = frozenset()  # the introspection fields it reads

    def write(self, obj: Any, out: list[bytes]) -> None:
        """Append the JSON of `obj` under this plan to `out`."""
        memo, start = self.memo, len(out)
        if memo is not None:
            found = memo.get(id(obj))
            if found is not None:
                out.append(found)
                return
        if not self.entries:
            out.append(b"{}")
            return
        for e in self.entries:
            out.append(e.prefix)
            value = e.get(obj, e.args)
            if e.sub is None or value is None:
                out.append(_encode(value))
            elif not e.many:
                e.sub.write(value, out)
            elif value:
                out.append(b"[")
                for item in value:
                    e.sub.write(item, out)
                    out.append(b",")
                out[-1] = b"]"
            else:
                out.append(b"[]")
        out.append(b"}")
        if memo is not None:
            whole = b"".join(out[start:])
            del out[start:]
            out.append(whole)
            memo[id(obj)] = whole


@dataclass(frozen=True)
class _Compiler:
    """Compiles selections against the introspection types (the request's fragments and
    coerced variables)."""

    schema: GraphQLSchema
    fragments: Mapping[str, FragmentDefinitionNode]
    variables: Mapping[str, Any]

    def plan(self, type_name: str, nodes: list[FieldNode], memo: bool = False) -> _Plan:
        """The plan of `type_name` for the merged selections of `nodes`; `memo`: keep each
        object's answer (`_Plan`)."""
        collected: dict[str, list[FieldNode]] = {}
        for node in nodes:
            if node.selection_set is not None:
                self._collect(type_name, node.selection_set, collected, set())
        entries = [
            self._entry(type_name, (b"," if i else b"{") + _encode(key) + b":", found)
            for i, (key, found) in enumerate(collected.items())
        ]
        names = frozenset(found[0].name.value for found in collected.values())
        return _Plan(type_name, tuple(entries), {} if memo else None, names)

    def _entry(self, type_name: str, prefix: bytes, nodes: list[FieldNode]) -> _Entry:
        name = nodes[0].name.value
        if name == "__typename":
            return _Entry(prefix, lambda _obj, _args: type_name, {}, None, False)
        get, sub_type, many = RESOLVERS[type_name][name]
        field_def = introspection_types[type_name].fields[name]  # type: ignore[attr-defined]
        args = get_argument_values(field_def, nodes[0], dict(self.variables))
        if name == "possibleTypes":
            get = self._possible_types
        memo = sub_type == "__Type" and name != "types"
        sub = self.plan(sub_type, nodes, memo) if sub_type is not None else None
        return _Entry(prefix, get, args, sub, many)

    def _possible_types(self, t: Any, _args: Mapping[str, Any]) -> Any:
        if _kind(t) in ("INTERFACE", "UNION"):
            return self.schema.get_possible_types(t)
        return None

    def _collect(
        self,
        type_name: str,
        selection_set: SelectionSetNode,
        out: dict[str, list[FieldNode]],
        visited: set[str],
    ) -> None:
        """graphql-core's `collect_fields` over an introspection type (which implements
        no interface and is in no union, so a type condition matches by name)."""
        for sel in selection_set.selections:
            if not self._included(sel):
                continue
            if isinstance(sel, FieldNode):
                key = sel.alias.value if sel.alias else sel.name.value
                out.setdefault(key, []).append(sel)
            elif isinstance(sel, InlineFragmentNode):
                cond = sel.type_condition
                if cond is None or cond.name.value == type_name:
                    self._collect(type_name, sel.selection_set, out, visited)
            elif isinstance(sel, FragmentSpreadNode):
                name = sel.name.value
                frag = self.fragments.get(name)
                if name in visited or frag is None:
                    continue
                visited.add(name)
                if frag.type_condition.name.value == type_name:
                    self._collect(type_name, frag.selection_set, out, visited)

    def _included(self, node: Any) -> bool:
        skip = get_directive_values(GraphQLSkipDirective, node, dict(self.variables))
        if skip and skip["if"] is True:
            return False
        include = get_directive_values(GraphQLIncludeDirective, node, dict(self.variables))
        return not (include and include["if"] is False)


def introspect(
    schema: GraphQLSchema,
    nodes: Mapping[str, list[FieldNode]],
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any],
    whole: Callable[[], GraphQLSchema] | None = None,
) -> dict[str, bytes]:
    """The JSON answers of the root fields `nodes` (response key -> the field nodes of
    that key, as graphql-core's `collect_fields` gives them) that are `__schema` or
    `__type`, by response key; other keys are left out. `variables` are the request's
    coerced variables; `whole`, when given, the schema to list `__schema { types }` from
    (the same types as `schema`'s: `State.whole_schema`), asked once. Raises what a
    type's fields raise when made (`svc.schema.lazy`), and graphql-core's `GraphQLError`
    for an argument it cannot take (a null `if` or `name`: graphql-core answers such a
    field null with an error; the whole request is refused here)."""
    compiler = _Compiler(schema, fragments, variables)
    whole_compiler: _Compiler | None = None  # over `whole()`, once asked
    out: dict[str, bytes] = {}
    for key, found in nodes.items():
        name, parts = found[0].name.value, list[bytes]()
        if name == "__schema":
            use = compiler
            if whole is not None and "types" in compiler.plan("__Schema", found).fields:
                if whole_compiler is None:
                    whole_compiler = _Compiler(whole(), fragments, variables)
                use = whole_compiler
            use.plan("__Schema", found).write(use.schema, parts)
        elif name == "__type":
            args = get_argument_values(TypeMetaFieldDef, found[0], dict(variables))
            t = schema.get_type(args["name"])
            if t is None:
                parts.append(b"null")
            else:
                compiler.plan("__Type", found).write(t, parts)
        else:
            continue
        out[key] = b"".join(parts)
    return out
