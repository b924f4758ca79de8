"""Synchronous actions and custom types (issue 16) on a real `svc serve` and a real local
handler (`tests.http_fixture`): the request the handler gets, output checks, relationships,
errors, permissions and the metadata operations' refusals."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
import websockets

from tests.http_fixture import HttpFixture, Recorded, Reply
from tests.support import ServerProcess, create_database, free_port

SQL = """
create table "user" (id serial primary key, name text not null, email text not null);
create table article (id serial primary key, title text not null, user_id int);
insert into "user" (name, email) values ('Ada', 'ada@x.io'), ('Bob', 'bob@x.io');
insert into article (title, user_id) values ('a1', 1), ('a2', 1), ('b1', 2);
"""
TYPES: dict[str, Any] = {
    "input_objects": [{"name": "InObj", "fields": [{"name": "id", "type": "ID"}]}],
    "scalars": [{"name": "Blob"}],
    "objects": [
        {
            "name": "UserId",
            "fields": [{"name": "id", "type": "Int!"}, {"name": "note", "type": "String"}],
            "relationships": [
                {
                    "name": "user",
                    "type": "object",
                    "remote_table": "user",
                    "field_mapping": {"id": "id"},
                },
                {
                    "name": "articles",
                    "type": "array",
                    "remote_table": "article",
                    "field_mapping": {"id": "user_id"},
                },
            ],
        },
        {
            "name": "Nested",
            "fields": [{"name": "id", "type": "Int!"}, {"name": "u", "type": "UserId"}],
        },
        {
            "name": "Rec",
            "fields": [{"name": "id", "type": "Int!"}, {"name": "next", "type": "Rec"}],
        },
        {"name": "Secret", "fields": [{"name": "x", "type": "Int"}]},
    ],
}


def action(name: str, output: str, path: str, url: str, **extra: Any) -> dict[str, Any]:
    """A `create_action` body for a handler at `url + path`."""
    definition = {"output_type": output, "handler": url + path, **extra}
    return {"type": "create_action", "args": {"name": name, "definition": definition}}


@pytest.fixture(scope="module")
def hook() -> Iterator[HttpFixture]:
    with HttpFixture() as srv:
        yield srv


@pytest.fixture(scope="module")
def srv(pg_url: str, hook: HttpFixture) -> Iterator[ServerProcess]:
    env = {"ACTION_BASE": hook.url("").rstrip("/"), "SECRET_HEADER": "from-env"}
    s = ServerProcess(create_database(pg_url, prefix="act"), env=env)
    base = "{{ACTION_BASE}}"
    steps = [
        {"type": "run_sql", "args": {"sql": SQL}},
        {"type": "track_table", "args": {"table": "user"}},
        {"type": "track_table", "args": {"table": "article"}},
        {"type": "set_custom_types", "args": TYPES},
        action(
            "who",
            "UserId",
            "/who",
            base,
            type="query",
            arguments=[{"name": "id", "type": "Int!"}, {"name": "arg", "type": "InObj"}],
            headers=[
                {"name": "X-Static", "value": "v1"},
                {"name": "X-Env", "value_from_env": "SECRET_HEADER"},
            ],
            forward_client_headers=True,
        ),
        action("many", "[UserId!]!", "/many", base, type="query"),
        action("nested", "Nested", "/nested", base, type="query"),
        action("rec", "Rec!", "/rec", base, type="query"),
        action("blob", "Blob", "/blob", base, type="query"),
        action("slow", "String", "/slow", base, type="query", timeout=1),
        action("gone", "String", "/x", f"http://127.0.0.1:{free_port()}", type="query"),
        action("signup", "UserId", "/signup", base, arguments=[{"name": "n", "type": "String!"}]),
        {
            "type": "create_select_permission",
            "args": {
                "table": "user",
                "role": "user",
                "permission": {"columns": ["id", "name"], "filter": {"id": "X-Svc-User-Id"}},
            },
        },
        {"type": "create_action_permission", "args": {"action": "who", "role": "user"}},
        {"type": "create_action_permission", "args": {"action": "slow", "role": "user"}},
    ]
    r = s.query({"type": "bulk", "args": steps})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def reply(body: Any, status: int = 200, delay: float = 0.0) -> Any:
    return lambda req: Reply(
        status, json.dumps(body).encode(), {"Content-Type": "application/json"}, delay
    )


def test_handler_gets_the_reference_body_and_headers(srv: ServerProcess, hook: HttpFixture) -> None:
    seen: list[Recorded] = []

    def who(req: Recorded) -> Reply:
        seen.append(req)
        return Reply(200, json.dumps({"id": 1, "note": "hi"}).encode())

    hook.route("/who", who)
    query = "query { who(id: 1, arg: {id: 7}) { id note } }"
    headers = {"X-Client": "c1", "X-Svc-Role": "user", "X-Svc-User-Id": "1"}
    assert srv.graphql(query, headers=headers) == {"data": {"who": {"id": 1, "note": "hi"}}}
    body = seen[-1].json()
    assert body == {
        "action": {"name": "who"},
        "input": {"id": 1, "arg": {"id": "7"}},
        "session_variables": {"x-svc-role": "user", "x-svc-user-id": "1"},
        "request_query": query,
    }
    got = seen[-1].headers
    assert got["x-static"] == "v1" and got["x-env"] == "from-env"
    assert got["content-type"] == "application/json"
    assert got["user-agent"].startswith("svc/")
    assert got["x-client"] == "c1"  # forward_client_headers
    assert "x-svc-role" not in got and "x-svc-user-id" not in got  # the session is the body's


def test_relationships_come_from_one_statement(srv: ServerProcess, hook: HttpFixture) -> None:
    hook.route("/many", reply([{"id": 1}, {"id": 2}, {"id": 1}]))
    data = srv.graphql(
        "{ many { id user { name } articles(order_by: {id: desc}) { title } "
        "articles_aggregate { aggregate { count } } } }"
    )
    assert data == {
        "data": {
            "many": [
                {
                    "id": 1,
                    "user": {"name": "Ada"},
                    "articles": [{"title": "a2"}, {"title": "a1"}],
                    "articles_aggregate": {"aggregate": {"count": 2}},
                },
                {
                    "id": 2,
                    "user": {"name": "Bob"},
                    "articles": [{"title": "b1"}],
                    "articles_aggregate": {"aggregate": {"count": 1}},
                },
                {
                    "id": 1,
                    "user": {"name": "Ada"},
                    "articles": [{"title": "a2"}, {"title": "a1"}],
                    "articles_aggregate": {"aggregate": {"count": 2}},
                },
            ]
        }
    }
    hook.route("/nested", reply({"id": 9, "u": {"id": 2}}))
    assert srv.graphql("{ nested { id u { user { email } } } }") == {
        "data": {"nested": {"id": 9, "u": {"user": {"email": "bob@x.io"}}}}
    }


def test_relationship_rows_follow_the_roles_permission(
    srv: ServerProcess, hook: HttpFixture
) -> None:
    hook.route("/who", reply({"id": 2}))
    as_user = {"X-Svc-Role": "user", "X-Svc-User-Id": "1"}
    assert srv.graphql("{ who(id: 2) { id user { name } } }", headers=as_user) == {
        "data": {"who": {"id": 2, "user": None}}  # row 2 is filtered out for user 1
    }


def test_mixed_table_and_action_fields_answer_together(
    srv: ServerProcess, hook: HttpFixture
) -> None:
    hook.route("/blob", reply({"any": ["json", 1]}))
    data = srv.graphql(
        "{ a: user(where: {id: {_eq: 1}}) { name } blob b: user_by_pk(id: 2) { name } }"
    )
    assert data == {
        "data": {"a": [{"name": "Ada"}], "blob": {"any": ["json", 1]}, "b": {"name": "Bob"}}
    }


def test_recursive_output_types(srv: ServerProcess, hook: HttpFixture) -> None:
    hook.route("/rec", reply({"id": 1, "next": {"id": 2, "next": {"id": 3, "next": None}}}))
    assert srv.graphql("{ rec { id next { id next { id next { id } } } } }") == {
        "data": {"rec": {"id": 1, "next": {"id": 2, "next": {"id": 3, "next": None}}}}
    }


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            Reply(200, b"<html>oops</html>", {"Content-Type": "text/html"}),
            "not a valid json response from webhook",
        ),
        (Reply(200, b""), "not a valid json response from webhook"),
        (
            Reply(200, b'"text"'),
            "got scalar String for the action webhook response, expecting UserId",
        ),
        (Reply(200, b"[1]"), "got array for the action webhook response, expecting UserId"),
        (Reply(200, b'{"note": "x"}'), 'field "id" expected in webhook response, but not found'),
        (Reply(200, b'{"id": null}'), 'expecting not null value for field "id"'),
        (
            Reply(200, b'{"id": "1"}'),
            "got scalar String for the action webhook response, expecting Int",
        ),
        (Reply(500, b"{}"), "internal error"),
        (Reply(400, b'{"no": "message"}'), "unexpected response"),
        (Reply(hang_up=True), "http exception when calling webhook"),
    ],
)
def test_bad_answers_are_reference_errors(
    srv: ServerProcess, hook: HttpFixture, answer: Reply, message: str
) -> None:
    hook.route("/who", lambda req: answer)
    body = srv.graphql("{ who(id: 1) { id } }")
    assert body["errors"][0]["message"] == message, body
    assert body["errors"][0]["extensions"]["code"] == "unexpected"
    assert body["errors"][0]["extensions"]["internal"]["request"]["url"].endswith("/who")


def test_a_4xx_answer_carries_the_handlers_code(srv: ServerProcess, hook: HttpFixture) -> None:
    """The reference's `encodeGQLErr` (`Hasura/Base/Error.hs`): a handler's `extensions`
    are the error's whole `extensions` ("we ignore the `code` key"), otherwise its `code`
    (else `unexpected`) with the path."""
    hook.route("/who", reply({"message": "nope", "extensions": {"code": "my-code", "n": 1}}, 400))
    assert srv.graphql("{ who(id: 1) { id } }") == {
        "errors": [{"extensions": {"code": "my-code", "n": 1}, "message": "nope"}]
    }
    answer = {"message": "x", "code": "ignored", "extensions": {"retry": True}}
    hook.route("/who", reply(answer, 400))
    assert srv.graphql("{ who(id: 1) { id } }") == {
        "errors": [{"extensions": {"retry": True}, "message": "x"}]
    }
    hook.route("/who", reply({"message": "bad email", "code": "invalid-email"}, 422))
    assert srv.graphql("{ who(id: 1) { id } }") == {
        "errors": [{"extensions": {"path": "$", "code": "invalid-email"}, "message": "bad email"}]
    }
    hook.route("/who", reply({"message": "plain"}, 400))
    body = srv.graphql("{ who(id: 1) { id } }")
    assert body["errors"][0]["extensions"] == {"path": "$", "code": "unexpected"}


def test_internal_details_are_for_admins_only(srv: ServerProcess, hook: HttpFixture) -> None:
    hook.route("/slow", reply("late", delay=2.0))
    admin = srv.graphql("{ slow }")
    assert admin["errors"][0]["message"] == "http exception when calling webhook"
    internal = admin["errors"][0]["extensions"]["internal"]
    assert internal["error"] == {"type": "http_exception", "message": "Response timeout"}
    user = srv.graphql("{ slow }", headers={"X-Svc-Role": "user", "X-Svc-User-Id": "1"})
    assert user["errors"][0]["message"] == "http exception when calling webhook"
    assert "internal" not in user["errors"][0]["extensions"]
    gone = srv.graphql("{ gone }")
    assert gone["errors"][0]["message"] == "http exception when calling webhook"


def test_a_large_answer_is_read_whole(srv: ServerProcess, hook: HttpFixture) -> None:
    big = "x" * (10 * 1024 * 1024)
    hook.route("/blob", reply(big))
    body = srv.client.post("/v1/graphql", json={"query": "{ blob }"}).json()
    assert len(body["data"]["blob"]) == len(big)


def test_a_role_sees_only_permitted_actions_and_their_types(srv: ServerProcess) -> None:
    as_user = {"X-Svc-Role": "user", "X-Svc-User-Id": "1"}
    body = srv.graphql("{ many { id } }", headers=as_user)
    assert body["errors"][0]["extensions"]["code"] == "validation-failed"
    types = srv.graphql(
        '{ a: __type(name: "UserId") { name } b: __type(name: "Rec") { name } }', headers=as_user
    )
    assert types == {"data": {"a": {"name": "UserId"}, "b": None}}
    admin = srv.graphql('{ __type(name: "Rec") { name } }')
    assert admin == {"data": {"__type": {"name": "Rec"}}}


def test_mutation_action(srv: ServerProcess, hook: HttpFixture) -> None:
    hook.route(
        "/signup",
        lambda req: Reply(200, json.dumps({"id": len(req.json()["input"]["n"])}).encode()),
    )
    assert srv.graphql('mutation { signup(n: "abc") { id user { name } } }') == {
        "data": {"signup": {"id": 3, "user": None}}
    }


@pytest.mark.parametrize(
    ("step", "code", "message"),
    [
        (
            {
                "type": "create_action",
                "args": {
                    "name": "x",
                    "definition": {"output_type": "InObj", "handler": "http://h"},
                },
            },
            "invalid-configuration",
            'Inconsistent object: in action "x"; the type: "InObj" is not an object',
        ),
        (
            {
                "type": "create_action",
                "args": {
                    "name": "x",
                    "definition": {
                        "output_type": "UserId",
                        "handler": "http://h",
                        "arguments": [{"name": "a", "type": "Nope"}],
                    },
                },
            },
            "invalid-configuration",
            'Inconsistent object: in action "x"; the type: "Nope" is not defined',
        ),
        (
            {
                "type": "create_action",
                "args": {
                    "name": "who",
                    "definition": {"output_type": "UserId", "handler": "http://h"},
                },
            },
            "already-exists",
            'action with name "who" already exists',
        ),
        (
            {"type": "drop_action", "args": {"name": "nope"}},
            "not-exists",
            'action with name "nope" does not exist',
        ),
        (
            {
                "type": "set_custom_types",
                "args": {"objects": [{"name": "Rec", "fields": [{"name": "id", "type": "Int!"}]}]},
            },
            "invalid-configuration",
            "Inconsistent object: in action",  # UserId, still used, would disappear
        ),
        (
            {
                "type": "set_custom_types",
                "args": {
                    "objects": [{"name": "T", "fields": [{"name": "f", "type": "NoSuchType"}]}]
                },
            },
            "invalid-configuration",
            'the type "NoSuchType" for field "f" in  object type "T" does not exist',
        ),
        (
            {
                "type": "create_action",
                "args": {
                    "name": "x",
                    "definition": {
                        "output_type": "UserId",
                        "handler": "http://h",
                        "headers": [{"name": "h", "value_from_env": "SVC_GRAPHQL_ADMIN_SECRET"}],
                    },
                },
            },
            "parse-failed",
            'env variables starting with "SVC_GRAPHQL_" are not allowed',
        ),
        (
            {
                "type": "create_action",
                "args": {
                    "name": "bad-name",
                    "definition": {"output_type": "UserId", "handler": "http://h"},
                },
            },
            "parse-failed",
            "bad-name is not valid GraphQL name",
        ),
        (
            {
                "type": "set_custom_types",
                "args": {
                    "objects": [{"name": "article", "fields": [{"name": "id", "type": "Int"}]}]
                },
            },
            "invalid-configuration",
            "the following types already exist in the schema: article",
        ),
        (
            {"type": "set_custom_types", "args": {"scalars": [{"name": "__Reserved"}]}},
            "parse-failed",
            "__Reserved is not valid GraphQL name: names starting with __ are reserved",
        ),
        (
            {
                "type": "replace_metadata",
                "args": {
                    "version": 2,
                    "actions": [
                        {"name": "x y", "definition": {"output_type": "Int", "handler": "http://h"}}
                    ],
                },
            },
            "invalid-configuration",
            'Inconsistent object: in action "x y"; x y is not valid GraphQL name',
        ),
    ],
)
def test_metadata_refusals_keep_the_old_metadata(
    srv: ServerProcess, step: dict[str, Any], code: str, message: str
) -> None:
    before = srv.query({"type": "export_metadata", "args": {}}).json()
    r = srv.query(step)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == code
    assert message in r.json()["error"], r.json()
    assert srv.query({"type": "export_metadata", "args": {}}).json() == before


def test_permissions_round_trip(srv: ServerProcess) -> None:
    drop = {"type": "drop_action_permission", "args": {"action": "who", "role": "user"}}
    assert srv.query(drop).status_code == 200
    again = srv.query(drop)
    assert again.status_code == 400 and again.json()["code"] == "not-exists"
    create = {"type": "create_action_permission", "args": {"action": "who", "role": "user"}}
    assert srv.query(create).status_code == 200
    dup = srv.query(create)
    assert dup.status_code == 400 and dup.json()["code"] == "already-exists"


def test_a_handlers_cookie_is_not_sent_to_later_calls(
    srv: ServerProcess, hook: HttpFixture
) -> None:
    seen: list[Recorded] = []

    def who(req: Recorded) -> Reply:
        seen.append(req)
        return Reply(200, b'{"id": 1}', {"Set-Cookie": "session=abc; Path=/"})

    hook.route("/who", who)
    for _ in range(2):
        assert srv.graphql("{ who(id: 1) { id } }") == {"data": {"who": {"id": 1}}}
        srv.client.cookies.clear()  # the client got the cookie (passed back) and would forward it
    assert "cookie" not in seen[-1].headers  # the shared outbound client keeps no cookies


def test_relationship_arguments_apply_per_object(srv: ServerProcess, hook: HttpFixture) -> None:
    """`limit` applies to each object's rows (its own subquery), `where` to the group's."""
    hook.route("/many", reply([{"id": 1}, {"id": 2}, {"id": 3}]))
    data = srv.graphql(
        "{ many { id first: articles(limit: 1, order_by: {id: asc}) { title } "
        'a: articles(where: {title: {_like: "a%"}}) { title } } }'
    )
    assert data == {
        "data": {
            "many": [
                {"id": 1, "first": [{"title": "a1"}], "a": [{"title": "a1"}, {"title": "a2"}]},
                {"id": 2, "first": [{"title": "b1"}], "a": []},
                {"id": 3, "first": [], "a": []},
            ]
        }
    }


def test_the_handlers_set_cookie_reaches_the_client(srv: ServerProcess, hook: HttpFixture) -> None:
    hook.route("/who", lambda req: Reply(200, b'{"id": 1}', {"Set-Cookie": "s=1; Path=/"}))
    r = srv.client.post("/v1/graphql", json={"query": "{ who(id: 1) { id } }"})
    assert r.json() == {"data": {"who": {"id": 1}}}
    assert r.headers.get_list("set-cookie") == ["s=1; Path=/"]
    srv.client.cookies.clear()
    plain = srv.client.post("/v1/graphql", json={"query": "{ user_by_pk(id: 1) { id } }"})
    assert "set-cookie" not in plain.headers  # nothing left over for the next request


def test_explain_of_an_action_field_is_refused(srv: ServerProcess) -> None:
    r = srv.client.post("/v1/graphql/explain", json={"query": {"query": "{ many { id } }"}})
    # Hasura.GraphQL.Explain.explainQueryField: RFAction -> throw400 InvalidParams.
    assert r.status_code == 400
    assert r.json()["code"] == "invalid-params"
    assert r.json()["error"] == "query actions cannot be explained"


def test_websocket_operations_forward_the_connections_headers(
    srv: ServerProcess, hook: HttpFixture
) -> None:
    seen: list[Recorded] = []

    def who(req: Recorded) -> Reply:
        seen.append(req)
        return Reply(200, b'{"id": 1}')

    hook.route("/who", who)

    async def run() -> Any:
        url = "ws" + srv.url.removeprefix("http") + "/v1/graphql"
        async with websockets.connect(url) as ws:  # Apollo graphql-ws (no sub-protocol)
            init = {"type": "connection_init", "payload": {"headers": {"X-Client": "ws1"}}}
            await ws.send(json.dumps(init))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            start = {"query": "{ who(id: 1) { id } }"}
            await ws.send(json.dumps({"id": "1", "type": "start", "payload": start}))
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if frame.get("type") == "data":
                    return frame["payload"]

    assert asyncio.run(run()) == {"data": {"who": {"id": 1}}}
    assert seen[-1].headers["x-client"] == "ws1"


def test_a_mixed_request_counts_once_against_a_rate_limit(
    srv: ServerProcess, hook: HttpFixture
) -> None:
    hook.route("/who", reply({"id": 1}))
    limit = {"max_reqs_per_min": 2, "unique_params": ["x-svc-user-id"]}
    r = srv.query({"type": "set_api_limits", "args": {"rate_limit": {"global": limit}}})
    assert r.status_code == 200, r.text
    try:
        as_user = {"X-Svc-Role": "user", "X-Svc-User-Id": "77"}
        query = "{ user { id } who(id: 1) { id } }"
        for _ in range(2):
            assert srv.graphql(query, headers=as_user) == {"data": {"user": [], "who": {"id": 1}}}
        refused = srv.graphql(query, headers=as_user)
        assert refused["errors"][0]["extensions"]["code"] == "rate-limit-exceeded"
    finally:
        assert srv.query({"type": "remove_api_limits", "args": {}}).status_code == 200
