"""Remote relationships as the reference defines them (issue 27), on a real `svc serve`
and a real remote GraphQL server (the `node_4000` schema of FIXTURES.md §8, started here
on a free port so this module never shares a port with the corpus fixtures)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixture_servers.remote_graphql import GraphQLHttp
from tests.fixture_servers.remote_node import _apollo, node_4000
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
