"""A remote schema permission's SDL checked against the remote it subsets.

`check_subset(sdl, remote)` validates a permission's SDL against the remote's own
(uncustomized) introspection when it is added, a port of the reference's
`Hasura/RemoteSchema/SchemaCache/Permission.hs` (`validateRemoteSchema`): every refusal is
400 `validation-failed`, "validation for the given role-based schema failed because …"
(one reason) or "… for the following reasons:\\n • …\\n" (several), each reason in the
reference's words (`showRoleBasedSchemaValidationError`). The reference collects reasons
the way its `ValidateT` does: definitions, fields and arguments are checked side by side
(each one's reasons kept), while inside one definition a fatal reason (`refute`) stops
that definition and a mild one (`dispute`) does not. `permission_problem` and
`permission_issues` apply it at every build.
"""

from __future__ import annotations

import contextlib
from decimal import Decimal, InvalidOperation
from typing import Any

from graphql import (
    BooleanValueNode,
    DirectiveNode,
    DocumentNode,
    EnumTypeDefinitionNode,
    EnumValueNode,
    FieldDefinitionNode,
    FloatValueNode,
    GraphQLError,
    InputObjectTypeDefinitionNode,
    InputValueDefinitionNode,
    InterfaceTypeDefinitionNode,
    IntValueNode,
    ListTypeNode,
    ListValueNode,
    NameNode,
    NonNullTypeNode,
    NullValueNode,
    ObjectTypeDefinitionNode,
    ObjectValueNode,
    ScalarTypeDefinitionNode,
    SchemaDefinitionNode,
    StringValueNode,
    TypeDefinitionNode,
    UnionTypeDefinitionNode,
    ValueNode,
    parse,
    parse_value,
    print_ast,
)

from svc.errors import ErrorCode, SvcError
from svc.ir.model import Inconsistency
from svc.schema.remote_permissions import (
    BUILTIN,
    PRESET,
    base_name,
    directive_args,
)
from svc.session_vars import is_session_variable


# -- validation against the remote (the reference's `validateRemoteSchema`) -----------------
class _Refuted(Exception):
    """A fatal reason was recorded: the definition being checked stops."""


class _Validation:
    """The reference's `MonadValidate [RoleBasedSchemaValidationError]`: `dispute`
    records a reason, `refute` records one and stops, `each` checks items side by side
    (the `Applicative` traversal: every item's reasons kept, stopping after all of them
    when one refuted)."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def dispute(self, reason: str) -> None:
        self.reasons.append(reason)

    def refute(self, reason: str) -> Any:
        self.reasons.append(reason)
        raise _Refuted

    def each(self, items: Any, check: Any) -> None:
        failed = False
        for item in items:
            try:
                check(item)
            except _Refuted:
                failed = True
        if failed:
            raise _Refuted


def _q(text: Any) -> str:
    """The reference's `dquote`."""
    return f'"{text}"'


