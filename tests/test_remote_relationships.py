"""Remote relationships as the reference defines them (issue 27), on a real `svc serve`
and a real remote GraphQL server (the `node_4000` schema of FIXTURES.md §8, started here
on a free port so this module never shares a port with the corpus fixtures)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixture_servers.remote_graphql import GraphQLHttp
from tests.fixture_servers.remote_node import _apollo, node_4000
from tests.http_fixture import HttpFixture, Reply
from tests.support import ServerProcess, create_database, free_port


@pytest.fixture(scope="module")
def node() -> Iterator[GraphQLHttp]:
    """`node_4000`'s schema on a port of its own; `.requests` records every call."""
    server = GraphQLHttp(free_port(), _apollo(node_4000()))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def srv(pg_url: str, node: GraphQLHttp) -> Iterator[ServerProcess]:
    """One svc server (default workers) with a `profiles` table of 100 rows."""
    server = ServerProcess(create_database(pg_url))
    try:
        sql = (
            "CREATE TABLE profiles (id int primary key, name text);"
            "INSERT INTO profiles SELECT g, 'p' || g FROM generate_series(1, 100) g;"
        )
        q(server, {"type": "run_sql", "args": {"sql": sql}})
        q(server, {"type": "track_table", "args": {"table": "profiles"}})
        yield server
    finally:
        server.stop()


def q(srv: ServerProcess, body: dict[str, Any], status: int = 200) -> Any:
    resp = srv.client.post("/v1/metadata", json=body)
    assert resp.status_code == status, resp.text
    return resp.json()


def gql(srv: ServerProcess, query: str, **kw: Any) -> Any:
    resp = srv.client.post("/v1/graphql", json={"query": query, **kw})
    assert resp.status_code == 200, resp.text
    return resp.json()


def calls(node: GraphQLHttp, since: int) -> list[Any]:
    """The requests `node` received after the first `since`, introspection left out."""
    return [r for r in node.requests[since:] if "__schema" not in r.body["query"]]


CUSTOMIZATION = {
    "root_fields_namespace": "nodeapi",
    "type_names": {"prefix": "N_", "mapping": {"User": "Person"}},
    "field_names": [
        {"parent_type": "Query", "prefix": "q_"},
        {"parent_type": "User", "mapping": {"userMessages": "inbox"}},
    ],
}


def test_remote_field_is_read_in_the_remotes_own_names(
    srv: ServerProcess, node: GraphQLHttp
) -> None:
    """`remote_field` names the remote's own fields whatever its customization (the
    reference's `remoteRelationshipToSchemaField` looks the path up in the role's original
    introspection, `lookupNestedFieldType`, and customizes only the result type,
    `withRemoteSchemaCustomization`); the answer's types are the customized ones."""
    url = f"http://localhost:{node.port}"
    q(
        srv,
        {
            "type": "add_remote_schema",
            "args": {"name": "n", "definition": {"url": url, "customization": CUSTOMIZATION}},
        },
    )
    relationship = {
        "type": "create_remote_relationship",
        "args": {
            "name": "inbox",
            "table": "profiles",
            "definition": {
                "to_remote_schema": {
                    "remote_schema": "n",
                    "lhs_fields": ["id"],
                    "remote_field": {
                        "user": {
                            "arguments": {"user_id": "$id"},
                            "field": {"userMessages": {"arguments": {}}},
                        }
                    },
                }
            },
        },
    }
    q(srv, relationship)
    before = len(node.requests)
    out = gql(
        srv,
        "{ profiles(order_by: {id: asc}, where: {id: {_lte: 3}}) "
        '{ id inbox(whered: {name: {eq: "alice"}}) { id msg __typename } } }',
    )
    assert "errors" not in out, out
    rows = out["data"]["profiles"]
    assert rows[0] == {"id": 1, "inbox": [{"id": 1, "msg": "You win!", "__typename": "N_Message"}]}
    assert rows[1]["inbox"] == []  # message 2 is bob's
    sent = calls(node, before)
    assert len(sent) == 1  # one call for the three rows
    text = sent[0].body["query"]
    assert "user(" in text and "userMessages(" in text and "q_user" not in text
    # The customized names are refused in remote_field, as the remote has no such field.
    bad = {**relationship["args"], "name": "bad"}
    bad["definition"] = {
        "to_remote_schema": {
            **relationship["args"]["definition"]["to_remote_schema"],
            "remote_field": {"q_user": {"arguments": {"user_id": "$id"}}},
        }
    }
    err = q(srv, {"type": "create_remote_relationship", "args": bad}, status=400)
    assert err["code"] == "remote-schema-error"
    q(srv, {"type": "delete_remote_relationship", "args": {"table": "profiles", "name": "inbox"}})
    q(srv, {"type": "remove_remote_schema", "args": {"name": "n"}})


