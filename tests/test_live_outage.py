"""A database outage under a real `svc serve` (issue 13: "a database outage sends
subscribers an error and resumes polling when Postgres is back"): websocket subscribers
(Apollo protocol, several sockets so every worker of the default count is likely to hold
some) on a Postgres cluster the test owns; the cluster stops: each subscriber gets one
`postgres-error`; it starts again: each gets the current result, then a change. The
in-process version is tests/test_live_queries.py::test_postgres_outage_pushes_an_error_then_resumes.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import websockets

from svc.embedded import EmbeddedPostgres
from tests.support import ServerProcess, create_database, free_port
from tests.test_live_queries import ITEMS, STEPS

SOCKETS = 4
INSERT = 'mutation { insert_item_one(object: {owner: "a", name: "back"}) { id } }'


async def next_data(ws: Any, timeout: float) -> Any:
    """The payload of the next `data` frame (keep-alives skipped)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), deadline - loop.time()))
        if frame["type"] == "data":
            return frame["payload"]


def rows(payload: Any) -> list[str]:
    assert "data" in payload, payload
    return [row["name"] for row in payload["data"]["item"]]


def test_outage_error_then_data_again() -> None:
    """Stop Postgres: one error per subscriber; start it: the result, then a change."""
    pg = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="svc-outage-pg-")) / "data", free_port())
    server: ServerProcess | None = None
    try:
        server = ServerProcess(
            create_database(pg.start()),
            env={"SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_REFETCH_INTERVAL": "200"},
        )
        assert server.query({"type": "bulk", "args": STEPS}).status_code == 200
        asyncio.run(_outage(pg, server))
    finally:
        if server is not None:
            server.stop()
        pg.destroy()


async def _outage(pg: EmbeddedPostgres, server: ServerProcess) -> None:
    url = server.url.replace("http://", "ws://") + "/v1/graphql"
    sockets = []
    try:
        for _ in range(SOCKETS):
            ws = await websockets.connect(url, subprotocols=["graphql-ws"])  # type: ignore[list-item]
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            await ws.send(json.dumps({"id": "1", "type": "start", "payload": {"query": ITEMS}}))
            assert rows(await next_data(ws, 10)) == ["one", "two", "three"]
            sockets.append(ws)
        await asyncio.to_thread(pg.stop)
        for ws in sockets:
            error = await next_data(ws, 20)
            assert error["errors"][0]["extensions"]["code"] == "postgres-error", error
        await asyncio.to_thread(pg.start)
        for ws in sockets:
            assert rows(await next_data(ws, 20)) == ["one", "two", "three"]
        r = await asyncio.to_thread(
            server.graphql,
            INSERT,
        )
        assert "errors" not in r, r
        for ws in sockets:
            assert rows(await next_data(ws, 10))[-1] == "back"
    finally:
        for ws in sockets:
            await ws.close()
