"""Remote schemas and remote relationships on a real `svc serve` (issue 17), with the
corpus's remote GraphQL fixture servers (tests/fixture_servers/remote_*.py) on their
ports and a real Postgres."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import websockets
from graphql import build_schema

from tests.fixture_servers import CORPUS_ENV, remote_graphql, remote_node
from tests.http_fixture import HttpFixture, Reply
from tests.support import ServerProcess, create_database, free_port

# The corpus environment without remote schema permissions: every role sees every remote.
OPEN_ENV = {k: v for k, v in CORPUS_ENV.items() if "REMOTE_SCHEMA_PERMISSIONS" not in k}
HELLO = "http://localhost:5000/hello-graphql"


@pytest.fixture(scope="module")
def remotes() -> Iterator[dict[str, Any]]:
    """The fixture servers of FIXTURES.md §7 and §8."""
    with contextlib.ExitStack() as stack:
        servers: dict[str, Any] = {}
        servers.update(stack.enter_context(remote_graphql.serve()))  # type: ignore[arg-type]
        servers.update(stack.enter_context(remote_node.serve()))  # type: ignore[arg-type]
        yield servers


@pytest.fixture(scope="module")
def srv(pg_url: str, remotes: dict[str, Any]) -> Iterator[ServerProcess]:
    """One svc server with the corpus environment."""
    server = ServerProcess(create_database(pg_url), env=OPEN_ENV)
    try:
        yield server
    finally:
        server.stop()


def q(srv: ServerProcess, body: dict[str, Any], status: int = 200) -> Any:
    resp = srv.client.post("/v1/query", json=body)
    assert resp.status_code == status, resp.text
    return resp.json()


def gql(srv: ServerProcess, query: str, headers: dict[str, str] | None = None, **kw: Any) -> Any:
    resp = srv.client.post("/v1/graphql", json={"query": query, **kw}, headers=headers or {})
    assert resp.status_code == 200, resp.text
    return resp.json()


def add(srv: ServerProcess, name: str, url: str, status: int = 200, **definition: Any) -> Any:
    body = {
        "type": "add_remote_schema",
        "args": {"name": name, "definition": {"url": url, **definition}},
    }
    return q(srv, body, status)


def test_basic_query_and_mixed_with_tables(srv: ServerProcess) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    sql = "CREATE TABLE author (id int primary key, name text); INSERT INTO author VALUES (1, 'a')"
    q(srv, {"type": "run_sql", "args": {"sql": sql}})
    q(srv, {"type": "track_table", "args": {"schema": "public", "name": "author"}})
    add(srv, "simple", HELLO)
    assert gql(srv, '{ hello(arg: "me") }') == {"data": {"hello": "Hello me"}}
    mixed = gql(
        srv,
        '{ a: author { id name } x: hello ...F } fragment F on query_root { y: hello(arg: "y") }',
    )
    assert mixed == {"data": {"a": [{"id": 1, "name": "a"}], "x": "Hello world", "y": "Hello y"}}
    with_var = gql(srv, "query Q($v: String) { hello(arg: $v) }", variables={"v": "var"})
    assert with_var == {"data": {"hello": "Hello var"}}
    sub = gql(srv, "subscription { hello }")
    assert sub["errors"][0]["extensions"]["code"] == "not-supported"


def test_add_errors(srv: ServerProcess) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    bad = add(srv, "bad", "http://localhost:5000/iface-graphql-err-missing-arg", 400)
    assert bad["code"] == "remote-schema-error"
    assert "ifaceArg" in bad["error"]
    down = add(srv, "down", "http://localhost:5999/nothing", 400)
    assert down["code"] == "remote-schema-error"
    add(srv, "simple", HELLO)
    assert add(srv, "simple", HELLO, 400)["code"] == "already-exists"
    clash = add(srv, "simple2", "http://localhost:5000/hello-graphql-extensions", 400)
    assert clash["code"] == "unexpected"
    q(srv, {"type": "remove_remote_schema", "args": {"name": "simple"}})
    assert (
        q(srv, {"type": "remove_remote_schema", "args": {"name": "simple"}}, 400)["code"]
        == "not-exists"
    )


def test_remote_down_at_reload_is_inconsistent(srv: ServerProcess, remotes: dict[str, Any]) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    add(srv, "flaky", "http://localhost:5991/hello-graphql")
    remotes["graphql_5991"].stop()
    try:
        out = q(srv, {"type": "reload_metadata", "args": {"reload_remote_schemas": True}})
        assert out["is_consistent"] is False
        issues = q(srv, {"type": "get_inconsistent_metadata", "args": {}})
        assert [i["type"] for i in issues["inconsistent_objects"]] == ["remote_schema"]
    finally:
        remotes["graphql_5991"].start()
    q(srv, {"type": "reload_remote_schema", "args": {"name": "flaky"}})
    assert gql(srv, "{ hello }") == {"data": {"hello": "Hello world"}}


def test_remote_relationship_batched(srv: ServerProcess, remotes: dict[str, Any]) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    sql = (
        "DROP TABLE IF EXISTS profiles; CREATE TABLE profiles (id int primary key, msg_id int);"
        "INSERT INTO profiles SELECT g, g FROM generate_series(1, 100) g;"
        "INSERT INTO profiles VALUES (101, NULL)"
    )
    q(srv, {"type": "run_sql", "args": {"sql": sql}})
    q(srv, {"type": "track_table", "args": {"schema": "public", "name": "profiles"}})
    add(srv, "node", "http://localhost:4000")
    q(
        srv,
        {
            "type": "create_remote_relationship",
            "args": {
                "name": "messageBasic",
                "table": "profiles",
                "svc_fields": ["msg_id"],
                "remote_schema": "node",
                "remote_field": {"message": {"arguments": {"id": "$msg_id"}}},
            },
        },
    )
    node = remotes["node_4000"]
    before = len(node.requests)
    out = gql(srv, "{ profiles(order_by: {id: asc}) { id messageBasic { id msg } } }")
    rows = out["data"]["profiles"]
    assert len(rows) == 101
    assert rows[0] == {"id": 1, "messageBasic": {"id": 1, "msg": "You win!"}}
    assert rows[5] == {"id": 6, "messageBasic": None}  # the remote has no message 6
    assert rows[100] == {"id": 101, "messageBasic": None}  # null join value: no call
    calls = [r for r in node.requests[before:] if "__schema" not in r.body["query"]]
    assert len(calls) == 1  # one call for 100 rows (and none for the null join value)
    assert calls[0].body["query"].count("message(") == 100
    export = q(srv, {"type": "export_metadata", "args": {}})
    q(srv, {"type": "replace_metadata", "args": export})
    assert q(srv, {"type": "export_metadata", "args": {}}) == export


ROLE_SDL = """
type User { user_id: Int  gimmeText(text: String @preset(value: "preset text")): String }
type Query { hello: String  user(user_id: Int! @preset(value: "x-svc-user-id")): User }
"""


def test_permissions_and_presets(pg_url: str, remotes: dict[str, Any]) -> None:
    env = {**CORPUS_ENV, "SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS": "true"}
    server = ServerProcess(create_database(pg_url), env=env)
    try:
        add(server, "perms", "http://localhost:4020")
        bad = {
            "remote_schema": "perms",
            "role": "user",
            "definition": {"schema": "type Query { nope: Int }"},
        }
        refused = q(server, {"type": "add_remote_schema_permissions", "args": bad}, 400)
        assert refused["code"] == "validation-failed"
        good = {"remote_schema": "perms", "role": "user", "definition": {"schema": ROLE_SDL}}
        q(server, {"type": "add_remote_schema_permissions", "args": good})
        user = {"X-Svc-Role": "user", "X-Svc-User-Id": "7"}
        out = gql(server, "{ hello user { user_id gimmeText } }", headers=user)
        assert out == {
            "data": {"hello": "world", "user": {"user_id": 7, "gimmeText": "preset text"}}
        }
        hidden = gql(server, "{ messages { id } }", headers=user)
        assert hidden["errors"][0]["extensions"]["code"] == "validation-failed"
        other = gql(server, "{ hello }", headers={"X-Svc-Role": "other"})
        assert other["errors"][0]["extensions"]["code"] == "validation-failed"
        admin = gql(server, "{ messages(where: {id: {eq: 2}}) { id } }")
        assert admin == {"data": {"messages": [{"id": 2}]}}
        q(
            server,
            {
                "type": "drop_remote_schema_permissions",
                "args": {"remote_schema": "perms", "role": "user"},
            },
        )
        gone = gql(server, "{ hello }", headers=user)
        assert gone["errors"][0]["extensions"]["code"] == "validation-failed"
    finally:
        server.stop()


# The same permission with its definitions and fields in another order: equal for
# inheritance (the reference compares parsed introspections, whose maps have no order).
ROLE_SDL_REORDERED = """
type Query { user(user_id: Int! @preset(value: "x-svc-user-id")): User  hello: String }
type User { gimmeText(text: String @preset(value: "preset text")): String  user_id: Int }
"""


def test_inherited_role_inherits_remote_permissions(pg_url: str, remotes: dict[str, Any]) -> None:
    """The reference's rule (note "Roles Inheritance", `Hasura/RQL/DDL/Schema/Cache.hs`):
    an inherited role has its parents' remote schema permission when the parents that
    have one agree, presets included; parents that differ leave it none, listed as
    `inherited role permission inconsistency` with entity `{"remote_schema": name}`,
    until the role is given its own."""
    env = {**CORPUS_ENV, "SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS": "true"}
    server = ServerProcess(create_database(pg_url), env=env)

    def permit(role: str, sdl: str) -> None:
        args = {"remote_schema": "perms", "role": role, "definition": {"schema": sdl}}
        q(server, {"type": "add_remote_schema_permissions", "args": args})

    def inconsistent() -> list[Any]:
        out = q(server, {"type": "get_inconsistent_metadata", "args": {}})
        return list(out["inconsistent_objects"])

    try:
        add(server, "perms", "http://localhost:4020")
        permit("user", ROLE_SDL)
        permit("reader", ROLE_SDL_REORDERED)
        role_set = {"role_name": "both", "role_set": ["user", "reader", "nobody"]}
        q(server, {"type": "add_inherited_role", "args": role_set})
        both = {"X-Svc-Role": "both", "X-Svc-User-Id": "7"}
        out = gql(server, "{ hello user { user_id gimmeText } }", headers=both)
        assert out == {
            "data": {"hello": "world", "user": {"user_id": 7, "gimmeText": "preset text"}}
        }
        assert inconsistent() == []
        q(
            server,
            {
                "type": "drop_remote_schema_permissions",
                "args": {"remote_schema": "perms", "role": "reader"},
            },
        )
        permit("reader", "type Query { hello: String }")
        hidden = gql(server, "{ hello }", headers=both)
        assert hidden["errors"][0]["extensions"]["code"] == "validation-failed"
        assert inconsistent() == [
            {
                "reason": "Could not inherit permission for the role 'both' for the entity: "
                "'remote schema: 'perms''",
                "name": "both",
                "type": "inherited role permission inconsistency",
                "entity": {"remote_schema": "perms"},
            }
        ]
        reader = gql(server, "{ hello }", headers={"X-Svc-Role": "reader"})
        assert reader == {"data": {"hello": "world"}}
        permit("both", "type Query { hello: String }")  # its own wins
        assert gql(server, "{ hello }", headers=both) == {"data": {"hello": "world"}}
        assert inconsistent() == []
    finally:
        server.stop()


def test_slow_remote_times_out(srv: ServerProcess) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    add(srv, "slow", HELLO, timeout_seconds=1)
    started = time.monotonic()
    out = gql(srv, "{ delayedHello }")
    assert time.monotonic() - started < 5
    assert out["errors"][0]["extensions"]["code"] == "unexpected"
    assert "HTTP exception" in out["errors"][0]["message"]


def test_invalid_json_remote_is_refused(srv: ServerProcess) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    with HttpFixture() as fixture:
        fixture.route(
            "/gql", lambda _: Reply(200, b"{not json", {"Content-Type": "application/json"})
        )
        bad = add(srv, "garbage", fixture.url("/gql"), 400)
    assert bad["code"] == "remote-schema-error"


def test_schema_change_between_reloads(srv: ServerProcess) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    endpoints = {"/": remote_graphql.Endpoint(build_schema("type Query { a: String }"))}
    server = remote_graphql.GraphQLHttp(free_port(), endpoints)
    server.start()
    try:
        add(srv, "changing", f"http://127.0.0.1:{server.port}/")
        assert gql(srv, "{ a }") == {"data": {"a": None}}
        endpoints["/"] = remote_graphql.Endpoint(build_schema("type Query { b: Int }"))
        assert "errors" in gql(srv, "{ b }")  # the old schema serves until a reload
        q(srv, {"type": "reload_remote_schema", "args": {"name": "changing"}})
        assert gql(srv, "{ b }") == {"data": {"b": None}}
        assert gql(srv, "{ a }")["errors"][0]["extensions"]["code"] == "validation-failed"
    finally:
        server.stop()


def test_header_precedence(srv: ServerProcess, remotes: dict[str, Any]) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    headers = [{"name": "X-Svc-Role", "value": "configured"}, {"name": "X-Extra", "value": "1"}]
    add(srv, "headers", "http://localhost:5000/messages-graphql", headers=headers)
    recorder = remotes["graphql_5000"]
    before = len(recorder.requests)
    session = {"X-Svc-Role": "user", "X-Svc-User-Id": "42"}
    out = gql(srv, "{ messages { id } }", headers=session)
    assert out["data"]["messages"][0] == {"id": 1}
    # other workers introspect the remote as they load the new metadata: skip those
    (call,) = [r for r in recorder.requests[before:] if "__schema" not in r.body["query"]]
    sent = dict(call.headers)
    assert sent["x-svc-role"] == "configured"  # configured headers win over the session
    assert sent["x-svc-user-id"] == "42"  # session variables are sent
    assert sent["x-extra"] == "1"
    assert [k for k, _ in call.headers].count("x-svc-role") == 1


def test_remote_fields_refused_where_only_sql_runs(srv: ServerProcess) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    add(srv, "simple", HELLO)

    async def subscribe() -> list[Any]:
        url = srv.url.replace("http", "ws") + "/v1/graphql"
        async with websockets.connect(url, subprotocols=["graphql-ws"]) as ws:  # type: ignore[list-item]
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            await asyncio.wait_for(ws.recv(), 5)
            start = {"id": "1", "type": "start", "payload": {"query": "subscription { hello }"}}
            await ws.send(json.dumps(start))
            return [json.loads(await asyncio.wait_for(ws.recv(), 5)) for _ in range(2)]

    error, complete = asyncio.run(subscribe())
    assert error["type"] == "error"
    assert error["payload"]["errors"][0]["extensions"]["code"] == "not-supported"
    assert complete == {"type": "complete", "id": "1"}
    explain = srv.client.post("/v1/graphql/explain", json={"query": {"query": "{ hello }"}})
    # Hasura.GraphQL.Explain.explainQueryField: RFRemote -> throw400 InvalidParams.
    assert explain.status_code == 400 and explain.json()["code"] == "invalid-params"
    assert explain.json()["error"] == "only hasura queries can be explained"


def test_remote_down_at_start(pg_url: str, remotes: dict[str, Any]) -> None:
    database = create_database(pg_url)
    first = ServerProcess(database, env=OPEN_ENV)
    try:
        add(first, "flaky", "http://localhost:5991/hello-graphql")
    finally:
        first.stop()
    remotes["graphql_5991"].stop()
    try:
        second = ServerProcess(database, env=OPEN_ENV)  # starts although the remote is down
        try:
            issues = q(second, {"type": "get_inconsistent_metadata", "args": {}})
            assert issues["is_consistent"] is False
            assert issues["inconsistent_objects"][0]["type"] == "remote_schema"
            assert gql(second, "{ __typename }") == {"data": {"__typename": "query_root"}}
        finally:
            second.stop()
    finally:
        remotes["graphql_5991"].start()


def test_forwarded_client_headers_and_cookies(srv: ServerProcess) -> None:
    q(srv, {"type": "clear_metadata", "args": {}})
    headers = [{"name": "x-svc-test", "value": "abcd"}]
    url = "http://localhost:5000/header-graphql"
    add(srv, "header", url, headers=headers, forward_client_headers=True)
    client = {
        "X-Svc-Role": "user",
        "X-Svc-User-Id": "abcd1234",
        "X-Svc-Test": "xyzz",  # a session variable: the configured header wins
        "Authorization": "Bearer abcdef",
    }
    # the fixture checks every header, X-Forwarded-Host and -User-Agent included
    assert gql(srv, "{ wassup }", headers=client) == {"data": {"wassup": "Hello world"}}
    add(srv, "auth", "http://localhost:5000/auth-graphql")
    resp = srv.client.post("/v1/graphql", json={"query": '{ hello(arg: "me") }'})
    assert resp.json() == {"data": {"hello": "Hello me"}}
    assert resp.headers.get("set-cookie") == "abcd"
    assert "custom-header" not in resp.headers


def test_customization_making_an_invalid_schema_is_refused(srv: ServerProcess) -> None:
    """Renaming `Message.id` but not its interface's `Communication.id` cannot be served:
    the operation is refused (400 remote-schema-error) and the old metadata keeps
    answering, instead of every later request failing to build a schema."""
    q(srv, {"type": "clear_metadata", "args": {}})
    before = q(srv, {"type": "export_metadata", "args": {}})
    custom = {"field_names": [{"parent_type": "Message", "prefix": "m_"}]}
    refused = add(srv, "node", "http://localhost:4000", 400, customization=custom)
    assert refused["code"] == "remote-schema-error", refused
    assert "Communication.id" in refused["error"], refused
    assert q(srv, {"type": "export_metadata", "args": {}}) == before
    assert gql(srv, "{ __typename }") == {"data": {"__typename": "query_root"}}
    # the same remote without that customization is accepted and then updated to it: refused
    add(srv, "node", "http://localhost:4000")
    definition = {"url": "http://localhost:4000", "customization": custom}
    update = {"name": "node", "definition": definition}
    refused = q(srv, {"type": "update_remote_schema", "args": update}, 400)
    assert refused["code"] == "remote-schema-error", refused
    assert gql(srv, "{ message(id: 1) { id msg } }") == {
        "data": {"message": {"id": 1, "msg": "You win!"}}
    }
