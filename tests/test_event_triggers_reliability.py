"""Event delivery reliability (issue 14, R1-R3) with counts: real Postgres, real `svc serve`
processes (default worker count, each worker delivering), a real local webhook
(`tests/webhook_recorder.py`) that records every request it answered.

- R1: events delivered while `svc serve` is SIGKILLed (its whole process group) four
  times mid-delivery: 0 lost; an event is delivered twice only when its attempt was
  answered by the webhook but not yet recorded when the process died (bounded by the
  deliveries in flight at each kill; the count is printed).
- R2: SIGTERM mid-delivery: 0 lost, 0 duplicates (running deliveries finish and are
  recorded, claimed ones not started are unlocked).
- R3: two instances on one database: 0 lost, 0 duplicates (`FOR UPDATE SKIP LOCKED`,
  rows locked in key order).

CI runs bounded sizes; `-m slow` runs the larger soaks.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import pytest

from tests.support import ROOT, create_database, free_port
from tests.webhook_recorder import WebhookRecorder


class Svc:
    """`svc serve` in its own session (so the whole process group can be killed)."""

    def __init__(self, db_url: str, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "svc", "serve", "--database-url", db_url]
        cmd += ["--server-host", "127.0.0.1", "--server-port", str(self.port)]
        full = {**os.environ, "SVC_GRAPHQL_LOG_REQUESTS": "false", **env}
        self.log = open(f"/tmp/svc-events-{self.port}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=full,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"svc exited: see {self.log.name}"
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("svc did not start")

    def query(self, body: Any) -> Any:
        r = httpx.post(self.url + "/v1/query", json=body, timeout=60)
        assert r.status_code == 200, r.text
        return r.json()

    def signal(self, sig: int) -> None:
        """Send `sig` to the whole group (SIGKILL) or to `svc serve` (SIGTERM)."""
        if sig == signal.SIGKILL:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=60)
        self.log.close()


def setup_trigger(db_url: str, hook: WebhookRecorder, env: dict[str, str]) -> None:
    s = Svc(db_url, env)
    try:
        s.query({"type": "run_sql", "args": {"sql": "CREATE TABLE ev (id int PRIMARY KEY)"}})
        s.query({"type": "track_table", "args": {"table": "ev"}})
        args = {"name": "rel", "table": "ev", "webhook": hook.url("/r"), "insert": {"columns": "*"}}
        s.query({"type": "create_event_trigger", "args": args})
    finally:
        s.signal(signal.SIGTERM)


def insert(s: Svc, first: int, count: int) -> None:
    sql = f"INSERT INTO ev SELECT generate_series({first}, {first + count - 1})"
    s.query({"type": "run_sql", "args": {"sql": sql}})


def state(db_url: str) -> tuple[int, int]:
    """(events delivered, events in event_log), read directly from Postgres."""

    async def go() -> tuple[int, int]:
        conn = await asyncpg.connect(db_url)
        try:
            sql = "SELECT count(*) FILTER (WHERE delivered), count(*) FROM hdb_catalog.event_log"
            row = await conn.fetchrow(sql)
            return int(row[0]), int(row[1])
        finally:
            await conn.close()

    return asyncio.run(go())


def wait_delivered(db_url: str, total: int, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if state(db_url) == (total, total):
            return
        time.sleep(0.2)
    raise AssertionError(f"delivered/total {state(db_url)}, wanted {total}")


def received(hook: WebhookRecorder) -> collections.Counter[str]:
    """Webhook requests per event id (every request answered so far; a body cut short
    by a kill is no delivery)."""
    return collections.Counter(h.json["id"] for h in hook.drain() if h.json is not None)


@pytest.fixture
def hook() -> Iterator[WebhookRecorder]:
    with WebhookRecorder() as rec:
        yield rec


FAST = {"SVC_GRAPHQL_EVENTS_FETCH_INTERVAL": "0.1", "SVC_GRAPHQL_EVENTS_LOCK_TIMEOUT": "1.5"}


def run_kills(pg_url: str, hook: WebhookRecorder, events: int, kills: int) -> None:
    db = create_database(pg_url, prefix="r1")
    hook.rule("/r", status=204, delay=0.05)  # deliveries are in flight at any moment
    env = {**FAST, "SVC_GRAPHQL_EVENTS_HTTP_POOL_SIZE": "20"}
    setup_trigger(db, hook, env)
    s = Svc(db, env)
    insert(s, 1, events)
    for _ in range(kills):
        time.sleep(1.0)
        s.signal(signal.SIGKILL)
        s = Svc(db, env)
    try:
        wait_delivered(db, events, within=120)
    finally:
        s.signal(signal.SIGTERM)
    got = received(hook)
    duplicates = sum(n - 1 for n in got.values())
    print(f"R1: {events} events, {kills} SIGKILLs, {len(got)} delivered, {duplicates} duplicates")
    assert len(got) == events  # none lost
    # A duplicate is an attempt in flight at a kill: at most the pool size per worker
    # (2 workers by default on CI) per kill.
    assert duplicates <= kills * 20 * (os.cpu_count() or 1)


def test_r1_sigkill_mid_delivery_loses_nothing(pg_url: str, hook: WebhookRecorder) -> None:
    run_kills(pg_url, hook, events=1500, kills=4)


def test_r2_sigterm_mid_delivery_no_loss_no_duplicate(pg_url: str, hook: WebhookRecorder) -> None:
    db = create_database(pg_url, prefix="r2")
    hook.rule("/r", status=204, delay=0.1)
    # No process is killed: locks must not go stale (1.5 s is for the kill tests; see R3).
    env = {
        **FAST,
        "SVC_GRAPHQL_EVENTS_HTTP_POOL_SIZE": "10",
        "SVC_GRAPHQL_EVENTS_LOCK_TIMEOUT": "10",
    }
    setup_trigger(db, hook, env)
    s = Svc(db, env)
    insert(s, 1, 500)
    time.sleep(1.5)
    s.signal(signal.SIGTERM)
    partial = state(db)
    s = Svc(db, env)
    try:
        wait_delivered(db, 500, within=60)
    finally:
        s.signal(signal.SIGTERM)
    got = received(hook)
    print(f"R2: delivered before SIGTERM {partial[0]}, after restart {len(got)} distinct")
    assert 0 < partial[0] < 500  # the stop came mid-delivery
    assert len(got) == 500 and max(got.values()) == 1


def run_two_instances(pg_url: str, hook: WebhookRecorder, events: int) -> None:
    db = create_database(pg_url, prefix="r3")
    # No process dies here, so no lock may go stale: a lock timeout of 1.5 s (FAST, for
    # the kill tests) let a renewal delayed past it on CI's loaded 2 cores hand a held
    # event to the other instance (a duplicate that at-least-once allows; CI 2026-11-27).
    # 10 s is still well under the default (60 s; the reference's is 30 min).
    env = {**FAST, "SVC_GRAPHQL_EVENTS_LOCK_TIMEOUT": "10"}
    setup_trigger(db, hook, env)
    a, b = Svc(db, env), Svc(db, env)
    try:
        insert(a, 1, events)
        wait_delivered(db, events, within=180)
    finally:
        a.signal(signal.SIGTERM)
        b.signal(signal.SIGTERM)
    got = received(hook)
    duplicates = sum(n - 1 for n in got.values())
    print(f"R3: {events} events, {len(got)} delivered, {duplicates} duplicates")
    assert len(got) == events  # none lost
    # The rare duplicates seen in CI (2 of 5,000) were result writes lost to deadlocks with
    # the lock renewal (ARCHITECTURE "Lock order"); rows are now locked in key order.
    assert duplicates == 0


def test_r3_two_instances_no_loss_no_duplicate(pg_url: str, hook: WebhookRecorder) -> None:
    run_two_instances(pg_url, hook, 3000)


@pytest.mark.slow
def test_r1_soak_sigkill_20k(pg_url: str, hook: WebhookRecorder) -> None:
    run_kills(pg_url, hook, events=20000, kills=20)


@pytest.mark.slow
def test_r3_soak_two_instances_50k(pg_url: str, hook: WebhookRecorder) -> None:
    run_two_instances(pg_url, hook, 50000)
