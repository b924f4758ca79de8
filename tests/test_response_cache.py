"""`@cached(ttl, refresh)` on `/v1/graphql` (issue 18): declared in every role's schema as
the reference declares it, and honoured: an answer is served again for `ttl` seconds per
role, session variables, query and variables; `refresh: true` replaces it; answers with
errors are not kept. One worker, so every request meets the same cache."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from svc.api.response_cache import ResponseCache, cached_directive
from tests.support import ServerProcess, create_database

SETUP = "CREATE TABLE note (id integer PRIMARY KEY, body text NOT NULL, owner text);"
STEPS = [
    {"type": "run_sql", "args": {"sql": SETUP}},
    {"type": "track_table", "args": "note"},
    {
        "type": "create_select_permission",
        "args": {
            "table": "note",
            "role": "user",
            "permission": {"columns": "*", "filter": {"owner": {"_eq": "X-Svc-User-Id"}}},
        },
    },
]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url), "--workers", "1")
    try:
        assert s.query({"type": "bulk", "args": STEPS}).status_code == 200
        yield s
    finally:
        s.stop()


def write(s: ServerProcess, id_: int, body: str, owner: str = "a") -> None:
    m = """mutation ($id: Int!, $b: String!, $o: String!) {
      insert_note_one(object: {id: $id, body: $b, owner: $o},
        on_conflict: {constraint: note_pkey, update_columns: [body]}) { id } }"""
    assert "errors" not in s.graphql(m, {"id": id_, "b": body, "o": owner})


def bodies(s: ServerProcess, query: str, **kw: Any) -> list[str]:
    answer = s.graphql(query, **kw)
    assert "errors" not in answer, answer
    return [n["body"] for n in answer["data"]["note"]]


def test_cached_answers_until_refreshed(srv: ServerProcess) -> None:
    write(srv, 1, "first")
    cached = "query Q @cached(ttl: 60) { note(order_by: {id: asc}) { body } }"
    assert bodies(srv, cached) == ["first"]
    write(srv, 1, "second")
    assert bodies(srv, cached) == ["first"]  # served from the cache
    plain = "query Q { note(order_by: {id: asc}) { body } }"
    assert bodies(srv, plain) == ["second"]
    refresh = "query Q @cached(ttl: 60, refresh: true) { note(order_by: {id: asc}) { body } }"
    assert bodies(srv, refresh) == ["second"]
    # another document text is another entry; the refreshed one is its own entry too
    assert bodies(srv, cached) == ["first"]


def test_ttl_expires(srv: ServerProcess) -> None:
    write(srv, 2, "old")
    q = "query @cached(ttl: 1) { note(where: {id: {_eq: 2}}) { body } }"
    assert bodies(srv, q) == ["old"]
    write(srv, 2, "new")
    assert bodies(srv, q) == ["old"]
    time.sleep(1.2)
    assert bodies(srv, q) == ["new"]


def test_keyed_by_variables_role_and_session(srv: ServerProcess) -> None:
    write(srv, 3, "mine", owner="u1")
    write(srv, 4, "theirs", owner="u2")
    q = "query ($id: Int!) @cached { note(where: {id: {_eq: $id}}) { body } }"
    assert bodies(srv, q, variables={"id": 3}) == ["mine"]
    assert bodies(srv, q, variables={"id": 4}) == ["theirs"]
    mine = "query @cached { note(order_by: {id: asc}) { body } }"
    u1 = {"x-svc-role": "user", "x-svc-user-id": "u1"}
    u2 = {"x-svc-role": "user", "x-svc-user-id": "u2"}
    assert bodies(srv, mine, headers=u1) == ["mine"]
    assert bodies(srv, mine, headers=u2) == ["theirs"]
    assert bodies(srv, mine)[-2:] == ["mine", "theirs"]  # admin: its own entry


def test_errors_are_not_cached(srv: ServerProcess) -> None:
    q = "query ($id: Int!) @cached { note(where: {id: {_eq: $id}}) { body } }"
    failed = srv.graphql(q)  # the variable is missing
    assert failed["errors"][0]["extensions"]["code"] == "validation-failed"
    bad = srv.graphql("query @cached { nothing_here { id } }")
    assert bad["errors"][0]["extensions"]["code"] == "validation-failed"


def test_directive_in_introspection(srv: ServerProcess) -> None:
    q = """{ __schema { directives { name locations
      args { name defaultValue type { kind ofType { name } } } } } }"""
    found = {d["name"]: d for d in srv.graphql(q)["data"]["__schema"]["directives"]}
    cached = found["cached"]
    assert cached["locations"] == ["QUERY"]
    args = {a["name"]: a for a in cached["args"]}
    assert args["ttl"]["defaultValue"] == "60"
    assert args["ttl"]["type"] == {"kind": "NON_NULL", "ofType": {"name": "Int"}}
    assert args["refresh"]["defaultValue"] == "false"
    # not allowed on mutations
    m = 'mutation @cached { insert_note_one(object: {id: 9, body: "x"}) { id } }'
    assert srv.graphql(m)["errors"][0]["extensions"]["code"] == "validation-failed"


def test_directive_reading() -> None:
    assert cached_directive("query @cached { a }", None) == (60, False)
    assert cached_directive("query @cached(ttl: 5, refresh: true) { a }", None) == (5, True)
    assert cached_directive("query A { a } query B @cached { b }", "B") == (60, False)
    assert cached_directive("query A { a } query B @cached { b }", "A") is None
    assert cached_directive("mutation @cached { a }", None) is None
    assert cached_directive("query @cached(ttl: 99999) { a }", None) == (3600, False)
    assert cached_directive("{ a", None) is None


async def test_bounded() -> None:
    cache = ResponseCache(max_entries=3, max_bytes=1000)
    calls = 0

    async def run() -> bytes:
        nonlocal calls
        calls += 1
        return b'{"data":{"a":1}}'

    for i in range(5):
        body = b'{"query": "query @cached { a }", "variables": {"i": %d}}' % i
        await cache.answer(body, 1, "admin", {}, run)
    assert len(cache.entries) == 3 and calls == 5
    body = b'{"query": "query @cached { a }", "variables": {"i": 4}}'
    await cache.answer(body, 1, "admin", {}, run)
    assert calls == 5  # the newest entry is still there
    await cache.answer(body, 2, "admin", {}, run)
    assert calls == 6  # another metadata version: another entry
