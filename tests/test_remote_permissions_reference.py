"""Remote schema permissions on a real `svc serve` with the corpus's remote fixture server
(`tests/fixture_servers/remote_node.py`, the reference's `remote_schema_perms.js` on port
4020) and `SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS=true`:

- presets inside an argument's input objects (the reference's input parsers,
  `server/src-lib/Hasura/GraphQL/Schema/Remote.hs`: `argumentsParser`,
  `remoteInputObjectParser`; session values as its `resolveRemoteVariable`,
  `server/src-lib/Hasura/GraphQL/Execute/Remote.hs`);
- `update_remote_schema` changing the customization: every role with a permission sees
  the new names at once, its SDL (in the remote's own names) still valid (the reference
  validates permissions against `_rscIntroOriginal`,
  `server/src-lib/Hasura/RemoteSchema/MetadataAPI/Permission.hs`, and customizes the
  role's schema like the remote's, `buildRemoteParser` then `customizeFieldParsers`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixture_servers import CORPUS_ENV, remote_node
from tests.support import ServerProcess, create_database

ENV = {**CORPUS_ENV, "SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS": "true"}
REMOTE = "http://localhost:4020"


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    with remote_node.serve():
        server = ServerProcess(create_database(pg_url), env=ENV)
        try:
            yield server
        finally:
            server.stop()


def q(srv: ServerProcess, body: dict[str, Any], status: int = 200) -> Any:
    resp = srv.client.post("/v1/metadata", json=body)
    assert resp.status_code == status, resp.text
    return resp.json()


def gql(srv: ServerProcess, query: str, headers: dict[str, str], **kw: Any) -> Any:
    resp = srv.client.post("/v1/graphql", json={"query": query, **kw}, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()


def setup(srv: ServerProcess, sdl: str, **definition: Any) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    q(
        srv,
        {
            "type": "add_remote_schema",
            "args": {"name": "perms", "definition": {"url": REMOTE, **definition}},
        },
    )
    args = {"remote_schema": "perms", "role": "user", "definition": {"schema": sdl}}
    q(srv, {"type": "add_remote_schema_permissions", "args": args})


NESTED = """
type Query {
  messages(where: MessageWhereInpObj, includes: IncludeInpObj): [Message]
  hello: String
}
type Message { id: Int!  name: String! }
input MessageWhereInpObj { id: IntCompareObj  name: StringCompareObj }
input IntCompareObj { gt: Int @preset(value: "x-svc-min")  lt: Int }
input StringCompareObj { eq: String @preset(value: "alice") }
input IncludeInpObj { id: [Int] @preset(value: [1, 2, 3])  name: [String] }
"""
USER = {"X-Svc-Role": "user", "X-Svc-Min": "0"}


def ids(out: Any) -> list[int]:
    assert "errors" not in out, out
    return [m["id"] for m in out["data"]["messages"]]


def test_presets_inside_input_objects(srv: ServerProcess) -> None:
    """`argumentsParser`: a preset input field is always added to the object the client
    gives (literal, variable, list element); `remoteInputObjectParser`: an object all of
    whose fields are preset (`StringCompareObj`) is hidden and always sent with its
    parent; an argument the client leaves out gets nothing."""
    setup(srv, NESTED)
    # where.id.gt from the session (0), where.name.eq = "alice" (hidden, always sent)
    assert ids(gql(srv, "{ messages(where: {id: {lt: 9}}) { id } }", USER)) == [1, 3]
    assert ids(gql(srv, "{ messages(where: {id: {lt: 3}}) { id } }", USER)) == [1]
    minimum = {**USER, "X-Svc-Min": "1"}
    assert ids(gql(srv, "{ messages(where: {id: {lt: 9}}) { id } }", minimum)) == [3]
    # the same through a variable: its value is written into the request with the presets
    by_var = gql(
        srv,
        "query Q($w: MessageWhereInpObj) { messages(where: $w) { id } }",
        USER,
        variables={"w": {"id": {"lt": 9}}},
    )
    assert ids(by_var) == [1, 3]
    nested_var = gql(
        srv,
        "query Q($n: Int) { messages(where: {id: {lt: $n}}) { id } }",
        USER,
        variables={"n": 3},
    )
    assert ids(nested_var) == [1]
    # where left out: no preset inside it is sent
    assert ids(gql(srv, "{ messages { id } }", USER)) == [1, 2, 3]
    # includes.id preset [1, 2, 3] kept beside the client's names
    inc = gql(srv, '{ messages(includes: {name: ["bob", "alice"]}) { id } }', USER)
    assert ids(inc) == [1, 2, 3]
    # a hidden field cannot be given
    hidden = gql(srv, '{ messages(where: {name: {eq: "bob"}}) { id } }', USER)
    assert hidden["errors"][0]["extensions"]["code"] == "validation-failed"
    hidden = gql(srv, "{ messages(where: {id: {gt: 2}}) { id } }", USER)
    assert hidden["errors"][0]["extensions"]["code"] == "validation-failed"


def test_session_preset_errors(srv: ServerProcess) -> None:
    """`resolveRemoteVariable`: a missing session variable is 400 `not-found`, a value its
    scalar refuses `coercion-error`, with the reference's messages (its
    `argument_presets/execution_with_session_preset_args.yaml`)."""
    setup(srv, NESTED)
    missing = gql(srv, "{ messages(where: {id: {lt: 9}}) { id } }", {"X-Svc-Role": "user"})
    assert missing["errors"][0]["extensions"] == {"code": "not-found", "path": "$"}
    assert missing["errors"][0]["message"] == '"x-svc-min" session variable expected, but not found'
    bad = gql(srv, "{ messages(where: {id: {lt: 9}}) { id } }", {**USER, "X-Svc-Min": "x"})
    assert bad["errors"][0]["extensions"] == {"code": "coercion-error", "path": "$"}
    assert bad["errors"][0]["message"] == '"x" cannot be coerced into an Int value'
    # a request not touching the preset needs no session variable
    assert gql(srv, "{ hello }", {"X-Svc-Role": "user"}) == {"data": {"hello": "world"}}


STATIC = """
type Query { user(user_id: Int! @preset(value: "x-svc-user-id")): User }
type User {
  user_id: Int
  gimmeText(text: String @preset(value: "x-svc-user-id", static: true)): String
}
"""


def test_static_preset_is_literal(srv: ServerProcess) -> None:
    """Note [Remote Schema Argument Presets] (`SchemaCache/Permission.hs`): `static: true`
    sends a session-variable-like string as written."""
    setup(srv, STATIC)
    out = gql(srv, "{ user { user_id gimmeText } }", {"X-Svc-Role": "user", "X-Svc-User-Id": "4"})
    assert out == {"data": {"user": {"user_id": 4, "gimmeText": "x-svc-user-id"}}}


ROLE = """
type Query { user(user_id: Int! @preset(value: "x-svc-user-id")): User  hello: String }
type User { user_id: Int  gimmeText(text: String): String }
"""


def test_update_remote_schema_customization_reaches_every_role(srv: ServerProcess) -> None:
    """`update_remote_schema` with a new `customization`: the permission (the remote's own
    names) still validates, and the role at once sees the namespace, type prefix and field
    mapping; the preset still applies."""
    setup(srv, ROLE)
    reader = {"remote_schema": "perms", "role": "reader", "definition": {"schema": ROLE}}
    q(srv, {"type": "add_remote_schema_permissions", "args": reader})
    headers = {"X-Svc-Role": "user", "X-Svc-User-Id": "5"}
    before = gql(srv, "{ user { user_id } }", headers)
    assert before == {"data": {"user": {"user_id": 5}}}
    custom = {
        "root_fields_namespace": "ns",
        "type_names": {"prefix": "P_"},
        "field_names": [{"parent_type": "User", "mapping": {"gimmeText": "text"}}],
    }
    q(
        srv,
        {
            "type": "update_remote_schema",
            "args": {
                "name": "perms",
                "definition": {"url": REMOTE, "customization": custom},
            },
        },
    )
    query = '{ ns { user { __typename user_id text(text: "hi") } hello } }'
    expected = {
        "data": {
            "ns": {"user": {"__typename": "P_User", "user_id": 5, "text": "hi"}, "hello": "world"}
        }
    }
    for role in ("user", "reader"):
        assert gql(srv, query, {**headers, "X-Svc-Role": role}) == expected
        old = gql(srv, "{ user { user_id } }", {**headers, "X-Svc-Role": role})
        assert old["errors"][0]["extensions"]["code"] == "validation-failed"
    typename = gql(srv, '{ __type(name: "P_User") { fields { name } } }', headers)
    assert typename["data"]["__type"]["fields"] == [{"name": "user_id"}, {"name": "text"}]
    # back without customization: the old names again, for every role
    q(
        srv,
        {"type": "update_remote_schema", "args": {"name": "perms", "definition": {"url": REMOTE}}},
    )
    for role in ("user", "reader"):
        again = gql(srv, "{ user { user_id } }", {**headers, "X-Svc-Role": role})
        assert again == {"data": {"user": {"user_id": 5}}}


def test_update_remote_schema_refused_when_a_permission_breaks(srv: ServerProcess) -> None:
    """`runUpdateRemoteSchema` (`RemoteSchema/MetadataAPI/Core.hs`): the new schema is
    built with the permissions kept; one no longer valid is a new inconsistency, refused
    by `withNewInconsistentObjsCheck` (400 `unexpected`, the objects in `internal`); the
    reference test `update_remote_schema/update_schema_error.yaml` (port 4022's `user_id`
    is a Float)."""
    setup(srv, ROLE)
    body = {
        "type": "update_remote_schema",
        "args": {"name": "perms", "definition": {"url": "http://localhost:4022"}},
    }
    out = q(srv, body, 400)
    assert out["code"] == "unexpected"
    assert out["error"] == "cannot continue due to new inconsistent metadata"
    [broken] = out["internal"]
    assert broken["type"] == "remote_schema_permission"
    assert broken["name"] == "remote_schema_permission user permission in remote schema perms"
    assert broken["reason"] == (
        "Inconsistent object: validation for the given role-based schema failed for the "
        "following reasons:\n"
        ' • expected type of "user_id"("Input object argument") to be Float! but received'
        " Int!\n"
        ' • expected type of "user_id"("Object field") to be Float but received Int\n'
    )
    # nothing changed
    out = gql(srv, "{ user { user_id } }", {"X-Svc-Role": "user", "X-Svc-User-Id": "5"})
    assert out == {"data": {"user": {"user_id": 5}}}


def test_no_permission_for_admin(srv: ServerProcess) -> None:
    """`resolveRoleBasedRemoteSchema` (`RemoteSchema/SchemaCache/Permission.hs`): 400
    `constraint-violation` "cannot define permission for admin role"."""
    setup(srv, ROLE)
    args = {"remote_schema": "perms", "role": "admin", "definition": {"schema": ROLE}}
    out = q(srv, {"type": "add_remote_schema_permissions", "args": args}, 400)
    assert (out["code"], out["error"]) == (
        "constraint-violation",
        "cannot define permission for admin role",
    )


# The reference's argument_presets/add_permission_with_static_preset_argument.yaml, with
# `includes` (its later version's variable case) added to `messages`.
STATIC_PRESETS = """
type User {
  user_id: Int
  userMessages(whered: MessageWhereInpObj): [Message]
  gimmeText(text: String @preset(value: "world")): String
}
interface Communication { id: Int!  msg: String! }
type Message implements Communication { id: Int!  name: String!  msg: String!  errorMsg: String }
input MessageWhereInpObj { id: IntCompareObj @preset(value: {eq: 2})  name: StringCompareObj }
input IntCompareObj { eq : Int  gt : Int  lt : Int }
input StringCompareObj { eq : String }
input IncludeInpObj { id: [Int] @preset(value: [1, 2])  name: [String] }
type Photo { height : Int  width  : Int }
input Dimensions { height : Int @preset(value: 42)  width  : Int @preset(value: 101) }
type Query {
  hello: String
  messages(
    where: MessageWhereInpObj @preset(value: {id: {eq: 1}})
    includes: IncludeInpObj
  ): [Message]
  user(user_id: Int! @preset(value: 2)): User
  users(user_ids: [Int]!): [User]
  message(id: Int!) : Message
  communications(id: Int): [Communication]
  profilePicture(dimensions: Dimensions): Photo
}
schema { query: Query }
"""


def test_reference_static_preset_execution(srv: ServerProcess) -> None:
    """The steps of the reference's
    `argument_presets/execution_with_static_preset_args.yaml`."""
    setup(srv, STATIC_PRESETS)
    user = {"X-Svc-Role": "user"}
    out = gql(srv, "{ messages { id name msg } }", user)
    assert out == {"data": {"messages": [{"id": 1, "name": "alice", "msg": "You win!"}]}}
    out = gql(srv, "{ messages(where: {id: {eq: 2}}) { id name msg } }", user)
    assert out["errors"][0]["extensions"]["code"] == "validation-failed"
    # (the reference says '"messages" has no argument named "where"'; svc answers
    # graphql-core's validation messages, as for every field)
    out = gql(srv, "{ user { user_id userMessages(whered: {}) { id msg } gimmeText } }", user)
    assert out == {
        "data": {
            "user": {
                "user_id": 2,
                "userMessages": [{"id": 2, "msg": "You lose!"}],
                "gimmeText": "world",
            }
        }
    }
    out = gql(srv, '{ user { userMessages(whered: {name: {eq: "bob"}}) { id msg } } }', user)
    assert out == {"data": {"user": {"userMessages": [{"id": 2, "msg": "You lose!"}]}}}
    out = gql(
        srv,
        '{ __type(name: "Dimensions") { name fields { name type { name } } }'
        " profilePicture { width } }",
        user,
    )
    assert out == {"data": {"__type": None, "profilePicture": {"width": 101}}}
    out = gql(
        srv,
        "query($i: IncludeInpObj) { messages(includes: $i) { id } }",
        user,
        variables={"i": {"name": ["alice"]}},
    )
    assert out == {"data": {"messages": [{"id": 1}]}}


def test_permission_the_remote_refutes_is_inconsistent(srv: ServerProcess) -> None:
    """`buildRemoteSchemaPermissions` (`RemoteSchema/SchemaCache/Build.hs`): each
    permission is checked against the remote at every build; one that fails is an
    inconsistent `remote_schema_permission` (`moiName`: "remote_schema_permission <role>
    permission in remote schema <name>") and its role sees nothing of the remote."""
    setup(srv, ROLE)
    md = q(srv, {"type": "export_metadata", "args": {}})
    md["remote_schemas"][0]["definition"]["url"] = "http://localhost:4022"
    body = {"metadata": md, "allow_inconsistent_metadata": True}
    q(srv, {"type": "replace_metadata", "args": body})
    issues = q(srv, {"type": "get_inconsistent_metadata", "args": {}})["inconsistent_objects"]
    assert [(i["type"], i["name"]) for i in issues] == [
        (
            "remote_schema_permission",
            "remote_schema_permission user permission in remote schema perms",
        )
    ]
    assert issues[0]["definition"]["role"] == "user"
    assert issues[0]["reason"].startswith(
        "Inconsistent object: validation for the given role-based schema failed"
    )
    hidden = gql(srv, "{ hello }", {"X-Svc-Role": "user"})
    assert hidden["errors"][0]["extensions"]["code"] == "validation-failed"
    assert gql(srv, "{ hello }", {}) == {"data": {"hello": "world"}}  # admin
