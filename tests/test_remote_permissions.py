"""Remote schema permissions without a server (issue 17): a role's SDL is checked against
the remote's introspection exactly as the reference's `validateRemoteSchema`
(`server/src-lib/Hasura/RemoteSchema/SchemaCache/Permission.hs`, each case below names the
error constructor it follows), and the role's schema hides its presets as the reference's
input parsers do (`server/src-lib/Hasura/GraphQL/Schema/Remote.hs`). The remote is the
graphql-core schema of `tests/fixture_servers/remote_node.py` (the reference's
`remote_schema_perms.js`)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import yaml
from graphql import build_schema, get_introspection_query, graphql_sync

from svc.errors import SvcError
from svc.ir.role_view import RemoteAccess, remote_access
from svc.metadata.remote_schemas import RemoteSchema
from svc.schema.remote_permission_check import check_subset
from svc.schema.remote_permissions import Preset, role_permission, role_schema
from tests.fixture_servers.remote_node import node_perms
from tests.support import SHARED

PERMISSIONS = SHARED / "conformance" / "remote_schemas" / "permissions"
PREFIX = "validation for the given role-based schema failed "


def introspection(schema: Any = None) -> dict[str, Any]:
    result = graphql_sync(schema or node_perms("Int"), get_introspection_query(descriptions=True))
    assert result.data is not None
    return result.data


def refusal(sdl: str, data: dict[str, Any] | None = None) -> str:
    """The message `check_subset` refuses `sdl` with (400 `validation-failed`)."""
    with pytest.raises(SvcError) as caught:
        check_subset(sdl, data or introspection())
    assert caught.value.code == "validation-failed"
    assert caught.value.path == "$.args"
    return caught.value.message


def because(reason: str) -> str:
    return PREFIX + "because " + reason


def reasons(*found: str) -> str:
    return PREFIX + "for the following reasons:\n" + "".join(f" • {r}\n" for r in found)


VALID = """
type User { user_id: Int  gimmeText(text: String @preset(value: "x-svc-user-id")): String }
type Query { hello: String  user(user_id: Int! @preset(value: 2)): User }
"""


def test_valid_subset_passes_and_hides_presets() -> None:
    """Note [Remote Schema Argument Presets] (Permission.hs): preset arguments leave the
    role's schema and are kept with their value."""
    check_subset(VALID, introspection())
    perm = role_permission(VALID)
    assert perm is not None
    assert set(perm.presets) == {("Query", "user", "user_id"), ("User", "gimmeText", "text")}
    assert perm.presets[("Query", "user", "user_id")].value.value == "2"  # type: ignore[attr-defined]
    assert perm.schema.query_type is not None
    assert "user_id" not in perm.schema.query_type.fields["user"].args
    assert "user_id" in perm.full.query_type.fields["user"].args  # type: ignore[union-attr]