def _to_source(name: str, table: str, target: str, kind: str, mapping: dict[str, str]) -> Any:
    return {
        "type": "pg_create_remote_relationship",
        "args": {
            "name": name,
            "source": "default",
            "table": table,
            "definition": {
                "to_source": {
                    "source": "default",
                    "table": target,
                    "relationship_type": kind,
                    "field_mapping": mapping,
                }
            },
        },
    }


def test_relationship_to_a_source_table(srv: ServerProcess) -> None:
    """`definition.to_source` (the reference's `ToSourceRelationshipDef`): an object
    relationship is a nullable object without arguments, an array one takes the table's
    arguments and has `<name>_aggregate` when aggregations are allowed
    (`remoteRelationshipToSourceField`, `Hasura/GraphQL/Schema/RemoteRelationship.hs`); the
    target's select permission applies; the field is neither a filter nor an ordering
    (a `RemoteSourceField` is a selection only)."""
    sql = (
        "CREATE TABLE posts (id int primary key, profile_id int, title text);"
        "INSERT INTO posts SELECT g, 1 + g % 3, 't' || g FROM generate_series(1, 9) g;"
    )
    q(srv, {"type": "run_sql", "args": {"sql": sql}})
    q(srv, {"type": "track_table", "args": {"table": "posts"}})
    q(srv, _to_source("writings", "profiles", "posts", "array", {"id": "profile_id"}))
    q(srv, _to_source("writer", "posts", "profiles", "object", {"profile_id": "id"}))
    for table, columns, flt in (
        ("profiles", ["id", "name"], {}),
        ("posts", ["id", "title", "profile_id"], {"id": {"_lte": 6}}),
    ):
        perm = {"role": "user", "table": table, "permission": {"columns": columns, "filter": flt}}
        if table == "posts":
            perm["permission"]["allow_aggregations"] = True
        q(srv, {"type": "pg_create_select_permission", "args": perm})
    out = gql(
        srv,
        "{ profiles(where: {id: {_lte: 2}}, order_by: {id: asc}) { id "
        "writings(order_by: {id: desc}, limit: 2) { id writer { name } } "
        "writings_aggregate { aggregate { count } } } }",
    )
    assert out == {
        "data": {
            "profiles": [
                {
                    "id": 1,
                    "writings": [
                        {"id": 9, "writer": {"name": "p1"}},
                        {"id": 6, "writer": {"name": "p1"}},
                    ],
                    "writings_aggregate": {"aggregate": {"count": 3}},
                },
                {
                    "id": 2,
                    "writings": [
                        {"id": 7, "writer": {"name": "p2"}},
                        {"id": 4, "writer": {"name": "p2"}},
                    ],
                    "writings_aggregate": {"aggregate": {"count": 3}},
                },
            ]
        }
    }
    user = {"X-Svc-Role": "user"}
    resp = srv.client.post(
        "/v1/graphql",
        json={
            "query": "{ profiles(where: {id: {_eq: 1}}) "
            "{ writings { id } writings_aggregate { aggregate { count } } } }"
        },
        headers=user,
    )
    assert resp.json() == {
        "data": {
            "profiles": [
                {
                    "writings": [{"id": 3}, {"id": 6}],
                    "writings_aggregate": {"aggregate": {"count": 2}},
                }
            ]
        }
    }
    # not a filter nor an ordering
    bad = gql(srv, "{ profiles(where: {writings: {id: {_eq: 1}}}) { id } }")
    assert bad["errors"][0]["extensions"]["code"] == "validation-failed"
    bad = gql(srv, "{ posts(order_by: {writer: {name: asc}}) { id } }")
    assert bad["errors"][0]["extensions"]["code"] == "validation-failed"
    # refused when it does not resolve; the old metadata keeps serving
    for wrong in (
        _to_source("w2", "profiles", "posts", "array", {"id": "nope"}),
        _to_source("w3", "profiles", "nowhere", "array", {"id": "profile_id"}),
    ):
        err = q(srv, wrong, status=400)
        assert "nope" in err["error"] or "nowhere" in err["error"], err
    other = _to_source("w4", "profiles", "posts", "array", {"id": "profile_id"})
    other["args"]["definition"]["to_source"]["source"] = "elsewhere"
    assert "elsewhere" in q(srv, other, status=400)["error"]
    # exported as given, and read back identically
    export = q(srv, {"type": "export_metadata", "args": {}})
    tables = export["sources"][0]["tables"] if "sources" in export else export["tables"]
    (entry,) = [t for t in tables if t["table"]["name"] == "profiles"]
    assert entry["remote_relationships"] == [
        {
            "name": "writings",
            "definition": {
                "to_source": {
                    "source": "default",
                    "table": "posts",
                    "relationship_type": "array",
                    "field_mapping": {"id": "profile_id"},
                }
            },
        }
    ]
    q(srv, {"type": "replace_metadata", "args": export})
    assert q(srv, {"type": "export_metadata", "args": {}}) == export
    q(
        srv,
        {"type": "delete_remote_relationship", "args": {"table": "profiles", "name": "writings"}},
    )
    assert "writings" not in str(gql(srv, '{ __type(name: "profiles") { fields { name } } }'))