def _english(names: list[str]) -> str:
    """The reference's `englishList "and"` of names, each double-quoted."""
    quoted = [_q(n) for n in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} and {quoted[1]}"
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def _duplicates(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for n in names:
        if n in seen and n not in out:
            out.append(n)
        seen.add(n)
    return out


def _difference(mine: list[str], theirs: list[str]) -> list[str]:
    """The reference's `getDifference`: names of `mine` not in `theirs`, once each."""
    out: list[str] = []
    for n in mine:
        if n not in theirs and n not in out:
            out.append(n)
    return out


def _type_text(ref: Any) -> str:
    """An introspection type reference as GraphQL prints it (`[Int]!`)."""
    kind = ref.get("kind")
    if kind == "NON_NULL":
        return _type_text(ref["ofType"]) + "!"
    if kind == "LIST":
        return "[" + _type_text(ref["ofType"]) + "]"
    return str(ref.get("name"))


def _nullable(t: Any) -> bool:
    return not isinstance(t, NonNullTypeNode)


def _value_key(node: Any) -> Any:
    """A value's identity as the reference compares `G.Value`s: objects unordered, an
    `Int` never equal to a `Float`, floats by their number."""
    if node is None:
        return None
    if isinstance(node, IntValueNode):
        return ("int", int(node.value))
    if isinstance(node, FloatValueNode):
        try:
            return ("float", Decimal(node.value))
        except InvalidOperation:
            return ("float", node.value)
    if isinstance(node, StringValueNode):
        return ("string", node.value)
    if isinstance(node, BooleanValueNode):
        return ("boolean", node.value)
    if isinstance(node, NullValueNode):
        return ("null",)
    if isinstance(node, EnumValueNode):
        return ("enum", node.value)
    if isinstance(node, ListValueNode):
        return ("list", tuple(_value_key(v) for v in node.values))
    if isinstance(node, ObjectValueNode):
        return ("object", frozenset((f.name.value, _value_key(f.value)) for f in node.fields))
    return ("other", print_ast(node))


def _upstream_default(text: Any) -> Any:
    if text is None:
        return None
    try:
        return parse_value(str(text), no_location=True)
    except GraphQLError:
        return StringValueNode(value=str(text))


def _default_text(node: Any) -> str:
    return "" if node is None else print_ast(node)


class _Check:
    """One SDL checked against one introspection (the reference's `validateRemoteSchema`
    with its helpers, in the same order)."""

    def __init__(self, doc: DocumentNode, data: dict[str, Any]) -> None:
        self.v = _Validation()
        schema = data.get("__schema") or {}
        self.upstream: dict[str, dict[str, Any]] = {
            str(t["name"]): t for t in schema.get("types") or () if isinstance(t, dict)
        }
        # the provided document with the built-in scalars added (`defaultScalars`)
        self.types: list[TypeDefinitionNode] = [
            d for d in doc.definitions if isinstance(d, TypeDefinitionNode)
        ] + [ScalarTypeDefinitionNode(name=_name(n), directives=()) for n in BUILTIN]
        self.schemas = [d for d in doc.definitions if isinstance(d, SchemaDefinitionNode)]
        self.interfaces = {
            d.name.value for d in self.types if isinstance(d, InterfaceTypeDefinitionNode)
        }

    def run(self) -> list[str]:
        with contextlib.suppress(_Refuted):
            self._document()
        return self.v.reasons

    def _document(self) -> None:
        dups = _duplicates([d.name.value for d in self.types])
        if dups:
            self.v.refute(f"duplicate type names found: {_english(dups)}")
        if len(self.schemas) > 1:
            self.v.refute("multiple schema definitions found")
        self.v.each(self.types, self._type)

    def _lookup(self, kind: str, label: str, name: str) -> dict[str, Any]:
        found = self.upstream.get(name)
        if found is None or found.get("kind") != kind:
            self.v.refute(f"{_q(label)}: {_q(name)} does not exist in the upstream remote schema")
        assert found is not None
        return found

    def _type(self, d: TypeDefinitionNode) -> None:
        name = d.name.value
        if isinstance(d, ScalarTypeDefinitionNode):
            if name in BUILTIN:
                return
            self._lookup("SCALAR", "Scalar", name)
            self._directives(d.directives, "SCALAR", ("Scalar", name))
        elif isinstance(d, InterfaceTypeDefinitionNode):
            theirs = self._lookup("INTERFACE", "Interface", name)
            self._directives(d.directives, "INTERFACE", ("Interface", name))
            self._fields(d.fields or (), theirs, "Interface", name)
        elif isinstance(d, ObjectTypeDefinitionNode):
            theirs = self._lookup("OBJECT", "Object", name)
            self._object(d, theirs)
        elif isinstance(d, UnionTypeDefinitionNode):
            theirs = self._lookup("UNION", "Union", name)
            self._directives(d.directives, "UNION", ("Union", name))
            members = [m.name.value for m in d.types or ()]
            upstream = [str(m["name"]) for m in theirs.get("possibleTypes") or ()]
            missing = _difference(members, upstream)
            if missing:
                self.v.refute(
                    f"union {_q(name)} contains members which do not exist in the members"
                    f" of the remote schema union :{_english(missing)}"
                )
        elif isinstance(d, EnumTypeDefinitionNode):
            theirs = self._lookup("ENUM", "Enum", name)
            self._directives(d.directives, "ENUM", ("Enum", name))
            values = [v.name.value for v in d.values or ()]
            dups = _duplicates(values)
            if dups:
                self.v.refute(
                    f"duplicate enum values: {_english(dups)} found in the {_q(name)} enum"
                )
            upstream = [str(v["name"]) for v in theirs.get("enumValues") or ()]
            missing = _difference(values, upstream)
            if missing:
                self.v.dispute(
                    f"enum {_q(name)} contains the following enum values that do not exist "
                    f"in the corresponding upstream remote enum: {_english(missing)}"
                )
        elif isinstance(d, InputObjectTypeDefinitionNode):
            theirs = self._lookup("INPUT_OBJECT", "Input object", name)
            self._directives(d.directives, "INPUT_OBJECT", ("Input object", name))
            self._arguments(d.fields or (), theirs.get("inputFields") or (), name)

    def _object(self, d: ObjectTypeDefinitionNode, theirs: dict[str, Any]) -> None:
        name = d.name.value
        self._directives(d.directives, "OBJECT", ("Object", name))
        mine = [i.name.value for i in d.interfaces or ()]
        upstream = [str(i["name"]) for i in theirs.get("interfaces") or ()]
        # the reference's `ObjectImplementsNonExistingInterfaces` is computed as a
        # difference that is always empty; only the declared ones are reported
        custom = [i for i in _difference(mine, upstream) if i in self.interfaces]
        if custom:
            self.v.dispute(
                "custom interfaces are not supported. "
                f"Object{_q(name)} implements the following custom interfaces: " + _english(custom)
            )
        self._fields(d.fields or (), theirs, "Object", name)

    def _directives(self, directives: Any, location: str, parent: tuple[str, str]) -> Any:
        """The reference's `validateDirectives`: the `@preset` among `directives` (None
        without one). An introspection carries no applied directives, so any other one
        does not exist upstream."""
        directives = tuple(directives or ())
        others = [d for d in directives if d.name.value != PRESET]
        presets = [d for d in directives if d.name.value == PRESET]
        dups = _duplicates([d.name.value for d in others])
        if dups:
            self.v.refute(
                f"duplicate directives: {_english(dups)}found in the "
                f"{_q(parent[0])} {_q(parent[1])}"
            )

        def unknown(d: DirectiveNode) -> None:
            self.v.refute(
                f"{_q('Directive')}: {_q(d.name.value)} does not exist in the upstream "
                "remote schema"
            )

        self.v.each(others, unknown)
        if not presets:
            return None
        if len(presets) > 1:
            self.v.refute(f"found multiple preset directives at {_q(parent[0])} {_q(parent[1])}")
        if location != "INPUT_FIELD_DEFINITION":
            self.v.dispute(
                "Preset directives can be defined only on INPUT_FIELD_DEFINITION or "
                "ARGUMENT_DEFINITION"
            )
        return presets[0]

    def _fields(self, fields: Any, theirs: dict[str, Any], kind: str, parent: str) -> None:
        fields = tuple(fields)
        dups = _duplicates([f.name.value for f in fields])
        if dups:
            self.v.refute(f"duplicate fields: {_english(dups)}found in the {_q(kind)} {_q(parent)}")
        upstream = {str(f["name"]): f for f in theirs.get("fields") or ()}

        def one(f: FieldDefinitionNode) -> None:
            other = upstream.get(f.name.value)
            if other is None:
                self.v.refute(
                    f"field {_q(f.name.value)} does not exist in the {_q(kind)}: {_q(parent)}"
                )
            assert other is not None
            self._directives(f.directives, "FIELD_DEFINITION", (f"{kind} field", parent))
            mine, expected = print_ast(f.type), _type_text(other["type"])
            if mine != expected:
                self.v.dispute(
                    f"expected type of {_q(f.name.value)}({_q(kind + ' field')}) to be "
                    f"{expected} but received {mine}"
                )
            self._arguments(f.arguments or (), other.get("args") or (), f.name.value)

        self.v.each(fields, one)

    def _arguments(self, mine: Any, theirs: Any, parent: str) -> None:
        """The reference's `validateArguments` (a field's arguments, `parent` the field's
        name, or an input object's fields, `parent` its name)."""
        mine = tuple(mine)
        dups = _duplicates([a.name.value for a in mine])
        if dups:
            self.v.refute(f"duplicate arguments: {_english(dups)}found in the field: {_q(parent)}")
        upstream = {str(a["name"]): a for a in theirs}
        required = [n for n, a in upstream.items() if a["type"].get("kind") == "NON_NULL"]
        given = [a.name.value for a in mine if not _nullable(a.type)]
        missing = _difference(required, given)
        if missing:
            self.v.refute(
                f"field: {_q(parent)} expects the following non nullable arguments to "
                f"be present: {_english(missing)}"
            )

        def one(a: InputValueDefinitionNode) -> None:
            other = upstream.get(a.name.value)
            if other is None:
                self.v.refute(
                    f"input argument {_q(a.name.value)} does not exist in the input object:"
                    f"{_q(parent)}"
                )
            assert other is not None
            preset = self._directives(
                a.directives, "INPUT_FIELD_DEFINITION", ("Input object argument", parent)
            )
            mine_type, expected = print_ast(a.type), _type_text(other["type"])
            if mine_type != expected:
                self.v.dispute(
                    f"expected type of {_q(a.name.value)}({_q('Input object argument')}) to be"
                    f" {expected} but received {mine_type}"
                )
            theirs_default = _upstream_default(other.get("defaultValue"))
            if _value_key(a.default_value) != _value_key(theirs_default):
                self.v.dispute(
                    f"expected default value of input value: {_q(a.name.value)}of input "
                    f"object {_q(parent)} to be {_default_text(theirs_default)} but "
                    f"received {_default_text(a.default_value)}"
                )
            if preset is not None:
                self._preset(a.type, a.name.value, preset)

        self.v.each(mine, one)

    # -- presets (the reference's `parsePresetDirective`, `parsePresetValue`) -------------
    def _preset(self, t: Any, name: str, d: DirectiveNode) -> None:
        args = directive_args(d)
        if not args:
            self.v.refute("no arguments found in the preset directive")
        value = args.get("value")
        if value is None:
            self.v.refute(f'preset argument "value" not found at {_q(name)}')
        assert value is not None
        static = args.get("static")
        if static is not None and not isinstance(static, BooleanValueNode):
            self.v.refute("expected preset static value to be a Boolean value")
        is_static = isinstance(static, BooleanValueNode) and static.value
        self._preset_value(t, name, is_static, value)

    def _input_type(self, name: str) -> TypeDefinitionNode | None:
        """The reference's `lookupInputType`: a scalar, enum or input object of the
        provided document (with the built-in scalars)."""
        for d in self.types:
            if d.name.value == name and isinstance(
                d,
                ScalarTypeDefinitionNode | EnumTypeDefinitionNode | InputObjectTypeDefinitionNode,
            ):
                return d
        return None

    def _preset_value(self, t: Any, name: str, static: bool, value: ValueNode) -> None:
        if isinstance(t, NonNullTypeNode):
            t = t.type
        if isinstance(t, ListTypeNode):
            if isinstance(value, ListValueNode):
                self.v.each(value.values, lambda v: self._preset_value(t.type, name, static, v))
                return
            if isinstance(value, StringValueNode) and is_session_variable(value.value):
                self.v.refute(
                    f"illegal preset value at {_q(name)}. Session arguments can only be set "
                    "for singleton values"
                )
            self._preset_value(t.type, name, static, value)
            return
        type_name = t.name.value
        d = self._input_type(type_name)
        shown = _q(print_ast(value))
        if d is None:
            self.v.refute(f"expected {_q(type_name)} to be an input type, but it's an output type")
        if isinstance(d, ScalarTypeDefinitionNode):
            if isinstance(value, EnumValueNode | ListValueNode | ObjectValueNode):
                self.v.refute(
                    f"expected preset value {shown} of type {_q(type_name)} to be a scalar value"
                )
        elif isinstance(d, EnumTypeDefinitionNode):
            if isinstance(value, EnumValueNode):
                if value.value not in [v.name.value for v in d.values or ()]:
                    self.v.refute(f"{_q(value.value)} not found in the enum: {_q(type_name)}")
            elif not (isinstance(value, StringValueNode) and is_session_variable(value.value)):
                self.v.refute(
                    f"expected preset value {shown} of type {_q(type_name)} to be an enum value"
                )
        elif isinstance(d, InputObjectTypeDefinitionNode):
            if not isinstance(value, ObjectValueNode):
                self.v.refute(
                    f"expected preset value {shown} of type {_q(type_name)} to be an input "
                    "object value"
                )
            assert isinstance(value, ObjectValueNode)
            fields = {i.name.value: i for i in d.fields or ()}

            def key(f: Any) -> None:
                found = fields.get(f.name.value)
                if found is None:
                    self.v.refute(
                        f"{_q(f.name.value)} does not exist in the input object {_q(type_name)}"
                    )
                assert found is not None
                self._preset_value(found.type, f.name.value, static, f.value)

            self.v.each(value.fields, key)


def _name(value: str) -> NameNode:
    return NameNode(value=value)


def _failed(problems: list[str]) -> SvcError:
    """The reference's `showErrors`: 400 `validation-failed` at `$.args`."""
    if len(problems) == 1:
        text = f"validation for the given role-based schema failed because {problems[0]}"
    else:
        reasons = "".join(f" • {p}\n" for p in problems)
        text = (
            "validation for the given role-based schema failed for the following "
            f"reasons:\n{reasons}"
        )
    return SvcError(ErrorCode.VALIDATION_FAILED, text, path="$.args")


def check_subset(sdl: str, data: dict[str, Any]) -> None:
    """Validate a permission's `sdl` against the remote's introspection `data` (its own,
    uncustomized names), as the reference's `resolveRoleBasedRemoteSchema`: raises 400
    `validation-failed` with the reference's reasons (see the module), or 400
    `remote-schema-error` "Could not find type with name …" when the SDL names a type it
    does not define (the reference's `buildRemoteParser`, run on the new permission)."""
    try:
        doc = parse(sdl, no_location=True)
    except GraphQLError as exc:
        raise _failed([exc.message]) from None
    problems = _Check(doc, data).run()
    if problems:
        raise _failed(problems)
    missing = _undefined_type(doc)
    if missing is not None:
        raise SvcError(
            ErrorCode.REMOTE_SCHEMA_ERROR,
            f"Could not find type with name {_q(missing)}",
            path="$.args",
        )


_PROBLEMS: dict[tuple[str, int], tuple[dict[str, Any], str | None]] = {}


def permission_problem(sdl: str, data: dict[str, Any]) -> str | None:
    """Why a permission's `sdl` is not valid against the remote's introspection `data`
    (`check_subset`'s message), None when it is; remembered per (SDL, introspection). The
    reference checks every permission at each schema build: one that fails is an
    inconsistent `remote_schema_permission` and gives its role nothing of the remote
    (`buildRemoteSchemaPermissions`)."""
    key = (sdl, id(data))
    hit = _PROBLEMS.get(key)
    if hit is not None and hit[0] is data:
        return hit[1]
    try:
        check_subset(sdl, data)
        problem = None
    except SvcError as exc:
        problem = exc.message
    if len(_PROBLEMS) > 1024:
        _PROBLEMS.clear()
    _PROBLEMS[key] = (data, problem)
    return problem


def permission_issues(name: str, raw: Any, data: dict[str, Any]) -> list[Inconsistency]:
    """The permissions of remote `name` (`raw`: its metadata entry) that its introspection
    `data` refutes, as the reference lists them: `type: remote_schema_permission`, named
    `remote_schema_permission <role> permission in remote schema <name>` (`moiName`), the
    definition the `add_remote_schema_permissions` arguments."""
    out = []
    perms = raw.get("permissions") if isinstance(raw, dict) else None
    for perm in perms or ():
        if not isinstance(perm, dict):
            continue
        definition = perm.get("definition")
        sdl = definition.get("schema") if isinstance(definition, dict) else None
        problem = permission_problem(str(sdl or ""), data)
        if problem is None:
            continue
        role = perm.get("role")
        out.append(
            Inconsistency(
                "remote_schema_permission",
                {
                    "remote_schema": name,
                    "role": role,
                    "definition": definition,
                    "comment": perm.get("comment"),
                },
                f"Inconsistent object: {problem}",
                name=f"remote_schema_permission {role} permission in remote schema {name}",
            )
        )
    return out


def _undefined_type(doc: DocumentNode) -> str | None:
    """The first type `doc` refers to (field, argument or input field types, interfaces,
    union members, root types) without defining it."""
    defined = {d.name.value for d in doc.definitions if isinstance(d, TypeDefinitionNode)}
    defined.update(BUILTIN)
    for d in doc.definitions:
        names: list[str] = []
        if isinstance(d, SchemaDefinitionNode):
            names = [o.type.name.value for o in d.operation_types or ()]
        elif isinstance(d, ObjectTypeDefinitionNode | InterfaceTypeDefinitionNode):
            names = [i.name.value for i in d.interfaces or ()]
            for f in d.fields or ():
                names.append(base_name(f.type))
                names.extend(base_name(a.type) for a in f.arguments or ())
        elif isinstance(d, InputObjectTypeDefinitionNode):
            names = [base_name(i.type) for i in d.fields or ()]
        elif isinstance(d, UnionTypeDefinitionNode):
            names = [m.name.value for m in d.types or ()]
        for n in names:
            if n not in defined:
                return n
    return None
