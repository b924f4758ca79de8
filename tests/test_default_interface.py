"""`svc serve` with no `--server-interface` (the default: Granian's ASGI interface) and the
default worker count keeps what RSGI lost: a session header value that is not ASCII reaches
the session as UTF-8, and a RESTified endpoint's path variable keeps an encoded slash
(`%2F`) inside one value. Each request is sent several times over several connections, so
the repeated-request path (`svc/server/again.py`) answers too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support import ServerProcess, server_with

SETUP = """
create table person (id int primary key, name text not null);
insert into person values (1, 'Zoë'), (2, 'Zoe'), (3, 'a/b'), (4, 'a'), (5, 'X%20Y');
"""
BY_NAME = "query ($name: String!) { person(where: {name: {_eq: $name}}) { id name } }"
STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": SETUP}},
    {"type": "track_table", "args": "person"},
    {
        "type": "create_select_permission",
        "args": {
            "table": "person",
            "role": "named",
            "permission": {"columns": ["id", "name"], "filter": {"name": {"_eq": "X-Svc-Name"}}},
        },
    },
    {
        "type": "create_query_collection",
        "args": {"name": "c", "definition": {"queries": [{"name": "by_name", "query": BY_NAME}]}},
    },
    {
        "type": "create_rest_endpoint",
        "args": {
            "name": "by_name",
            "url": "person/:name",
            "methods": ["GET"],
            "definition": {"query": {"collection_name": "c", "query_name": "by_name"}},
        },
    },
]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    with server_with(pg_url, STEPS) as s:  # no --server-interface: the default
        yield s


def pool(s: ServerProcess) -> list[httpx.Client]:
    """Two keep-alive connections and a client opening one per request."""
    fresh = httpx.Limits(max_keepalive_connections=0)
    return [
        httpx.Client(base_url=s.url, timeout=30),
        httpx.Client(base_url=s.url, timeout=30),
        httpx.Client(base_url=s.url, timeout=30, limits=fresh),
    ]


def test_server_runs_the_default_interface(srv: ServerProcess) -> None:
    assert "--server-interface" not in srv.proc.args


def test_a_non_ascii_session_header_reaches_the_session_as_utf8(srv: ServerProcess) -> None:
    query = {"query": "{ person(order_by: {id: asc}) { id name } }"}
    cases = [
        ("Zoë", [{"id": 1, "name": "Zoë"}]),
        ("Zoe", [{"id": 2, "name": "Zoe"}]),
        ("a/b", [{"id": 3, "name": "a/b"}]),
    ]
    clients = pool(srv)
    try:
        for rnd in range(4):
            for k, (name, expected) in enumerate(cases):
                c = clients[(rnd + k) % len(clients)]
                headers = [(b"X-Svc-Role", b"named"), (b"X-Svc-Name", name.encode())]
                r = c.post("/v1/graphql", json=query, headers=headers)
                assert r.status_code == 200, r.text
                assert r.json() == {"data": {"person": expected}}, (rnd, name, r.text)
    finally:
        for c in clients:
            c.close()


def test_an_encoded_slash_stays_in_a_rest_path_variable(srv: ServerProcess) -> None:
    cases = [
        ("a%2Fb", [{"id": 3, "name": "a/b"}]),
        ("a%2fb", [{"id": 3, "name": "a/b"}]),
        ("a", [{"id": 4, "name": "a"}]),
        ("Zo%C3%AB", [{"id": 1, "name": "Zoë"}]),
        ("X%2520Y", [{"id": 5, "name": "X%20Y"}]),
    ]
    clients = pool(srv)
    try:
        for rnd in range(2):
            for k, (segment, expected) in enumerate(cases):
                c = clients[(rnd + k) % len(clients)]
                r = c.get(f"/api/rest/person/{segment}")
                assert r.status_code == 200, (segment, r.status_code, r.text)
                assert r.json() == {"person": expected}, (segment, r.text)
        # An unencoded slash is another path: no endpoint has two segments after person/.
        r = clients[0].get("/api/rest/person/a/b")
        assert r.status_code == 404, r.text
    finally:
        for c in clients:
            c.close()
