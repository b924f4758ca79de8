"""Metadata sync across workers and instances (issue 11, findings 8 and 10; ARCHITECTURE.md
"Sync"): read-your-writes across the workers of one `svc serve`, other instances on the
same database within 1 s, and `LISTEN` re-established after Postgres restarts.

Every request here opens a fresh TCP connection, so consecutive requests land on whichever
Granian worker accepts them; the worker that served each one is read from /proc (the
server-side socket of the connection belongs to exactly one worker process), so the tests
can count how many rounds crossed workers rather than hope they did.

A round renames the root field of `author` (`set_table_customization`) and then queries
the new name: a worker still on the old metadata answers "field not found" (stale).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from svc.api import shared_version
from svc.api.shared_version import SharedVersion
from svc.embedded import EmbeddedPostgres
from svc.execute.listener import VersionListener
from tests.support import ServerProcess, create_database, free_port, with_database

SCHEMA_SQL = (
    "CREATE TABLE author (id serial PRIMARY KEY, name text); INSERT INTO author (name) VALUES ('a')"
)


# -- helpers --------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    """Pids whose parent is `pid` (Granian's workers are children of `svc serve`)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                out.append(int(entry))
    return out


def _socket_inode(server_port: int, client_port: int) -> str | None:
    """Inode of the server-side socket of the connection 127.0.0.1:client -> :server."""
    want_local = f"0100007F:{server_port:04X}"
    want_remote = f"0100007F:{client_port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == want_local and fields[2] == want_remote:
            return fields[9]
    return None


def _worker_of(pids: list[int], server_port: int, client_port: int) -> int | None:
    inode = _socket_inode(server_port, client_port)
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return pid
            except OSError:
                continue
    return None


class Client:
    """Posts JSON to one server over a fresh connection per request and reports which
    worker process answered (None when it could not be told)."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.workers = _children(server.proc.pid)

    def post(self, path: str, body: Any) -> tuple[int, Any, int | None]:
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        try:
            conn.request(
                "POST", path, body=json.dumps(body), headers={"content-type": "application/json"}
            )
            resp = conn.getresponse()
            data = resp.read()
            assert conn.sock is not None
            worker = _worker_of(self.workers, self.server.port, conn.sock.getsockname()[1])
        finally:
            conn.close()
        return resp.status, json.loads(data) if data else None, worker

    def rename(self, name: str) -> int | None:
        """Make `name` the select root field of `author`; returns the serving worker."""
        status, body, worker = self.post("/v1/metadata", _rename_body(name))
        assert status == 200, body
        return worker

    def ask(self, name: str) -> tuple[str, int | None]:
        """Query root field `name`: ("fresh" | "stale" | "error: …", worker)."""
        status, body, worker = self.post("/v1/graphql", {"query": f"{{ {name} {{ id }} }}"})
        return _classify(status, body, name), worker


def _rename_body(name: str) -> dict[str, Any]:
    return {
        "type": "set_table_customization",
        "args": {"table": "author", "configuration": {"custom_root_fields": {"select": name}}},
    }


def _classify(status: int, body: Any, name: str) -> str:
    if status == 200 and isinstance(body, dict) and "data" in body and body["data"]:
        return "fresh" if body["data"].get(name) == [{"id": 1}] else f"error: {body}"
    text = json.dumps(body)
    if "not found" in text and name in text:
        return "stale"
    return f"error: {status} {text[:200]}"


def _prepare(url: str) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(SCHEMA_SQL)
        finally:
            await conn.close()

    asyncio.run(go())


def _track(server: ServerProcess) -> None:
    r = server.query({"type": "track_table", "args": {"schema": "public", "name": "author"}})
    assert r.status_code == 200, r.text


@pytest.fixture()
def author_db(pg_url: str) -> str:
    url = create_database(pg_url, prefix="sync")
    _prepare(url)
    return url


# -- the shared counter ---------------------------------------------------------------------
def test_shared_counter_only_rises_and_is_seen_by_every_map() -> None:
    path = shared_version.create()
    try:
        a, b = SharedVersion.open(path), SharedVersion.open(path)
        assert (a.read(), b.read()) == (0, 0)
        assert a.raise_to(7) == 7
        assert b.read() == 7
        assert b.raise_to(3) == 7  # a slower writer never lowers it
        assert a.read() == 7
        a.close()
        b.close()
    finally:
        shared_version.remove(path)
    assert not path.exists()
    with pytest.raises(OSError):
        SharedVersion.open(path)


def test_shared_counter_read_costs_under_a_microsecond() -> None:
    path = shared_version.create()
    try:
        counter = SharedVersion.open(path)
        counter.raise_to(12)
        n = 200_000
        started = time.perf_counter()
        for _ in range(n):
            counter.read()
        per_read = (time.perf_counter() - started) / n
        counter.close()
    finally:
        shared_version.remove(path)
    print(f"shared counter read: {per_read * 1e9:.0f} ns")
    assert per_read < 1e-6


# -- the listener, against a real Postgres --------------------------------------------------
async def test_listener_reconnects_after_its_backend_is_killed(pg_url: str) -> None:
    server = await asyncpg.connect(pg_url)
    name = f"sync_{uuid.uuid4().hex[:10]}"
    await server.execute(f'CREATE DATABASE "{name}"')
    await server.close()
    url = with_database(pg_url, name)
    admin = await asyncpg.connect(url)
    await admin.execute(
        "CREATE SCHEMA hdb_catalog; CREATE TABLE hdb_catalog.hdb_metadata "
        "(id int PRIMARY KEY, metadata json, resource_version int);"
        "INSERT INTO hdb_catalog.hdb_metadata VALUES (1, '{}', 1)"
    )
    seen: list[int] = []

    async def on_version(version: int) -> None:
        seen.append(version)
        if version == 5 and seen.count(5) == 1:
            raise OSError("the reload could not reach Postgres")  # once

    listener = VersionListener(url, on_version, poll_seconds=30.0)
    listener.start()
    try:

        async def until(check: Callable[[], bool], timeout: float = 5.0) -> float:
            started = time.monotonic()
            while not check():
                assert time.monotonic() - started < timeout, seen
                await asyncio.sleep(0.01)
            return time.monotonic() - started

        await until(lambda: listener.connected and seen == [1])  # the check on connect
        await admin.execute("SELECT pg_notify('svc_metadata', '2')")
        await until(lambda: seen[-1:] == [2])
        # Lose the connection; meanwhile the version moves without a notification.
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'svc-listen' AND datname = current_database()"
        )
        await admin.execute("UPDATE hdb_catalog.hdb_metadata SET resource_version = 3")
        took = await until(lambda: seen[-1:] == [3])  # found at once on reconnect
        assert listener.reconnects == 1
        assert took < 1.0
        await until(lambda: listener.connected)
        await admin.execute("SELECT pg_notify('svc_metadata', '4')")  # LISTEN is back
        await until(lambda: seen[-1:] == [4])
        # A failed reload is retried by a version read soon, not after the 30 s poll.
        await admin.execute("UPDATE hdb_catalog.hdb_metadata SET resource_version = 5")
        await admin.execute("SELECT pg_notify('svc_metadata', '5')")
        assert await until(lambda: seen.count(5) == 2) < 1.0
    finally:
        await listener.close()
        await admin.close()
    assert not listener.connected


# -- read-your-writes across the workers of one server --------------------------------------
def test_read_your_writes_across_two_workers(author_db: str) -> None:
    server = ServerProcess(author_db, "--workers", "2")
    try:
        _track(server)
        client = Client(server)
        assert len(client.workers) >= 2, client.workers
        outcomes: dict[str, int] = {}
        crossed = 0
        served: set[int] = set()
        started = time.monotonic()
        for i in range(200):
            name = f"authors_{i}"
            wrote = client.rename(name)
            outcome, answered = client.ask(name)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            served.update(w for w in (wrote, answered) if w is not None)
            if wrote is not None and answered is not None and wrote != answered:
                crossed += 1
        took = time.monotonic() - started
    finally:
        server.stop()
    print(f"200 rounds in {took:.1f} s: {outcomes}, {crossed} crossed workers")
    assert outcomes == {"fresh": 200}
    assert len(served) == 2  # both workers wrote or answered
    assert crossed >= 20  # enough rounds read on the worker that did not write


# -- two instances on one database ----------------------------------------------------------
def test_another_instance_converges_within_a_second(author_db: str) -> None:
    a = ServerProcess(author_db, "--workers", "1")
    b = ServerProcess(author_db, "--workers", "2")
    try:
        _track(a)
        ca, cb = Client(a), Client(b)
        convergence: list[float] = []
        late_stale = late_total = 0
        for i in range(10):
            name = f"authors_b{i}"
            ca.rename(name)
            changed = time.monotonic()
            while True:  # until B answers with the new name (the first answer may)
                outcome, _ = cb.ask(name)
                assert not outcome.startswith("error"), outcome
                if outcome == "fresh":
                    break
                assert time.monotonic() - changed < 5, "B never converged"
            # From A's answer to B's first fresh answer (an upper bound: it includes the
            # round trip of that query).
            convergence.append(time.monotonic() - changed)
            time.sleep(max(0.0, 1.0 - (time.monotonic() - changed)))
            for _ in range(6):  # after 1 s: every answer of every worker is fresh
                outcome, _ = cb.ask(name)
                late_total += 1
                late_stale += outcome != "fresh"
    finally:
        a.stop()
        b.stop()
    print(
        f"B answered with the change after at most {max(convergence) * 1000:.0f} ms "
        f"(each: {[round(c * 1000) for c in convergence]} ms); "
        f"{late_stale}/{late_total} stale after 1 s"
    )
    assert max(convergence) < 1.0
    assert late_stale == 0


def test_a_change_without_notify_is_polled_within_a_second(author_db: str) -> None:
    """The fallback: a version stored without `NOTIFY` (as by a tool writing
    `hdb_catalog.hdb_metadata` itself) reaches every worker by the poll."""
    server = ServerProcess(author_db, "--workers", "2")
    try:
        _track(server)
        client = Client(server)

        async def store() -> None:
            conn = await asyncpg.connect(author_db)
            try:
                text = await conn.fetchval("SELECT metadata::text FROM hdb_catalog.hdb_metadata")
                stored = json.loads(text)
                configuration = {"custom_root_fields": {"select": "polled_authors"}}
                stored["tables"][0]["configuration"] = configuration
                await conn.execute(
                    "UPDATE hdb_catalog.hdb_metadata SET metadata = $1::json, "
                    "resource_version = resource_version + 1 WHERE id = 1",
                    json.dumps(stored),
                )
            finally:
                await conn.close()

        asyncio.run(store())
        changed = time.monotonic()
        wait_fresh(client, "polled_authors", 3.0)
        took = time.monotonic() - changed
        late = [client.ask("polled_authors")[0] for _ in range(6)]
    finally:
        server.stop()
    print(f"a change without NOTIFY answered after {took * 1000:.0f} ms")
    assert took < 1.0
    assert late == ["fresh"] * 6


# -- Postgres restarted under load ----------------------------------------------------------
@pytest.fixture()
def own_cluster() -> Iterator[EmbeddedPostgres]:
    """A throwaway cluster on a fixed port, so a restart keeps its URL."""
    data = Path(tempfile.mkdtemp(prefix="svc-test-restart-")) / "data"
    pg = EmbeddedPostgres(data, port=free_port())
    pg.start()
    try:
        yield pg
    finally:
        pg.destroy()


def test_listen_is_reestablished_after_a_postgres_restart(own_cluster: EmbeddedPostgres) -> None:
    url = create_database(own_cluster.url, prefix="sync")
    _prepare(url)
    # A polls only every 30 s: within 1 s, only LISTEN (re-established, with its check on
    # reconnect) can bring B's changes; the shared counter spreads them to both workers.
    a = ServerProcess(url, "--workers", "2", env={"SVC_GRAPHQL_METADATA_POLL_SECONDS": "30"})
    b = ServerProcess(url, "--workers", "1")
    stop = threading.Event()
    answers: list[tuple[float, str, str, int | None]] = []  # (time, name, outcome, worker)
    current = ["authors_before"]

    def load() -> None:  # queries against A throughout, fresh connection each
        while not stop.is_set():
            name = current[0]
            try:
                outcome, worker = ca.ask(name)
            except OSError:
                outcome, worker = "refused", None
            answers.append((time.monotonic(), name, outcome, worker))
            time.sleep(0.005)

    loaders = [threading.Thread(target=load, daemon=True) for _ in range(2)]
    changes: list[tuple[str, str, float, float]] = []  # (step, name, sent at, answered at)
    try:
        _track(b)
        ca, cb = Client(a), Client(b)
        cb.rename(current[0])
        wait_fresh(ca, current[0], 1.0)
        for loader in loaders:
            loader.start()
        time.sleep(0.5)
        own_cluster.stop()
        time.sleep(1.5)  # down under load: A's listener backs off meanwhile
        own_cluster.start()  # same port
        back = time.monotonic()
        for step in ("right after the restart", "after LISTEN is back"):
            if changes:
                time.sleep(2.0)
            name = f"authors_{len(changes)}"
            sent = time.monotonic()
            changes.append((step, name, sent, change_through(cb, name)))
            current[0] = name
            time.sleep(1.6)
    finally:
        stop.set()
        for loader in loaders:
            if loader.is_alive():
                loader.join(timeout=30)
        a.stop()
        b.stop()
    outcomes: dict[str, int] = {}
    for _, _, outcome, _ in answers:
        key = outcome.split(":")[0]
        outcomes[key] = outcomes.get(key, 0) + 1
    # (Overall, "stale" also counts a name asked just as the next change replaced it.)
    print(f"answers of A during the test: {outcomes}")
    for i, (step, name, _, changed) in enumerate(changes):
        # Answers asking for this change's name, from its answer until the next change was
        # sent (after that, "not found" is newer metadata, not stale).
        until = changes[i + 1][2] if i + 1 < len(changes) else float("inf")
        mine = [(t - changed, o, w) for t, n, o, w in answers if n == name and changed <= t < until]
        last_stale = max((t for t, o, _ in mine if o == "stale"), default=0.0)
        late = [(o, w) for t, o, w in mine if t >= 1.0]
        late_stale = sum(o == "stale" for o, _ in late)
        errors = sum(o.startswith("error") or o == "refused" for _, o, _ in mine)
        workers = {w for o, w in late if o == "fresh" and w is not None}
        print(
            f"{step} (answered {(changed - back) * 1000:.0f} ms after Postgres was back): "
            f"last stale answer {last_stale * 1000:.1f} ms after the change ({len(mine)} "
            f"answers, {errors} errors); after 1 s: {len(late)} answers, {late_stale} "
            f"stale, {len(workers)} workers answered fresh"
        )
        assert last_stale < 1.0
        assert late_stale == 0
        assert len(workers) == 2


def change_through(client: Client, name: str, timeout: float = 20.0) -> float:
    """Rename through `client`, retrying while its server still reconnects to Postgres;
    returns the monotonic time at which the change was answered."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, body, _ = client.post("/v1/metadata", _rename_body(name))
        except OSError as exc:
            status, body = 0, str(exc)
        if status == 200:
            return time.monotonic()
        assert time.monotonic() < deadline, body
        time.sleep(0.05)


def wait_fresh(client: Client, name: str, timeout: float) -> None:
    """Query root field `name` until it is answered; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while client.ask(name)[0] != "fresh":
        assert time.monotonic() < deadline, f"{name} not visible"
        time.sleep(0.02)