# (SDL, the message): each follows one `RoleBasedSchemaValidationError` constructor and its
# `showRoleBasedSchemaValidationError` text in Permission.hs.
CASES = [
    # TypeDoesNotExist Object
    (
        "type Query { hello: String } type Nope { a: Int }",
        because('"Object": "Nope" does not exist in the upstream remote schema'),
    ),
    # TypeDoesNotExist: looked up by kind, an input object is no object
    (
        "type Query { hello: String } type Dimensions { height: Int }",
        because('"Object": "Dimensions" does not exist in the upstream remote schema'),
    ),
    # NonMatchingType (Field ObjectField)
    (
        "type Query { hello: Int }",
        because('expected type of "hello"("Object field") to be String but received Int'),
    ),
    # NonExistingField
    (
        "type Query { nope: String }",
        because('field "nope" does not exist in the "Object": "Query"'),
    ),
    # MissingNonNullableArguments (a field's: named by the field)
    (
        "type Query { user: User } type User { user_id: Int }",
        because(
            'field: "user" expects the following non nullable arguments to be present: "user_id"'
        ),
    ),
    # MissingNonNullableArguments: a nullable argument for a non-null one is missing too
    (
        "type Query { user(user_id: Int): User } type User { user_id: Int }",
        because(
            'field: "user" expects the following non nullable arguments to be present: "user_id"'
        ),
    ),
    # NonExistingInputArgument (a field argument: "input object" is the field)
    (
        "type Query { hello(x: Int): String }",
        because('input argument "x" does not exist in the input object:"hello"'),
    ),
    # NonMatchingType (Argument InputObjectArgument), on a field argument
    (
        "type Query { communications(id: String): [Communication] }"
        " interface Communication { id: Int! }",
        because('expected type of "id"("Input object argument") to be Int but received String'),
    ),
    # NonExistingInputArgument in an input object
    (
        "type Query { hello: String } input IntCompareObj { eq: Int  ne: Int }",
        because('input argument "ne" does not exist in the input object:"IntCompareObj"'),
    ),
    # NonExistingEnumValues + DuplicateEnumValues (refuted first)
    (
        "type Query { hello: String } enum MessageStatus { READ IDLE NONE }",
        because(
            'enum "MessageStatus" contains the following enum values that do not exist in '
            'the corresponding upstream remote enum: "IDLE" and "NONE"'
        ),
    ),
    (
        "type Query { hello: String } enum MessageStatus { READ READ }",
        because('duplicate enum values: "READ" found in the "MessageStatus" enum'),
    ),
    # NonExistingUnionMemberTypes
    (
        "type Query { hello: String } union SearchResult = Photo | Message | Book",
        because(
            'union "SearchResult" contains members which do not exist in the members of '
            'the remote schema union :"Message" and "Book"'
        ),
    ),
    # TypeDoesNotExist Scalar (built-in scalars need no upstream twin)
    (
        "type Query { hello: String } scalar Time scalar Int",
        because('duplicate type names found: "Int"'),
    ),
    # DuplicateTypeNames
    (
        "type Query { hello: String } type Query { hello: String }",
        because('duplicate type names found: "Query"'),
    ),
    # MultipleSchemaDefinitionsFound
    (
        "type Query { hello: String } schema { query: Query } schema { query: Query }",
        because("multiple schema definitions found"),
    ),
    # DuplicateFields
    (
        "type Query { hello: String hello: String }",
        because('duplicate fields: "hello"found in the "Object" "Query"'),
    ),
    # DuplicateArguments
    (
        "type Query { communications(id: Int, id: Int): [Communication] }"
        " interface Communication { id: Int! }",
        because('duplicate arguments: "id"found in the field: "communications"'),
    ),
    # CustomInterfacesNotAllowed (and the interface itself does not exist)
    (
        "type Query { hello: String } interface Aged { age: Int }"
        " type Person implements Aged { age: Int }",
        reasons(
            '"Interface": "Aged" does not exist in the upstream remote schema',
            'custom interfaces are not supported. Object"Person" implements the following '
            'custom interfaces: "Aged"',
        ),
    ),
    # TypeDoesNotExist Directive: an introspection has no applied directives
    (
        'type Query { hello: String @deprecated(reason: "x") }',
        because('"Directive": "deprecated" does not exist in the upstream remote schema'),
    ),
    # NonMatchingDefaultValue (note the reference's missing space after the name)
    (
        "type Query { communications(id: Int = 3): [Communication] }"
        " interface Communication { id: Int! }",
        because(
            'expected default value of input value: "id"of input object "communications" '
            "to be  but received 3"
        ),
    ),
    # InvalidPresetDirectiveLocation (a dispute: the field's other reasons follow)
    (
        "type Query { hello: Int @preset(value: 1) }",
        reasons(
            "Preset directives can be defined only on INPUT_FIELD_DEFINITION or "
            "ARGUMENT_DEFINITION",
            'expected type of "hello"("Object field") to be String but received Int',
        ),
    ),
    # MultiplePresetDirectives
    (
        "type Query { communications(id: Int @preset(value: 1) @preset(value: 2)):"
        " [Communication] } interface Communication { id: Int! }",
        because('found multiple preset directives at "Input object argument" "communications"'),
    ),
    # NoPresetArgumentFound / InvalidPresetArgument / InvalidStaticValue
    (
        "type Query { communications(id: Int @preset): [Communication] }"
        " interface Communication { id: Int! }",
        because("no arguments found in the preset directive"),
    ),
    (
        "type Query { communications(id: Int @preset(static: true)): [Communication] }"
        " interface Communication { id: Int! }",
        because('preset argument "value" not found at "id"'),
    ),
    (
        'type Query { communications(id: Int @preset(value: 1, static: "yes")):'
        " [Communication] } interface Communication { id: Int! }",
        because("expected preset static value to be a Boolean value"),
    ),
    # ExpectedScalarValue / ExpectedInputObject / KeyDoesNotExistInInputObject
    (
        "type Query { communications(id: Int @preset(value: {a: 1})): [Communication] }"
        " interface Communication { id: Int! }",
        because('expected preset value "{a: 1}" of type "Int" to be a scalar value'),
    ),
    (
        "type Query { profilePicture(dimensions: Dimensions @preset(value: 2)): Photo }"
        " input Dimensions { height: Int } type Photo { height: Int }",
        because('expected preset value "2" of type "Dimensions" to be an input object value'),
    ),
    (
        "type Query { profilePicture(dimensions: Dimensions @preset(value: {depth: 2})):"
        " Photo } input Dimensions { height: Int } type Photo { height: Int }",
        because('"depth" does not exist in the input object "Dimensions"'),
    ),
    # ExpectedInputTypeButGotOutputType: the preset's type must be in the role's SDL
    (
        "type Query { profilePicture(dimensions: Dimensions @preset(value: {height: 2})):"
        " Photo } type Photo { height: Int }",
        because('expected "Dimensions" to be an input type, but it\'s an output type'),
    ),
    # DisallowSessionVarForListType
    (
        'type Query { users(user_ids: [Int]! @preset(value: "x-svc-ids")): [User] }'
        " type User { user_id: Int }",
        because(
            'illegal preset value at "user_ids". Session arguments can only be set for '
            "singleton values"
        ),
    ),
    # EnumValueNotFound / ExpectedEnumValue
    (
        "type Query { status(s: MessageStatus @preset(value: IDLE)): String }"
        " enum MessageStatus { READ }",
        because('"IDLE" not found in the enum: "MessageStatus"'),
    ),
]