def test_joins_are_batched_per_level(srv: ServerProcess, node: GraphQLHttp) -> None:
    """One call per remote relationship per level of the query, whatever the number of
    parent rows (the reference's remote joins: one `RemoteJoin` call per join field,
    `Hasura/GraphQL/Execute/RemoteJoin/Join.hs`): 100 profiles, their posts (a relationship
    to a table) and the posts' writer, each level joined to the remote → 3 calls."""
    url = f"http://localhost:{node.port}"
    q(srv, {"type": "add_remote_schema", "args": {"name": "m", "definition": {"url": url}}})
    sql = (
        "CREATE TABLE IF NOT EXISTS notes (id int primary key, profile_id int);"
        "INSERT INTO notes SELECT g, 1 + g % 100 FROM generate_series(1, 300) g"
    )
    q(srv, {"type": "run_sql", "args": {"sql": sql}})
    q(srv, {"type": "track_table", "args": {"table": "notes"}})
    q(srv, _to_source("notes", "profiles", "notes", "array", {"id": "profile_id"}))
    q(srv, _to_source("owner", "notes", "profiles", "object", {"profile_id": "id"}))
    for table, column in (("profiles", "id"), ("notes", "id")):
        rel = {
            "name": "message",
            "table": table,
            "definition": {
                "to_remote_schema": {
                    "remote_schema": "m",
                    "lhs_fields": [column],
                    "remote_field": {"message": {"arguments": {"id": f"${column}"}}},
                }
            },
        }
        q(srv, {"type": "create_remote_relationship", "args": rel})
    before = len(node.requests)
    out = gql(
        srv,
        "{ profiles(order_by: {id: asc}) { id message { msg } "
        "notes(order_by: {id: asc}) { id message { id } owner { id message { name } } } } }",
    )
    assert "errors" not in out, out
    rows = out["data"]["profiles"]
    assert len(rows) == 100
    assert rows[0]["message"] == {"msg": "You win!"}
    assert rows[0]["notes"][0] == {
        "id": 100,
        "message": None,
        "owner": {"id": 1, "message": {"name": "alice"}},
    }
    assert rows[1]["notes"][0]["id"] == 1 and rows[1]["notes"][0]["message"] == {"id": 1}
    assert sum(len(r["notes"]) for r in rows) == 300
    sent = calls(node, before)
    assert len(sent) == 3, [s.body["query"][:80] for s in sent]


def _type_rel(remote: str, type_name: str, name: str, definition: Any) -> Any:
    return {
        "type": "create_remote_schema_remote_relationship",
        "args": {
            "remote_schema": remote,
            "type_name": type_name,
            "name": name,
            "definition": definition,
        },
    }


