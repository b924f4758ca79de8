"""Statement time limits and cancellation (issue 11, findings 2 and 5), against real
Postgres and a real 2-worker server: slow anonymous regexes answer a clear error at their
time limit and leave no backend running, admin keeps answering; a client that goes away
stops its statement; time limits of mutations; Postgres restarted under the server."""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from svc.embedded import EmbeddedPostgres
from svc.errors import SvcError
from svc.execute.db import Database
from svc.execute.errors import STATEMENT_TIMEOUT
from tests.probe import AdminProbe
from tests.support import ServerProcess, create_database, free_port

SECRET = "limits-secret"
ADMIN = {"x-svc-admin-secret": SECRET}
LIMIT = 2.0  # seconds: anonymous's time_limit
SLOW = "[a-z]" * 60_000  # 300,000 characters: Postgres compiles it for tens of seconds
REGEX = "query q($p: String!) { article(where: {title: {_iregex: $p}}) { id } }"
SQL = """
create table article (id serial primary key, title text not null);
insert into article (title) select 'title ' || g from generate_series(1, 20) g;
"""
STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "article"},
    {
        "type": "create_select_permission",
        "args": {
            "table": "article",
            "role": "anonymous",
            "permission": {"columns": ["id", "title"], "filter": {"title": {"_eq": "none"}}},
        },
    },
    {"type": "set_api_limits", "args": {"time_limit": {"global": LIMIT}}},
]


def active_backends(url: str) -> list[str]:
    """Queries of the backends of `url`'s database that are running a statement (this
    connection's own excluded)."""

    async def go() -> list[str]:
        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch(
                "select query from pg_stat_activity where datname = current_database() "
                "and state = 'active' and pid <> pg_backend_pid()"
            )
        finally:
            await conn.close()
        return [r[0] for r in rows]

    return asyncio.run(go())


def wait_idle(url: str, within: float) -> float:
    """Seconds until no backend of `url`'s database is active; fails after `within`."""
    started = time.monotonic()
    while active_backends(url):
        assert time.monotonic() - started < within, active_backends(url)
        time.sleep(0.05)
    return time.monotonic() - started


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[tuple[ServerProcess, str]]:
    """2 workers of 25 read connections each (so 50 statements run at once), a 30 s
    server-wide statement timeout, and a 2 s `time_limit` from metadata."""
    url = create_database(pg_url)
    # The time limit's path: no pattern bound and no anonymous share of connections (both
    # would stop these statements before they run: tests/test_pattern_limit.py,
    # tests/test_anonymous_share.py).
    env = {
        "SVC_GRAPHQL_SERVER_WORKERS": "2",
        "SVC_GRAPHQL_PG_CONNECTIONS": "25",
        "SVC_GRAPHQL_MAX_PATTERN_LENGTH": "0",
        "SVC_GRAPHQL_ANONYMOUS_CONNECTIONS": "0",
    }
    args = ("--admin-secret", SECRET, "--unauthorized-role", "anonymous")
    s = ServerProcess(url, *args, "--statement-timeout", "30", env=env)
    try:
        r = s.query({"type": "bulk", "args": STEPS}, headers=ADMIN)
        assert r.status_code == 200, r.text
        yield s, url
    finally:
        s.stop()