STATUS_REMOTE = build_schema(
    "enum MessageStatus { READ SENT } type Query { status(s: MessageStatus): String }"
)


@pytest.mark.parametrize(("sdl", "message"), CASES)
def test_each_refusal_has_the_reference_message(sdl: str, message: str) -> None:
    data = introspection(STATUS_REMOTE) if "status(" in sdl else None
    assert refusal(sdl, data) == message


def test_enum_preset_must_be_an_enum_value() -> None:
    """ExpectedEnumValue (Permission.hs `parsePresetValue`): a string that names no
    session variable is no enum value; one that does is read at execution."""
    sdl = (
        'type Query { status(s: MessageStatus @preset(value: "READ")): String }'
        " enum MessageStatus { READ }"
    )
    data = introspection(STATUS_REMOTE)
    assert refusal(sdl, data) == because(
        'expected preset value ""READ"" of type "MessageStatus" to be an enum value'
    )
    check_subset(sdl.replace('"READ"', '"x-svc-status"'), data)


def test_valid_variants_pass() -> None:
    """What Permission.hs accepts: presets nested in input objects and lists (a singleton
    for a list), `static: true` session-like strings, scalars a preset need not match
    (`PresetScalar` accepts any non-enum, non-list, non-object literal), matching
    defaults, the built-in scalars, a subset of interfaces an object implements."""
    sdl = """
    type Query {
      messages(where: MessageWhereInpObj, includes: IncludeInpObj): [Message]
      users(user_ids: [Int]! @preset(value: 3)): [User]
      user(user_id: Int! @preset(value: "x-svc-user-id", static: true)): User
      hello: String
    }
    type User { user_id: Int  gimmeText(text: String @preset(value: 5)): String }
    interface Communication { id: Int! }
    type Message implements Communication { id: Int! }
    type Person { age: Int }
    input MessageWhereInpObj { id: IntCompareObj @preset(value: {eq: "x-svc-id", gt: 0}) }
    input IntCompareObj { eq: Int  gt: Int }
    input IncludeInpObj { id: [Int] @preset(value: [1, 2])  name: [String] }
    scalar String
    """
    with pytest.raises(SvcError):  # `scalar String` is a duplicate of the built-in one
        check_subset(sdl, introspection())
    check_subset(sdl.replace("scalar String", ""), introspection())