def test_relationships_of_a_remote_schemas_types(srv: ServerProcess, node: GraphQLHttp) -> None:
    """`create_remote_schema_remote_relationship` (the reference's remote schema → database
    and remote schema → remote schema relationships, v2.6+, `RemoteSchemaMetadata`'s
    `remote_relationships: [{type_name, relationships}]`): a field on the remote's type,
    in the remote's own names whatever its customization, joined after the remote
    answered; to a table it takes the `select` field's arguments per parent and offers
    `<name>_aggregate` (`remoteRelationshipToSourceField`), for roles that may select the
    table."""
    url = f"http://localhost:{node.port}"
    custom = {"root_fields_namespace": "rs", "type_names": {"prefix": "R_"}}
    q(
        srv,
        {
            "type": "add_remote_schema",
            "args": {"name": "r", "definition": {"url": url, "customization": custom}},
        },
    )
    sql = (
        "CREATE TABLE IF NOT EXISTS tags (id int primary key, message_id int, label text);"
        "INSERT INTO tags SELECT g, 1 + g % 3, 'l' || g FROM generate_series(1, 9) g"
    )
    q(srv, {"type": "run_sql", "args": {"sql": sql}})
    q(srv, {"type": "track_table", "args": {"table": "tags"}})
    to_tags = {
        "to_source": {
            "source": "default",
            "table": "tags",
            "relationship_type": "array",
            "field_mapping": {"id": "message_id"},
        }
    }
    q(srv, _type_rel("r", "Message", "tags", to_tags))
    to_profile = {**to_tags, "to_source": {**to_tags["to_source"], "table": "profiles"}}
    to_profile["to_source"].update(relationship_type="object", field_mapping={"id": "id"})
    q(srv, _type_rel("r", "Message", "profile", to_profile))
    to_remote = {
        "to_remote_schema": {
            "remote_schema": "r",
            "lhs_fields": ["user_id"],
            "remote_field": {"message": {"arguments": {"id": "$user_id"}}},
        }
    }
    q(srv, _type_rel("r", "User", "first", to_remote))
    before = len(node.requests)
    out = gql(
        srv,
        "{ rs { messages { __typename id profile { id name } "
        "tags(order_by: {id: desc}, limit: 2) { label } tags_aggregate { aggregate { count } } } "
        "user(user_id: 2) { user_id first { msg } } } }",
    )
    assert "errors" not in out, out
    messages = out["data"]["rs"]["messages"]
    assert messages[0] == {
        "__typename": "R_Message",
        "id": 1,
        "profile": {"id": 1, "name": "p1"},
        "tags": [{"label": "l9"}, {"label": "l6"}],
        "tags_aggregate": {"aggregate": {"count": 3}},
    }
    assert [m["tags"] for m in messages[1:]] == [
        [{"label": "l7"}, {"label": "l4"}],
        [{"label": "l8"}, {"label": "l5"}],
    ]
    assert out["data"]["rs"]["user"] == {"user_id": 2, "first": {"msg": "You lose!"}}
    sent = calls(node, before)
    assert len(sent) == 2  # the root call and one for `first`
    assert "__svc_j_id: id" in sent[0].body["query"] and "tags" not in sent[0].body["query"]
    # A role without select on tags sees `profile` only.
    q(
        srv,
        {
            "type": "pg_create_select_permission",
            "args": {
                "role": "viewer",
                "table": "profiles",
                "permission": {"columns": ["id", "name"], "filter": {}},
            },
        },
    )
    resp = srv.client.post(
        "/v1/graphql",
        json={"query": '{ __type(name: "R_Message") { fields { name } } }'},
        headers={"X-Svc-Role": "viewer"},
    )
    names = {f["name"] for f in resp.json()["data"]["__type"]["fields"]}
    assert "profile" in names and "tags" not in names and "tags_aggregate" not in names
    # Names that do not exist are refused, in the remote's own names.
    for bad, where in (
        (_type_rel("r", "R_Message", "x", to_tags), "R_Message"),
        (
            _type_rel(
                "r",
                "Message",
                "x",
                {**to_tags, "to_source": {**to_tags["to_source"], "field_mapping": {"nope": "id"}}},
            ),
            "nope",
        ),
        (
            _type_rel(
                "r",
                "Message",
                "x",
                {**to_tags, "to_source": {**to_tags["to_source"], "table": "nowhere"}},
            ),
            "nowhere",
        ),
    ):
        err = q(srv, bad, status=400)
        assert where in err["error"], err
    # exported with the remote schema, read back identically; deleted
    export = q(srv, {"type": "export_metadata", "args": {}})
    (entry,) = [r for r in export["remote_schemas"] if r["name"] == "r"]
    assert [g["type_name"] for g in entry["remote_relationships"]] == ["Message", "User"]
    q(srv, {"type": "replace_metadata", "args": export})
    assert q(srv, {"type": "export_metadata", "args": {}}) == export
    for type_name, name in (("Message", "tags"), ("Message", "profile"), ("User", "first")):
        q(
            srv,
            {
                "type": "delete_remote_schema_remote_relationship",
                "args": {"remote_schema": "r", "type_name": type_name, "name": name},
            },
        )
    export = q(srv, {"type": "export_metadata", "args": {}})
    assert "remote_relationships" not in next(
        r for r in export["remote_schemas"] if r["name"] == "r"
    )


