"""200 parallel synchronous action calls with a slow handler (issue 16): each answers its
own result, the outbound pool stays bounded, and other requests are not held up."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.http_fixture import HttpFixture, Recorded, Reply
from tests.support import ServerProcess, create_database

CALLS = 200
HANDLER_DELAY_S = 2.0
POOL = 100  # svc.outbound's connections per process


@pytest.fixture(scope="module")
def hook() -> Iterator[HttpFixture]:
    with HttpFixture() as srv:
        # 200 connections arrive at once: a backlog above socketserver's default of 5.
        srv._server.socket.listen(1024)
        yield srv


@pytest.fixture(scope="module")
def srv(pg_url: str, hook: HttpFixture) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url, prefix="act_load"), "--workers", "1")
    steps = [
        {
            "type": "run_sql",
            "args": {"sql": "create table t (id int primary key);insert into t values (1);"},
        },
        {"type": "track_table", "args": {"table": "t"}},
        {
            "type": "set_custom_types",
            "args": {"objects": [{"name": "Echo", "fields": [{"name": "n", "type": "Int!"}]}]},
        },
        {
            "type": "create_action",
            "args": {
                "name": "echo",
                "definition": {
                    "type": "query",
                    "output_type": "Echo",
                    "handler": hook.url("/echo"),
                    "arguments": [{"name": "n", "type": "Int!"}],
                },
            },
        },
    ]
    r = s.query({"type": "bulk", "args": steps})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def test_parallel_calls_with_a_slow_handler(srv: ServerProcess, hook: HttpFixture) -> None:
    def echo(req: Recorded) -> Reply:
        n = req.json()["input"]["n"]
        return Reply(200, json.dumps({"n": n}).encode(), delay=HANDLER_DELAY_S)

    hook.route("/echo", echo)
    query = "query ($n: Int!) { echo(n: $n) { n } }"

    async def run() -> tuple[list[int], float, float]:
        limits = httpx.Limits(max_connections=CALLS + 10)
        async with httpx.AsyncClient(base_url=srv.url, timeout=60, limits=limits) as client:

            async def one(n: int) -> int:
                r = await client.post("/v1/graphql", json={"query": query, "variables": {"n": n}})
                body = r.json()
                assert "data" in body, body["errors"][0]["extensions"]["internal"]["error"]
                answer: int = body["data"]["echo"]["n"]
                return answer

            started = time.monotonic()
            calls = asyncio.gather(*(one(n) for n in range(CALLS)))
            while hook.in_flight < POOL // 2:  # until the handler holds many of the calls
                await asyncio.sleep(0.01)
            probe = time.monotonic()
            r = await client.post("/v1/graphql", json={"query": "{ t { id } }"})
            assert r.json() == {"data": {"t": [{"id": 1}]}}
            probe_s = time.monotonic() - probe
            answers = await calls
            return answers, probe_s, time.monotonic() - started

    answers, probe_s, total_s = asyncio.run(run())
    assert answers == list(range(CALLS))  # each call got its own answer
    assert probe_s < HANDLER_DELAY_S / 2, probe_s  # a table query did not wait for them
    # One worker: calls run side by side up to its pool's connections, never more.
    assert hook.max_in_flight == POOL
    # Far from one call at a time (400 s); two rounds of 2 s plus this machine's CPU time
    # for 200 requests in the handler, client and server (~10 s on 2 cores).
    assert total_s < CALLS * HANDLER_DELAY_S / 10, total_s