def test_undefined_type_is_refused_as_the_parser_build_does() -> None:
    """`buildRemoteParser` (Schema/Remote.hs) on the role's document: "Could not find type
    with name" (400 `remote-schema-error`)."""
    with pytest.raises(SvcError) as caught:
        check_subset("type Query { user(user_id: Int!): User }", introspection())
    assert caught.value.code == "remote-schema-error"
    assert caught.value.message == 'Could not find type with name "User"'


def corpus_permission_bodies() -> list[tuple[str, int, str, Any]]:
    """(case, expected status, SDL, expected answer) of the corpus's
    add_remote_schema_permissions steps (the reference's `role_based_schema_*.yaml` and
    `argument_preset_validation.yaml` under server/tests-py/queries/remote_schemas/permissions)."""
    if not PERMISSIONS.is_dir():
        return []
    out = []
    for path in [
        *sorted(PERMISSIONS.glob("role_based_*.yaml")),
        PERMISSIONS / "argument_preset_validation.yaml",
    ]:
        doc = yaml.safe_load(path.read_text())
        for i, step in enumerate(doc if isinstance(doc, list) else [doc]):
            query = step.get("query") or {}
            if query.get("type") == "add_remote_schema_permissions":
                sdl = query["args"]["definition"]["schema"]
                out.append((f"{path.name}#{i}", step["status"], sdl, step.get("response")))
    return out


@pytest.mark.parametrize(("case", "status", "sdl", "response"), corpus_permission_bodies())
def test_corpus_validations(case: str, status: int, sdl: str, response: Any) -> None:
    if status == 200:
        check_subset(sdl, introspection())
        return
    message = refusal(sdl)
    assert message == response["error"], case


# -- the role's schema: presets hidden (Schema/Remote.hs `argumentsParser`,
#    `remoteInputObjectParser`) --------------------------------------------------------------
NESTED = """
type Query { messages(where: MessageWhereInpObj, includes: IncludeInpObj): [Message] }
type Message { id: Int! }
input MessageWhereInpObj { id: IntCompareObj  name: StringCompareObj }
input IntCompareObj { eq: Int @preset(value: 1)  gt: Int }
input StringCompareObj { eq: String @preset(value: "x-svc-name") }
input IncludeInpObj { id: [Int]  name: [String] }
"""


def test_preset_input_fields_are_hidden_and_all_preset_objects_leave() -> None:
    """A preset input field leaves its input object; an input object whose every field is
    preset has no parser (`remoteInputObjectParser`'s `Left`): it leaves the schema with
    the fields of its type."""
    check_subset(NESTED, introspection())
    perm = role_permission(NESTED)
    assert perm is not None
    assert perm.implicit == {"StringCompareObj"}
    assert perm.presets[("IntCompareObj", "eq", "")] == Preset(
        perm.presets[("IntCompareObj", "eq", "")].value
    )
    schema = perm.schema
    assert set(schema.get_type("IntCompareObj").fields) == {"gt"}  # type: ignore[union-attr]
    assert set(schema.get_type("MessageWhereInpObj").fields) == {"id"}  # type: ignore[union-attr]
    assert schema.get_type("StringCompareObj") is None
    assert set(perm.full.get_type("StringCompareObj").fields) == {"eq"}  # type: ignore[union-attr]


def test_role_without_permission_sees_nothing() -> None:
    entry = RemoteSchema(
        name="r",
        definition={"url": "http://x"},  # type: ignore[arg-type]
        permissions=({"role": "user", "definition": {"schema": VALID}},),  # type: ignore[arg-type]
    )
    entry = msgspec.convert(msgspec.to_builtins(entry), RemoteSchema)
    assert remote_access(entry, "other", enforced=True, parents={}) == RemoteAccess(whole=False)
    assert remote_access(entry, "other", enforced=False, parents={}).whole
    assert remote_access(entry, "admin", enforced=True, parents={}).whole
    access = remote_access(entry, "user", enforced=True, parents={})
    assert not access.whole and access.sdl is not None
    user = role_schema(access.sdl)
    assert user is not None and user.query_type is not None
    assert set(user.query_type.fields) == {"hello", "user"}