def test_remote_relationships_of_rows_an_action_relationship_reads(
    srv: ServerProcess, node: GraphQLHttp
) -> None:
    """An action's relationship to a table reaches rows whose remote relationships are
    joined as anywhere else (the reference answered "remote field selected" as an error
    before, hasura/graphql-engine#4971, and joins them since remote joins moved to the
    execution plan, `Hasura/GraphQL/Execute/RemoteJoin`)."""
    url = f"http://localhost:{node.port}"
    with HttpFixture() as hook:
        body = json.dumps({"id": 2}).encode()
        hook.route("/who", lambda _: Reply(200, body, {"Content-Type": "application/json"}))
        definition = {"url": url, "customization": {"root_fields_namespace": "aa"}}
        q(srv, {"type": "add_remote_schema", "args": {"name": "a", "definition": definition}})
        rel = {
            "name": "greeting",
            "table": "profiles",
            "definition": {
                "to_remote_schema": {
                    "remote_schema": "a",
                    "lhs_fields": ["id"],
                    "remote_field": {"message": {"arguments": {"id": "$id"}}},
                }
            },
        }
        q(srv, {"type": "create_remote_relationship", "args": rel})
        types = {
            "objects": [
                {
                    "name": "Who",
                    "fields": [{"name": "id", "type": "Int!"}],
                    "relationships": [
                        {
                            "name": "profile",
                            "type": "object",
                            "remote_table": "profiles",
                            "field_mapping": {"id": "id"},
                        }
                    ],
                }
            ]
        }
        q(srv, {"type": "set_custom_types", "args": types})
        definition = {"output_type": "Who", "handler": hook.url("/who"), "type": "query"}
        q(srv, {"type": "create_action", "args": {"name": "who", "definition": definition}})
        out = gql(srv, "{ who { id profile { name greeting { msg } } } }")
        assert out == {
            "data": {"who": {"id": 2, "profile": {"name": "p2", "greeting": {"msg": "You lose!"}}}}
        }


def test_a_roles_remote_presets_apply_through_relationships(pg_url: str, node: GraphQLHttp) -> None:
    """With remote schema permissions, the role's `@preset` arguments are added to the
    calls a remote relationship makes, as to the remote's root fields (the reference's
    `derive_remote_relationship_with_joining_field_containing_preset.yaml`)."""
    env = {"SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS": "true"}
    server = ServerProcess(create_database(pg_url), env=env)
    try:
        sql = "CREATE TABLE people (id int primary key); INSERT INTO people VALUES (1), (2)"
        q(server, {"type": "run_sql", "args": {"sql": sql}})
        q(server, {"type": "track_table", "args": {"table": "people"}})
        perm = {"columns": ["id"], "filter": {}}
        select = {"role": "user", "table": "people", "permission": perm}
        q(server, {"type": "pg_create_select_permission", "args": select})
        url = f"http://localhost:{node.port}"
        q(server, {"type": "add_remote_schema", "args": {"name": "p", "definition": {"url": url}}})
        sdl = (
            'type User { user_id: Int  gimmeText(text: String @preset(value: "preset text")): '
            "String }\ntype Query { user(user_id: ID!): User }"
        )
        grant = {"remote_schema": "p", "role": "user", "definition": {"schema": sdl}}
        q(server, {"type": "add_remote_schema_permissions", "args": grant})
        rel = {
            "name": "person",
            "table": "people",
            "definition": {
                "to_remote_schema": {
                    "remote_schema": "p",
                    "lhs_fields": ["id"],
                    "remote_field": {"user": {"arguments": {"user_id": "$id"}}},
                }
            },
        }
        q(server, {"type": "create_remote_relationship", "args": rel})
        query = "{ people(order_by: {id: asc}) { id person { user_id gimmeText } } }"
        resp = server.client.post(
            "/v1/graphql", json={"query": query}, headers={"X-Svc-Role": "user"}
        )
        assert resp.json() == {
            "data": {
                "people": [
                    {"id": 1, "person": {"user_id": 1, "gimmeText": "preset text"}},
                    {"id": 2, "person": {"user_id": 2, "gimmeText": "preset text"}},
                ]
            }
        }
        admin = gql(server, query)  # admin has no presets: the remote's own default
        assert admin["data"]["people"][0]["person"]["gimmeText"] == "no text"
    finally:
        server.stop()


