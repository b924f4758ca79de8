"""Read replicas of the `default` source (issue 28; `svc/execute/replicas.py`,
`svc/metadata/read_replicas.py`), against `svc serve` with its default worker count.

The first tests use a stand-in replica: a second database holding the same table with
other rows, so where each answer came from shows in its data. `test_a_streaming_replica`
uses a real one (`pg_basebackup -R` of a cluster of its own, replay paused to show the
routing). Followed: the reference's `read_replicas` in a Postgres source's
`connection_info` (each entry a `connection_info`; Hasura docs "Read replicas"):
queries and subscriptions go to the replicas, mutations to the primary.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from svc.embedded import EmbeddedPostgres
from svc.embedded.binaries import find_postgres_bindir
from tests.support import ServerProcess, create_database, free_port
from tests.test_metrics import SECRET, scrape, value

TABLE = "CREATE TABLE item (id int PRIMARY KEY, name text NOT NULL)"


def sql(url: str, text: str) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(text)
        finally:
            await conn.close()

    asyncio.run(go())


def v3(replicas: list[Any]) -> dict[str, Any]:
    """A version 3 document: `item` tracked in `default`, with these read replicas."""
    info = {"database_url": "unused: svc connects to --database-url", "read_replicas": replicas}
    source = {
        "name": "default",
        "kind": "postgres",
        "tables": [{"table": {"schema": "public", "name": "item"}}],
        "configuration": {"connection_info": info},
    }
    return {"version": 3, "sources": [source]}


def apply(srv: ServerProcess, md: dict[str, Any], **extra: Any) -> Any:
    r = srv.query({"type": "replace_metadata", "args": {"metadata": md, **extra}})
    return r.status_code, r.json()


def names(srv: ServerProcess) -> list[str]:
    answer = srv.graphql("{ item(order_by: {id: asc}) { name } }")
    assert "errors" not in answer, answer
    return [row["name"] for row in answer["data"]["item"]]


@pytest.fixture(scope="module")
def dbs(pg_url: str) -> tuple[str, str]:
    primary, replica = create_database(pg_url, prefix="prim"), create_database(pg_url, "repl")
    sql(primary, TABLE + "; INSERT INTO item VALUES (1, 'primary')")
    sql(replica, TABLE + "; INSERT INTO item VALUES (1, 'replica')")
    return primary, replica


@pytest.fixture(scope="module")
def srv(dbs: tuple[str, str]) -> Iterator[ServerProcess]:
    server = ServerProcess(dbs[0], "--metrics-secret", SECRET, env={"REPLICA_URL": dbs[1]})
    try:
        yield server
    finally:
        server.stop()


def test_queries_read_the_replica_and_mutations_the_primary(
    srv: ServerProcess, dbs: tuple[str, str]
) -> None:
    assert apply(srv, v3([{"database_url": {"from_env": "REPLICA_URL"}}]))[0] == 200
    assert all(names(srv) == ["replica"] for _ in range(10))
    mutation = 'mutation { insert_item_one(object: {id: 2, name: "written"}) { id name } }'
    assert srv.graphql(mutation) == {"data": {"insert_item_one": {"id": 2, "name": "written"}}}
    assert names(srv) == ["replica"]  # the write is on the primary only (no replication here)
    # A mutation's own reads (its `returning`) see the primary.
    update = 'mutation { update_item(where: {}, _set: {name: "u"}) { returning { id } } }'
    answer = srv.graphql(update)
    assert sorted(r["id"] for r in answer["data"]["update_item"]["returning"]) == [1, 2]
    # Without replicas the primary answers again.
    assert apply(srv, v3([]))[0] == 200
    assert names(srv) == ["u", "u"]


def test_an_unreachable_replica_is_skipped(srv: ServerProcess, dbs: tuple[str, str]) -> None:
    down = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing"
    replicas = [{"database_url": down}, {"database_url": {"from_env": "REPLICA_URL"}}]
    assert apply(srv, v3(replicas))[0] == 200
    seen = [tuple(names(srv)) for _ in range(30)]
    # Every query answers: from the live replica, or from the primary when it was the
    # dead one's turn.
    assert set(seen) <= {("replica",), ("u", "u")} and ("replica",) in seen
    time.sleep(2.5)  # the gauge is sampled every 2 s
    assert value(scrape(srv), "svc_read_replica_failures") >= 1
    assert apply(srv, v3([]))[0] == 200


def test_a_replica_that_cannot_be_used_is_an_inconsistency(srv: ServerProcess) -> None:
    bad = [{"database_url": {"from_env": "SVC_TEST_NO_SUCH_VARIABLE"}}]
    status, body = apply(srv, v3(bad))
    assert status == 400, body
    assert "SVC_TEST_NO_SUCH_VARIABLE" in str(body)
    assert apply(srv, v3(bad), allow_inconsistent_metadata=True)[0] == 200
    listed = srv.query({"type": "get_inconsistent_metadata", "args": {}}).json()
    assert listed["is_consistent"] is False
    [issue] = listed["inconsistent_objects"]
    assert issue["type"] == "source" and "read replica 0" in issue["reason"]
    assert srv.query({"type": "drop_inconsistent_metadata", "args": {}}).status_code == 200
    listed = srv.query({"type": "get_inconsistent_metadata", "args": {}}).json()
    assert listed["is_consistent"] is True
    exported = srv.query({"type": "export_metadata", "args": {}}).json()
    info = exported["sources"][0]["configuration"]["connection_info"]
    assert info["read_replicas"] == []


@pytest.fixture
def streaming() -> Iterator[tuple[str, str, EmbeddedPostgres]]:
    """A cluster of its own and a streaming replica of it (`pg_basebackup -R`); yields the
    primary's URL, the replica's URL (same database) and the replica's server."""
    primary = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="svc-primary-")) / "data")
    primary.start()
    standby: EmbeddedPostgres | None = None
    try:
        sql(primary.url, "CREATE DATABASE shop")
        url = primary.url.rpartition("/")[0] + "/shop"
        sql(url, TABLE + "; INSERT INTO item VALUES (1, 'first')")
        # beside the primary's directory: a place the server's account can reach when root
        target = primary.real_data_dir.parent / f"standby-{os.getpid()}-{time.monotonic_ns()}"
        tool = find_postgres_bindir() / "pg_basebackup"
        host_port = ["-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres"]
        done = subprocess.run(
            [str(tool), "-D", str(target), *host_port, "-R", "-X", "stream", "-c", "fast"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        standby = EmbeddedPostgres(target)
        standby.start()
        yield url, standby.url.rpartition("/")[0] + "/shop", standby
    finally:
        if standby is not None:
            standby.destroy()
        primary.destroy()


def fetch(url: str, text: str) -> Any:
    async def go() -> Any:
        conn = await asyncpg.connect(url)
        try:
            return await conn.fetchval(text)
        finally:
            await conn.close()

    return asyncio.run(go())


def wait_for(check: Any, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_streaming_replica(streaming: tuple[str, str, EmbeddedPostgres]) -> None:
    primary, replica, standby = streaming
    assert fetch(replica, "SELECT pg_is_in_recovery()") is True
    wait_for(lambda: fetch(replica, "SELECT count(*) FROM item") == 1, "the replica's copy")
    srv = ServerProcess(primary, env={"REPLICA_URL": replica})
    try:
        assert apply(srv, v3([{"database_url": {"from_env": "REPLICA_URL"}}]))[0] == 200
        assert names(srv) == ["first"]
        fetch(replica, "SELECT pg_wal_replay_pause()")
        wait_for(lambda: fetch(replica, "SELECT pg_is_wal_replay_paused()"), "replay paused")
        mutation = 'mutation { insert_item_one(object: {id: 2, name: "second"}) { name } }'
        assert srv.graphql(mutation) == {"data": {"insert_item_one": {"name": "second"}}}
        # The write is on the primary; reads through svc show the paused replica's state.
        assert fetch(primary, "SELECT count(*) FROM item") == 2
        assert all(names(srv) == ["first"] for _ in range(10))
        fetch(replica, "SELECT pg_wal_replay_resume()")
        wait_for(lambda: names(srv) == ["first", "second"], "replication through svc")
        standby.stop()  # reads keep answering, from the primary
        assert all(names(srv) == ["first", "second"] for _ in range(10))
    finally:
        srv.stop()
