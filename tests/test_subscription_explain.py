"""Explain of a subscription (issue 13; reference notes "Explain of a subscription"): one
object `{sql, plan, variables: {query, session, synthetic, cursor}}` of the multiplexed
statement, the same statement the poller runs, over a real server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svc.api.engine import Engine
from svc.config import Config
from tests.support import ServerProcess, server_with

SQL = """
create table item (id serial primary key, owner int not null, public boolean not null,
                   name text not null);
insert into item (owner, public, name) values (1, true, 'one'), (2, false, 'two');
"""
STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "item"},
    {
        "type": "create_select_permission",
        "args": {
            "table": "item",
            "role": "user",
            "permission": {"columns": ["id", "name"], "filter": {"owner": "X-Svc-User-Id"}},
        },
    },
    {
        "type": "create_select_permission",
        "args": {
            "table": "item",
            "role": "public",
            "permission": {"columns": ["id", "name"], "filter": {"public": {"_eq": True}}},
        },
    },
]
BY_ID = "subscription ($id: Int! = 1) { item(where: {id: {_eq: $id}}) { name } }"
BY_IDS = "subscription ($ids: [Int!] = [1, 2, 3]) { item(where: {id: {_in: $ids}}) { id } }"


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[ServerProcess]:
    with server_with(pg_url, STEPS) as s:
        yield s


def explain(server: ServerProcess, query: str, user: dict[str, str], **extra: Any) -> Any:
    body = {"query": {"query": query, **extra}, "user": user}
    r = server.client.post("/v1/graphql/explain", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_one_object_of_the_multiplexed_statement(server: ServerProcess) -> None:
    got = explain(server, BY_ID, {"x-svc-role": "user", "x-svc-user-id": "1"})
    assert set(got) == {"sql", "plan", "variables"}
    assert "unnest($1::text[]::uuid[], $2::text[]::json[])" in got["sql"]
    assert any("Function Scan on _subs" in line for line in got["plan"]), got["plan"]
    assert got["variables"] == {
        "query": {},
        "session": {"x-svc-user-id": "1"},  # only what the permission reads
        "synthetic": ["1"],
        "cursor": {},
    }


def test_session_only_when_read(server: ServerProcess) -> None:
    got = explain(server, "subscription { item { id } }", {"x-svc-role": "public"})
    assert got["variables"]["session"] == {}
    assert got["variables"]["synthetic"] == ["true"]  # the filter's literal


def test_list_variables_are_array_literals(server: ServerProcess) -> None:
    got = explain(server, BY_IDS, {"x-svc-role": "admin"})
    assert got["variables"]["synthetic"] == ["{1,2,3}"]
    got = explain(server, BY_IDS, {"x-svc-role": "admin"}, variables={"ids": [2]})
    assert got["variables"]["synthetic"] == ["{2}"]
    names = "subscription ($n: [String!]!) { item(where: {name: {_in: $n}}) { id } }"
    odd = ["a b", "NULL", 'q"', "x"]
    got = explain(server, names, {"x-svc-role": "admin"}, variables={"n": odd})
    assert got["variables"]["synthetic"] == ['{"a b","NULL","q\\"",x}']


def test_missing_session_variable(server: ServerProcess) -> None:
    body = {"query": {"query": BY_ID}, "user": {"x-svc-role": "user"}}
    r = server.client.post("/v1/graphql/explain", json=body)
    assert r.status_code == 400
    assert r.json()["code"] == "not-found"


def test_queries_keep_their_shape(server: ServerProcess) -> None:
    got = explain(server, "{ item { id } }", {"x-svc-role": "admin"})
    assert isinstance(got, list) and [g["field"] for g in got] == ["item"]


def test_explained_statement_is_the_polled_one(new_database: Callable[[], str]) -> None:
    asyncio.run(_polled(new_database()))


async def _polled(url: str) -> None:
    eng = await Engine.start(Config(database_url=url, log_requests=False))
    try:
        await eng.metadata({"type": "bulk", "args": STEPS}, "admin")
        ran: list[tuple[str, list[Any]]] = []
        real = eng.db.query_json

        async def recorded(sql: str, args: list[Any], columns: int, timeout: Any = None) -> Any:
            ran.append((sql, args))
            return await real(sql, args, columns, timeout)

        eng.db.query_json = recorded  # type: ignore[method-assign]
        user = {"x-svc-role": "user", "x-svc-user-id": "2"}
        pushed: list[bytes] = []

        async def push(body: bytes) -> None:
            pushed.append(body)

        handle = await eng.subscribe({"query": BY_ID, "variables": {"id": 2}}, "user", user, push)
        for _ in range(100):
            if pushed:
                break
            await asyncio.sleep(0.02)
        assert pushed == [b'{"data":{"item" : [{"name":"two"}]}}']
        await handle.stop()
        got = await eng.explain({"query": {"query": BY_ID, "variables": {"id": 2}}, "user": user})
        sql, args = ran[0]
        assert got["sql"] == sql
        assert [got["variables"]] == [json.loads(v) for v in args[1]]
    finally:
        await eng.close()