def test_a_join_column_with_a_custom_name(srv: ServerProcess, node: GraphQLHttp) -> None:
    """Join fields name columns, not their custom GraphQL names (the reference's
    `lhs_fields` are column names); a column renamed for GraphQL keeps its relationship,
    and so does one renamed in Postgres by `run_sql` (followed into the relationship)."""
    url = f"http://localhost:{node.port}"
    definition = {"url": url, "customization": {"root_fields_namespace": "cc"}}
    q(srv, {"type": "add_remote_schema", "args": {"name": "c", "definition": definition}})
    sql = "CREATE TABLE authors (author_id int primary key); INSERT INTO authors VALUES (1)"
    q(srv, {"type": "run_sql", "args": {"sql": sql}})
    config = {"author_id": {"custom_name": "authorId"}}
    table = {"table": "authors", "configuration": {"column_config": config}}
    q(srv, {"type": "pg_track_table", "args": table})
    rel = {
        "name": "greeting",
        "table": "authors",
        "definition": {
            "to_remote_schema": {
                "remote_schema": "c",
                "lhs_fields": ["author_id"],
                "remote_field": {"message": {"arguments": {"id": "$author_id"}}},
            }
        },
    }
    q(srv, {"type": "create_remote_relationship", "args": rel})
    expected = {"data": {"authors": [{"authorId": 1, "greeting": {"msg": "You win!"}}]}}
    assert gql(srv, "{ authors { authorId greeting { msg } } }") == expected
    rename = "ALTER TABLE authors RENAME COLUMN author_id TO writer_id"
    q(srv, {"type": "run_sql", "args": {"sql": rename}})
    out = gql(srv, "{ authors { greeting { msg } } }")
    assert out == {"data": {"authors": [{"greeting": {"msg": "You win!"}}]}}, out


def test_joins_inside_joins_and_under_interfaces(srv: ServerProcess, node: GraphQLHttp) -> None:
    """A remote relationship's result is joined further (a table → the remote's `User` →
    `User.first`, one call per level), and a remote type's relationship is found under a
    field of interface type, the object's own type asked for as `__typename` (the
    reference's remote joins run at every level, `Hasura/GraphQL/Execute/RemoteJoin`)."""
    url = f"http://localhost:{node.port}"
    definition = {"url": url, "customization": {"root_fields_namespace": "nn"}}
    q(srv, {"type": "add_remote_schema", "args": {"name": "n2", "definition": definition}})
    person = {
        "name": "person",
        "table": "profiles",
        "definition": {
            "to_remote_schema": {
                "remote_schema": "n2",
                "lhs_fields": ["id"],
                "remote_field": {"user": {"arguments": {"user_id": "$id"}}},
            }
        },
    }
    q(srv, {"type": "create_remote_relationship", "args": person})
    first = {
        "to_remote_schema": {
            "remote_schema": "n2",
            "lhs_fields": ["user_id"],
            "remote_field": {"message": {"arguments": {"id": "$user_id"}}},
        }
    }
    q(srv, _type_rel("n2", "User", "first", first))
    owner = {
        "to_source": {
            "source": "default",
            "table": "profiles",
            "relationship_type": "object",
            "field_mapping": {"id": "id"},
        }
    }
    q(srv, _type_rel("n2", "Message", "owner", owner))
    before = len(node.requests)
    out = gql(
        srv,
        "{ profiles(where: {id: {_lte: 2}}, order_by: {id: asc}) "
        "{ id person { user_id first { msg } } } }",
    )
    assert out == {
        "data": {
            "profiles": [
                {"id": 1, "person": {"user_id": 1, "first": {"msg": "You win!"}}},
                {"id": 2, "person": {"user_id": 2, "first": {"msg": "You lose!"}}},
            ]
        }
    }, out
    assert len(calls(node, before)) == 2  # one per level
    out = gql(
        srv,
        "{ nn { communications { id ... on Message { owner { name } } } } }",
    )
    assert out == {
        "data": {
            "nn": {
                "communications": [
                    {"id": 1, "owner": {"name": "p1"}},
                    {"id": 2, "owner": {"name": "p2"}},
                    {"id": 3, "owner": {"name": "p3"}},
                ]
            }
        }
    }, out