# -- presets at execution (Schema/Remote.hs `argumentsParser`, Execute/Remote.hs
#    `resolveRemoteVariable`), without a server: the request a role's fields become ------
def sent(sdl: str, query: str, session: dict[str, str], variables: Any = None) -> str:
    """The root fields of `query` as sent for a role with permission `sdl` (whitespace
    left out)."""
    from graphql import FieldNode, OperationDefinitionNode, parse, print_ast

    from svc.api.remote_presets import _Injector

    perm = role_permission(sdl)
    assert perm is not None
    op = parse(query).definitions[0]
    assert isinstance(op, OperationDefinitionNode)
    inject = _Injector(perm, session, variables or {}, tuple(op.variable_definitions or ()))
    nodes = [n for n in op.selection_set.selections if isinstance(n, FieldNode)]
    return "".join("".join(print_ast(inject.field(n, perm.full.query_type)).split()) for n in nodes)


PRESETS = """
enum Status { READ SENT }
input Filter {
  status: Status @preset(value: "x-svc-status")
  seen: Boolean @preset(value: "x-svc-seen")
  score: Float @preset(value: "x-svc-score")
  tag: String
}
input Fixed { a: Int @preset(value: 1) }
input Outer { fixed: Fixed  inner: [Filter]  n: Int }
type Query { find(f: [Filter], o: Outer = {n: 1}): Int  fixed(x: Fixed!): Int }
"""
SESSION = {"x-svc-status": "SENT", "x-svc-seen": "true", "x-svc-score": "2.5"}


def test_presets_in_lists_defaults_and_all_preset_objects() -> None:
    """Each element of a list of input objects gets the presets; an argument left out
    gets its default value with the presets (`fieldWithDefault`); an all-preset input
    object is always sent, inside its parent too (`remoteInputObjectParser`'s `Left`)."""
    out = sent(PRESETS, '{ find(f: [{tag: "a"}, {}]) }', SESSION)
    assert out == (
        'find(f:[{status:SENT,seen:true,score:2.5,tag:"a"},{status:SENT,seen:true,score:2.5}]'
        "o:{fixed:{a:1},n:1})"
    )
    assert sent(PRESETS, "{ fixed }", {}) == "fixed(x:{a:1})"
    by_var = sent(PRESETS, "query($o: Outer) { find(o: $o) }", SESSION, {"o": {"n": 3}})
    assert by_var == "find(o:{fixed:{a:1},n:3})"
    unset = sent(PRESETS, "query($o: Outer) { find(o: $o) }", SESSION)
    assert unset == "find"
    schema = role_schema(PRESETS)
    assert schema is not None and schema.get_type("Fixed") is None
    assert set(schema.get_type("Outer").fields) == {"inner", "n"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("session", "code", "message"),
    [
        (
            {**SESSION, "x-svc-status": "NEW"},
            "coercion-error",
            '"NEW" is not one of the valid enum values',
        ),
        ({**SESSION, "x-svc-status": "a b"}, "coercion-error", '"a b" is not a valid GraphQL name'),
        (
            {**SESSION, "x-svc-seen": "yes"},
            "coercion-error",
            '"yes" cannot be coerced into a Boolean value',
        ),
        (
            {**SESSION, "x-svc-score": "x"},
            "coercion-error",
            '"x" cannot be coerced into a Float value',
        ),
        (
            {"x-svc-seen": "true"},
            "not-found",
            '"x-svc-status" session variable expected, but not found',
        ),
    ],
)
def test_session_values_coerced_as_the_reference(
    session: dict[str, str], code: str, message: str
) -> None:
    """`resolveRemoteVariable`: enum values checked, Boolean only `true`/`false`, Int and
    Float read as numbers, a missing variable `not-found`."""
    with pytest.raises(SvcError) as caught:
        sent(PRESETS, '{ find(f: {tag: "a"}) }', session)
    assert (caught.value.code, caught.value.message) == (code, message)
