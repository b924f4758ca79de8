"""The metadata API, the GraphQL endpoint and explain over real HTTP against a real server."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.support import ServerProcess, author_article_steps, create_database

SETUP = """
create table author (id serial primary key, name text not null, info jsonb);
create table article (id serial primary key, title text, author_id int references author(id));
insert into author (name, info) values ('Ada', '{"k": 1}'), ('Bob', null);
insert into article (title, author_id) values ('a', 1), ('b', 1), ('c', 2);
"""


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url))
    assert s.query({"type": "run_sql", "args": {"sql": SETUP}}).status_code == 200
    r = s.query({"type": "bulk", "args": author_article_steps()})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def export(s: ServerProcess) -> object:
    r = s.query({"type": "export_metadata", "args": {}})
    assert r.status_code == 200
    return r.json()


def test_malformed_json_is_invalid_json(srv: ServerProcess) -> None:
    r = srv.client.post("/v1/query", content=b"{not json")
    assert r.status_code == 400
    assert r.json()["code"] == "invalid-json"


def test_unknown_operation_is_refused_clearly(srv: ServerProcess) -> None:
    r = srv.query({"type": "frobnicate", "args": {}})
    assert r.status_code == 400
    assert "frobnicate" in r.json()["error"]
    assert r.json()["code"] == "parse-failed"


def test_tracking_a_missing_table_is_not_exists(srv: ServerProcess) -> None:
    r = srv.query({"type": "track_table", "args": {"name": "nope"}})
    assert r.status_code == 400
    assert r.json()["code"] == "not-exists"
    assert r.json()["path"] == "$.args"


def test_tracking_twice_is_already_tracked(srv: ServerProcess) -> None:
    r = srv.query({"type": "track_table", "args": {"name": "author"}})
    assert (r.status_code, r.json()["code"]) == (400, "already-tracked")


def test_relationship_on_a_column_without_fk_is_refused(srv: ServerProcess) -> None:
    before = export(srv)
    r = srv.query(
        {
            "type": "create_object_relationship",
            "args": {
                "table": "article",
                "name": "x",
                "using": {"foreign_key_constraint_on": "title"},
            },
        }
    )
    assert r.status_code == 400
    assert r.json()["code"] == "invalid-configuration"
    assert export(srv) == before


def test_relationship_needs_exactly_one_using(srv: ServerProcess) -> None:
    r = srv.query(
        {
            "type": "create_object_relationship",
            "args": {"table": "article", "name": "x", "using": {}},
        }
    )
    assert r.status_code == 400


def test_failed_bulk_leaves_metadata_as_before(srv: ServerProcess) -> None:
    before = export(srv)
    r = srv.query(
        {
            "type": "bulk",
            "args": [
                {"type": "run_sql", "args": {"sql": "create table bulk_tmp (id int primary key)"}},
                {"type": "track_table", "args": {"name": "bulk_tmp"}},
                {"type": "track_table", "args": {"name": "does_not_exist"}},
            ],
        }
    )
    assert r.status_code == 400
    assert export(srv) == before
    # The SQL step was rolled back too.
    r = srv.query({"type": "run_sql", "args": {"sql": "select to_regclass('bulk_tmp')::text"}})
    assert r.json()["result"] == [["to_regclass"], ["NULL"]]


def test_non_admin_gets_access_denied(srv: ServerProcess) -> None:
    r = srv.query({"type": "run_sql", "args": {"sql": "select 1"}}, headers={"X-Svc-Role": "user"})
    assert r.status_code == 400
    assert r.json()["code"] == "access-denied"


def test_run_sql_results(srv: ServerProcess) -> None:
    r = srv.query(
        {
            "type": "run_sql",
            "args": {"sql": "select 1; select id, name, info, true as t from author order by id"},
        }
    )
    assert r.json() == {
        "result_type": "TuplesOk",
        "result": [
            ["id", "name", "info", "t"],
            ["1", "Ada", '{"k": 1}', "t"],
            ["2", "Bob", "NULL", "t"],
        ],
    }
    r = srv.query({"type": "run_sql", "args": {"sql": "set local timezone = 'UTC'"}})
    assert r.json() == {"result_type": "CommandOk", "result": None}


def test_run_sql_read_only_refuses_writes(srv: ServerProcess) -> None:
    r = srv.query(
        {
            "type": "run_sql",
            "args": {"sql": "insert into author (name) values ('x')", "read_only": True},
        }
    )
    assert r.status_code == 400
    assert r.json()["code"] == "postgres-error"
    r = srv.query(
        {"type": "run_sql", "args": {"sql": "select ' drop ' as alter", "read_only": True}}
    )
    assert r.json()["result"] == [["alter"], [" drop "]]


def test_schema_follows_ddl_without_restart(srv: ServerProcess) -> None:
    r = srv.query(
        {"type": "run_sql", "args": {"sql": "alter table author add column nick text default 'n'"}}
    )
    assert r.status_code == 200
    body = srv.graphql("{ author(order_by: {id: asc}, limit: 1) { nick } }")
    assert body == {"data": {"author": [{"nick": "n"}]}}


def test_graphql_syntax_error(srv: ServerProcess) -> None:
    body = srv.graphql("{ author { id ")
    assert body["errors"][0]["extensions"]["code"] == "validation-failed"


def test_graphql_unknown_field(srv: ServerProcess) -> None:
    body = srv.graphql("{ author { nope } }")
    assert body["errors"][0]["extensions"]["code"] == "validation-failed"
    assert "nope" in body["errors"][0]["message"]


def test_graphql_variables_defaults_operation_name_and_batches(srv: ServerProcess) -> None:
    q = (
        "query a($id: Int = 2) { author_by_pk(id: $id) { name } } "
        "query b { author_aggregate { aggregate { count } } }"
    )
    r = srv.client.post(
        "/v1/graphql",
        json=[
            {"query": q, "operationName": "a"},
            {"query": q, "operationName": "a", "variables": {"id": 1}},
            {"query": q, "operationName": "b"},
        ],
    )
    assert r.json() == [
        {"data": {"author_by_pk": {"name": "Bob"}}},
        {"data": {"author_by_pk": {"name": "Ada"}}},
        {"data": {"author_aggregate": {"aggregate": {"count": 2}}}},
    ]


def test_plan_cache_serves_new_variable_values(srv: ServerProcess) -> None:
    q = "query q($n: String) { author(where: {name: {_eq: $n}}) { id } }"
    assert srv.graphql(q, {"n": "Ada"}) == {"data": {"author": [{"id": 1}]}}
    assert srv.graphql(q, {"n": "Bob"}) == {"data": {"author": [{"id": 2}]}}
    # A null operand drops the comparison (Hasura), so the cached plan must not be reused.
    assert len(srv.graphql(q, {"n": None})["data"]["author"]) == 2


def test_injection_strings_stay_values(srv: ServerProcess) -> None:
    evil = "x'); drop table author; --"
    body = srv.graphql(
        "query q($n: String) { author(where: {name: {_eq: $n}}) { id } }", {"n": evil}
    )
    assert body == {"data": {"author": []}}
    assert srv.graphql('{ author(where: {name: {_like: "%\' or 1=1 --"}}) { id } }') == {
        "data": {"author": []}
    }
    assert len(srv.graphql("{ author { id } }")["data"]["author"]) == 2


def test_introspection_and_typename(srv: ServerProcess) -> None:
    body = srv.graphql(
        '{ __typename __type(name: "author") { name } author(limit: 1) { __typename } }'
    )
    assert body == {
        "data": {
            "__typename": "query_root",
            "__type": {"name": "author"},
            "author": [{"__typename": "author"}],
        }
    }


def test_explain_shape(srv: ServerProcess) -> None:
    r = srv.client.post(
        "/v1/graphql/explain",
        json={"query": {"query": "{ a: author { id } article(limit: 1) { title } }"}},
    )
    assert r.status_code == 200
    out = r.json()
    assert [e["field"] for e in out] == ["a", "article"]
    assert all(isinstance(e["sql"], str) and e["plan"] for e in out)


def test_second_process_follows_metadata_changes(srv: ServerProcess, pg_url: str) -> None:
    url = create_database(pg_url)
    one, two = ServerProcess(url), ServerProcess(url)
    try:
        one.query({"type": "run_sql", "args": {"sql": "create table t2p (id int primary key)"}})
        assert one.query({"type": "track_table", "args": {"name": "t2p"}}).status_code == 200
        deadline = time.monotonic() + 10
        body = two.graphql("{ t2p { id } }")
        while "errors" in body and time.monotonic() < deadline:
            time.sleep(0.1)
            body = two.graphql("{ t2p { id } }")
        assert body == {"data": {"t2p": []}}
    finally:
        one.stop()
        two.stop()
