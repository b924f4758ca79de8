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
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

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
