"""Requests without credentials (the unauthorized role) get their own share of the read
path's connections (`SVC_GRAPHQL_ANONYMOUS_CONNECTIONS`, default half of
`SVC_GRAPHQL_PG_CONNECTIONS`; `Database.limit_anonymous`): 20 anonymous slow requests held
every connection for 40 s (issue 31). Counted in Postgres: with a share of 1 per worker,
never more anonymous statements run at once than there are workers, and an authenticated
request is answered meanwhile."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support import ServerProcess, active_statements, create_database

SECRET = "share-secret"
WORKERS = 2
SQL = """
CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1);
CREATE VIEW slow AS SELECT t.id FROM t WHERE pg_sleep(0.6)::text = '';
"""


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[tuple[ServerProcess, str]]:
    """The server and its database's name."""
    permission = {"columns": ["id"], "filter": {}}
    steps = [
        {"type": "run_sql", "args": {"sql": SQL}},
        {"type": "track_table", "args": {"table": "slow"}},
        {"type": "track_table", "args": {"table": "t"}},
        {
            "type": "create_select_permission",
            "args": {"table": "slow", "role": "anonymous", "permission": permission},
        },
    ]
    env = {
        "SVC_GRAPHQL_UNAUTHORIZED_ROLE": "anonymous",
        "SVC_GRAPHQL_ANONYMOUS_CONNECTIONS": "1",
        "SVC_GRAPHQL_SERVER_WORKERS": str(WORKERS),
    }
    db = create_database(pg_url, prefix="share")
    server = ServerProcess(db, "--admin-secret", SECRET, env=env)
    try:
        r = server.query({"type": "bulk", "args": steps}, headers={"x-svc-admin-secret": SECRET})
        assert r.status_code == 200, r.text
        yield server, db.rpartition("/")[2]
    finally:
        server.stop()


def test_anonymous_statements_stay_within_their_share(
    srv: tuple[ServerProcess, str], pg_url: str
) -> None:
    server, database = srv
    query = {"query": "{ slow { id } }"}

    async def run() -> tuple[list[int], int, float]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            anonymous = [
                asyncio.ensure_future(client.post("/v1/graphql", json=query)) for _ in range(10)
            ]
            await asyncio.sleep(0.3)
            seen = []
            for _ in range(8):
                seen.append(await asyncio.to_thread(active_statements, pg_url, database, '"slow"'))
                await asyncio.sleep(0.1)
            started = time.monotonic()
            admin = await client.post(
                "/v1/graphql",
                json={"query": "{ t { id } }"},
                headers={"x-svc-admin-secret": SECRET},
            )
            waited = time.monotonic() - started
            answers = await asyncio.gather(*anonymous)
            assert all(a.json() == {"data": {"slow": [{"id": 1}]}} for a in answers)
            assert admin.json() == {"data": {"t": [{"id": 1}]}}
            return seen, admin.status_code, waited

    seen, status, waited = asyncio.run(run())
    print(f"anonymous statements at once: {seen}; admin answered in {waited:.3f} s")
    assert status == 200
    assert 1 <= max(seen) <= WORKERS