def test_slow_regexes_stop_at_their_time_limit(server: tuple[ServerProcess, str]) -> None:
    s, url = server
    answers: list[tuple[float, Any]] = []
    payload = json.dumps({"query": REGEX, "variables": {"p": SLOW}}).encode()
    headers = {"content-type": "application/json"}

    def slow(_: int) -> None:
        with httpx.Client(base_url=s.url, timeout=60) as client:
            started = time.monotonic()
            r = client.post("/v1/graphql", content=payload, headers=headers)
            answers.append((time.monotonic() - started, r.json()))

    with AdminProbe(s.url, SECRET) as probe:
        time.sleep(0.3)
        threads = [threading.Thread(target=slow, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    admin_ms = probe.result.ms
    assert len(answers) == 50
    for elapsed, body in answers:
        error = body["errors"][0]
        assert error["message"] == STATEMENT_TIMEOUT, body
        assert error["extensions"]["code"] == "postgres-error", body
        # The limit, plus slack: 50 backends compiling regexes share 2 cores with the rest
        # (and, with pytest-xdist, with another module's server): far below unbounded.
        assert elapsed < LIMIT + 12, elapsed
    idle_after = wait_idle(url, 1.0)
    median = statistics.median(admin_ms)
    print(
        f"50 slow regexes: slowest answer {max(a for a, _ in answers):.2f} s, backends idle "
        f"{idle_after:.2f} s after; admin __typename median {median:.1f} ms, "
        f"max {max(admin_ms):.1f} ms, {sum(ms < 100 for ms in admin_ms)} of {len(admin_ms)} "
        "under 100 ms"
    )
    # Issue 11: "admin queries keep answering". Admin never waits for a connection or a
    # statement, only for CPU, which 50 backends compiling regexes share with everything
    # else: on CI's 2 cores a probe answer takes 90-300 ms while they run, so the bar is
    # that the probe kept answering, at a median under a second, none after 5 s.
    assert len(admin_ms) >= 5, admin_ms
    assert median < 1000, admin_ms
    assert max(admin_ms) < 5000, admin_ms
    # The connections went back healthy: queries answer at once.
    r = s.client.post("/v1/graphql", json={"query": "{ article(limit: 1) { id } }"}, headers=ADMIN)
    assert r.json() == {"data": {"article": [{"id": 1}]}}


def test_client_disconnect_stops_the_statement(server: tuple[ServerProcess, str]) -> None:
    s, url = server
    body = {"query": REGEX.replace("article(", "slow: article("), "variables": {"p": SLOW}}
    # As admin (no time limit but the server's 30 s) so only the disconnect can stop it.
    client = httpx.Client(base_url=s.url, timeout=0.6, headers=ADMIN)
    with client, pytest.raises(httpx.ReadTimeout):
        client.post("/v1/graphql", json=body)
    left = time.monotonic()
    stopped = wait_idle(url, 1.5)
    print(f"disconnected client: its backend stopped {stopped:.2f} s after it left")
    assert time.monotonic() - left < 1.5
    r = s.client.post("/v1/graphql", json={"query": "{ article(limit: 1) { id } }"}, headers=ADMIN)
    assert r.json() == {"data": {"article": [{"id": 1}]}}


def test_server_default_and_call_limits(new_database: Any) -> None:
    """In process: the connection's own `statement_timeout` (the server default), a
    stricter call limit (svc's timer and a cancel request), a looser one, a cancelled
    caller, and a mutation's transaction-local limit; the connection is reused after each."""
    url = new_database()

    async def go() -> None:
        db = await Database.connect(url, max_size=1, statement_timeout=0.5)
        sleep = "select to_json(1) from pg_sleep($1::text::float)"
        try:
            (pid,) = await db.query_json("select to_json(pg_backend_pid())", [], 1)
            for timeout in (None, 0.2):
                with pytest.raises(SvcError) as err:
                    await db.query_json(sleep, ["5"], 1, timeout)
                assert (err.value.code, err.value.message) == ("postgres-error", STATEMENT_TIMEOUT)
            assert await db.query_json(sleep, ["0.8"], 1, 2) == (b"1",)  # looser
            task = asyncio.ensure_future(db.query_json(sleep, ["30"], 1))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            again = await asyncio.wait_for(
                db.query_json("select to_json(pg_backend_pid())", [], 1), 2
            )
            assert again == (pid,)  # the same connection, healthy
            async with db.transaction() as conn:
                limit = db.timeout_setting(0.3)
                await conn.execute("select set_config('statement_timeout', $1, true)", limit)
                with pytest.raises(asyncpg.QueryCanceledError):
                    await conn.execute("select pg_sleep(5)")
        finally:
            await db.close()

    asyncio.run(go())


def test_postgres_restart_under_the_server() -> None:
    """While Postgres is down: JSON `postgres-error` answers, never an empty 500; once it
    is back the next requests are answered."""
    port = free_port()
    pg = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="svc-restart-")) / "data", port=port)
    admin_url = pg.start()
    try:
        s = ServerProcess(create_database(admin_url), env={"SVC_GRAPHQL_SERVER_WORKERS": "2"})
        try:
            r = s.query({"type": "run_sql", "args": {"sql": SQL}})
            assert r.status_code == 200, r.text
            r = s.query({"type": "track_table", "args": "article"})
            assert r.status_code == 200, r.text
            query = {"query": "{ article(limit: 1) { id } }"}
            ok = {"data": {"article": [{"id": 1}]}}
            for _ in range(4):  # both workers have connections
                assert s.client.post("/v1/graphql", json=query).json() == ok
            pg.stop()
            for _ in range(6):
                r = s.client.post("/v1/graphql", json=query)
                assert r.status_code == 200, r.text
                assert r.json()["errors"][0]["extensions"]["code"] == "postgres-error", r.text
                r = s.client.post("/v1/metadata", json={"type": "export_metadata", "args": {}})
                assert r.status_code == 500, r.text
                assert r.json()["code"] == "postgres-error", r.text
            pg.start()
            answers = [s.client.post("/v1/graphql", json=query).json() for _ in range(6)]
            assert answers == [ok] * 6, answers
        finally:
            s.stop()
    finally:
        pg.destroy()
