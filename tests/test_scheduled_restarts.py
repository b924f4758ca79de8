"""R6 (issue 15): a cron trigger firing every second while one `svc serve` (default worker
count) is restarted three times, by SIGKILL once and SIGTERM twice, and a second instance
serves the same database throughout. Every scheduled time of the window must end
delivered exactly once, or `dead` (its tolerance passed before anyone could deliver it:
the events a SIGKILLed process held are claimed again only when their lock goes stale).

The CI version watches 22 s; `test_restarts_soak` (slow) watches 150 s and restarts both
instances.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support import ServerProcess
from tests.webhook_recorder import WebhookRecorder

TOLERANCE = 5  # seconds: an event held by a killed process is dead by the time it is reclaimed
LOCK_TIMEOUT = 20  # svc.workers.scheduled.LOCK_TIMEOUT


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        out.extend(kids)
        todo.extend(kids)
    return out


def kill_hard(server: ServerProcess) -> None:
    """SIGKILL `svc serve` and every worker at once: nothing can release its rows."""
    for pid in [*descendants(server.proc.pid), server.proc.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    server.proc.wait()
    server.client.close()


def stop_soft(server: ServerProcess) -> None:
    """SIGTERM (the graceful stop: running deliveries finish, held rows are released)."""
    server.stop()


def query(server: ServerProcess, body: dict[str, Any]) -> Any:
    r = server.query(body)
    assert r.status_code == 200, r.text
    return r.json()


def rows(server: ServerProcess, sql: str) -> list[list[Any]]:
    result: list[list[Any]] = query(server, {"type": "run_sql", "args": {"sql": sql}})["result"]
    return result[1:]


@pytest.fixture
def hook() -> Iterator[WebhookRecorder]:
    with WebhookRecorder() as recorder:
        yield recorder


def run_window(
    url: str, hook: WebhookRecorder, seconds: float, plan: list[tuple[float, str, str]]
) -> None:
    """Run the every-second trigger for `seconds` with instances `a` and `b`, applying
    `plan` (offset in seconds, instance, `kill` | `term`: stop it that way and start it
    again), then check every time of the window."""
    # A slow answer keeps an event in flight most of the time, so a SIGKILL usually lands
    # on one that its process had claimed (and maybe called) but not recorded.
    hook.rule("/r6", delay=0.5)
    servers = {"a": ServerProcess(url), "b": ServerProcess(url)}
    try:
        trigger = {
            "name": "r6",
            "webhook": hook.url("/r6"),
            "schedule": "* * * * * *",
            "include_in_metadata": True,
            "retry_conf": {"tolerance_seconds": TOLERANCE},
        }
        query(servers["b"], {"type": "create_cron_trigger", "args": trigger})
        # The first time generated is the first whole second after the trigger was made.
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
        began = time.monotonic()
        for offset, name, how in plan:
            time.sleep(max(0.0, began + offset - time.monotonic()))
            (kill_hard if how == "kill" else stop_soft)(servers[name])
            servers[name] = ServerProcess(url)
        time.sleep(max(0.0, began + seconds + 1 - time.monotonic()))
        end = datetime.now(UTC).replace(microsecond=0)
        kills = sum(1 for _, _, how in plan if how == "kill")
        check_window(servers["b"], hook, start, end, kills)
    finally:
        for server in servers.values():
            if server.proc.poll() is None:
                server.stop()


def check_window(
    server: ServerProcess, hook: WebhookRecorder, start: datetime, end: datetime, kills: int
) -> None:
    """Every second of [start, end) is one event, final within the reclaim bound, and
    delivered exactly once or dead (only events a killed process held can be dead)."""
    window = (
        "from hdb_catalog.hdb_cron_events where trigger_name = 'r6' "
        f"and scheduled_time >= '{start.isoformat()}' and scheduled_time < '{end.isoformat()}'"
    )
    deadline = time.monotonic() + LOCK_TIMEOUT + TOLERANCE + 10
    while rows(server, f"select count(*) {window} and status = 'scheduled'") != [["0"]]:
        assert time.monotonic() < deadline, rows(server, f"select id, locked {window}")
        time.sleep(0.5)
    query(server, {"type": "delete_cron_trigger", "args": {"name": "r6"}})
    events = {r[0]: r[1] for r in rows(server, f"select id, status {window}")}
    expected = int((end - start).total_seconds())
    assert len(events) == expected  # one row per second of the window, none twice
    calls = Counter(h.json["id"] for h in hook.drain() if h.json["id"] in events)
    statuses = Counter(events.values())
    delivered = [i for i, s in events.items() if s == "delivered"]
    assert set(statuses) <= {"delivered", "dead"}, statuses
    assert all(calls[i] == 1 for i in delivered), {i: calls[i] for i in delivered if calls[i] != 1}
    # A dead event was never called, except (at most one per SIGKILL) one whose call the
    # killed process had made but not recorded: at-least-once, then past its tolerance.
    called_dead = [i for i, s in events.items() if s == "dead" and calls[i]]
    assert len(called_dead) <= kills, called_dead
    assert statuses["dead"] <= 3 * kills, statuses  # only what a killed process held
    print(f"R6 window {expected} s: {dict(statuses)}, dead but called {len(called_dead)}")


def test_restarts_deliver_each_time_once_or_dead(
    new_database: Callable[[], str], hook: WebhookRecorder
) -> None:
    """22 s; instance a: SIGKILL at 3 s, SIGTERM at 9 s and 15 s, each time restarted (a
    restart takes ~2 s on CI's 2 cores, so each stop still lands on a running instance)."""
    run_window(new_database(), hook, 22, [(3, "a", "kill"), (9, "a", "term"), (15, "a", "term")])


@pytest.mark.slow
def test_restarts_soak(new_database: Callable[[], str], hook: WebhookRecorder) -> None:
    """150 s; both instances restarted, two SIGKILLs and four SIGTERMs."""
    plan = [
        (5, "a", "kill"), (25, "b", "term"), (45, "a", "term"),
        (70, "b", "kill"), (95, "a", "term"), (120, "b", "term"),
    ]  # fmt: skip
    run_window(new_database(), hook, 150, plan)
