"""Bounds on remote schema calls (svc extension, `svc.api.remote_guard`): a circuit breaker
that answers a clear error while a remote is down, and a concurrency limit per remote,
on a real `svc serve` (default workers) and a real remote GraphQL server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from graphql import GraphQLSchema, build_schema

from tests.fixture_servers.remote_graphql import Endpoint, GraphQLHttp, resolvers
from tests.support import ServerProcess, create_database, free_port

WORKERS = 2  # the default on the 2-core test machine; bounds are per worker process


class Meter:
    """Calls in flight at the remote now and at most."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.lock = threading.Lock()

    def slow(self, *_: Any) -> str:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.3)
        with self.lock:
            self.now -= 1
        return "slow"


def _schema(meter: Meter) -> GraphQLSchema:
    schema = build_schema("type Query { ping: String  slow: String }")
    resolvers(schema, {"Query": {"ping": lambda *_: "pong", "slow": meter.slow}})
    return schema


@pytest.fixture(scope="module")
def meter() -> Meter:
    return Meter()


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


def _remote(port: int, meter: Meter) -> GraphQLHttp:
    server = GraphQLHttp(port, {"/": Endpoint(_schema(meter))})
    server.start()
    return server


@pytest.fixture(scope="module")
def remote(port: int, meter: Meter) -> Iterator[GraphQLHttp]:
    server = _remote(port, meter)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def srv(pg_url: str, port: int, remote: GraphQLHttp) -> Iterator[ServerProcess]:
    env = {
        "SVC_GRAPHQL_SERVER_WORKERS": str(WORKERS),
        "SVC_GRAPHQL_REMOTE_SCHEMA_CONCURRENCY": "1",
        "SVC_GRAPHQL_REMOTE_SCHEMA_BREAKER_THRESHOLD": "2",
        "SVC_GRAPHQL_REMOTE_SCHEMA_BREAKER_SECONDS": "1",
    }
    server = ServerProcess(create_database(pg_url), env=env)
    try:
        body = {
            "type": "add_remote_schema",
            "args": {"name": "r", "definition": {"url": f"http://localhost:{port}/"}},
        }
        assert server.client.post("/v1/metadata", json=body).status_code == 200
        deadline = time.monotonic() + 10  # every worker has the remote's schema
        while any(ask(server, "{ ping }") != {"data": {"ping": "pong"}} for _ in range(8)):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        yield server
    finally:
        server.stop()


def ask(srv: ServerProcess, query: str) -> Any:
    return srv.client.post("/v1/graphql", json={"query": query}).json()


def test_calls_in_flight_are_bounded_per_worker(srv: ServerProcess, meter: Meter) -> None:
    """Eight concurrent requests with a limit of one call per worker: at most one call
    per worker reaches the remote at a time, and every request is answered."""
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: ask(srv, "{ slow }"), range(8)))
    assert all(a == {"data": {"slow": "slow"}} for a in answers), answers
    assert 1 <= meter.most <= WORKERS


def test_breaker_opens_while_the_remote_is_down_and_closes_after(
    srv: ServerProcess, remote: GraphQLHttp, port: int, meter: Meter
) -> None:
    """Down: each worker's first two calls fail to connect, then calls answer at once
    with the breaker's error; back up, after the cooldown a call goes through again."""
    remote.stop()
    messages = [ask(srv, "{ ping }")["errors"][0]["message"] for _ in range(12)]
    failed = [m for m in messages if m.startswith("HTTP exception occurred")]
    assert 2 <= len(failed) <= 2 * WORKERS, messages
    assert messages[-1].startswith("remote schema 'r' is unavailable"), messages
    again = _remote(port, meter)
    try:
        time.sleep(1.2)
        answers = [ask(srv, "{ ping }") for _ in range(4)]
        assert all(a == {"data": {"ping": "pong"}} for a in answers), answers
    finally:
        again.stop()
