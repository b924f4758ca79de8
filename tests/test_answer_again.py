"""A query sent again with the same bytes is answered from a cache entry of its statement
(`GraphQLService.answer_again`): the entry must still read each request's session, follow
data and metadata changes, and leave errors, batches and mutations alone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator

import httpx
import pytest

from svc.api.engine import Engine
from svc.config import Config
from tests.support import ServerProcess, server_with

SQL = """
create table item (id serial primary key, owner text not null, name text not null);
insert into item (owner, name) values ('a', 'one'), ('b', 'two'), ('a', 'three');
"""
STEPS = [
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
]
ITEMS = b'{"query":"{ item(order_by: {id: asc}) { name } }"}'


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[ServerProcess]:
    with server_with(pg_url, STEPS) as s:
        yield s


def post(server: ServerProcess, body: bytes, **headers: str) -> httpx.Response:
    return server.client.post(
        "/v1/graphql", content=body, headers={"content-type": "application/json", **headers}
    )


def names(r: httpx.Response) -> list[str]:
    assert r.status_code == 200, r.text
    return [i["name"] for i in r.json()["data"]["item"]]


def test_same_bytes_other_session(server: ServerProcess) -> None:
    """One body, one role, different users: each answer reads its own session."""
    user = {"x-svc-role": "user"}
    for _ in range(3):
        assert names(post(server, ITEMS, **user, **{"x-svc-user-id": "a"})) == ["one", "three"]
        assert names(post(server, ITEMS, **user, **{"x-svc-user-id": "b"})) == ["two"]
        assert names(post(server, ITEMS)) == ["one", "two", "three"]  # admin
    missing = post(server, ITEMS, **user).json()
    assert missing["errors"][0]["extensions"]["code"] == "not-found"


def test_roles_do_not_share_entries(server: ServerProcess) -> None:
    body = b'{"query":"{ item { owner } }"}'
    assert post(server, body).json()["data"]["item"][0]["owner"] in ("a", "b")
    denied = post(server, body, **{"x-svc-role": "user", "x-svc-user-id": "a"}).json()
    assert denied["errors"][0]["extensions"]["code"] == "validation-failed"


def test_new_rows_and_new_metadata_are_seen(server: ServerProcess) -> None:
    body = b'{"query":"{ item(where: {owner: {_eq: \\"c\\"}}) { name } }"}'
    assert names(post(server, body)) == []
    run = {"type": "run_sql", "args": {"sql": "insert into item (owner, name) values ('c', 'x')"}}
    assert server.query(run).status_code == 200
    assert names(post(server, body)) == ["x"]
    drop = {"type": "drop_select_permission", "args": {"table": "item", "role": "user"}}
    assert server.query(drop).status_code == 200
    user = {"x-svc-role": "user", "x-svc-user-id": "a"}
    gone = post(server, ITEMS, **user).json()
    assert gone["errors"][0]["extensions"]["code"] == "validation-failed"


def test_errors_batches_and_mutations_are_not_replayed(server: ServerProcess) -> None:
    assert post(server, b"{not json").status_code == 400
    assert post(server, b"{not json").status_code == 400
    batch = json.dumps([{"query": "{ item(limit: 1) { id } }"}] * 2).encode()
    for _ in range(2):
        answer = post(server, batch).json()
        assert isinstance(answer, list) and len(answer) == 2
    insert = json.dumps(
        {"query": 'mutation { insert_item(objects: [{owner: "m", name: "m"}]) { affected_rows } }'}
    ).encode()
    for _ in range(2):
        assert post(server, insert).json()["data"]["insert_item"]["affected_rows"] == 1
    count = (
        b'{"query":"{ item_aggregate(where: {owner: {_eq: \\"m\\"}}) { aggregate { count } } }"}'
    )
    assert post(server, count).json()["data"]["item_aggregate"]["aggregate"]["count"] == 2


def test_second_request_is_answered_from_its_bytes(new_database: Callable[[], str]) -> None:
    """In process: the first request fills the entry, the same bytes then hit it."""

    url = new_database()

    async def go() -> None:
        eng = await Engine.start(Config(database_url=url, log_requests=False))
        try:
            await eng.metadata({"type": "bulk", "args": STEPS}, "admin")
            session = {"x-svc-role": "admin"}
            assert (
                await eng.graphql_service.answer_again(eng.state, "admin", session, ITEMS) is None
            )
            first = await eng.graphql_body(ITEMS, "admin", session)
            again = await eng.graphql_service.answer_again(eng.state, "admin", session, ITEMS)
            assert again == first
            assert json.loads(first)["data"]["item"][0] == {"name": "one"}
        finally:
            await eng.close()

    asyncio.run(go())
