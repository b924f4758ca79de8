"""Bounded, clean shutdown of `svc serve` (issue 11, finding 9): real processes, real
signals, real Postgres.

- Start/stop cycles on the embedded Postgres (one data directory: the first start runs
  initdb, the later ones reuse it), each after a few requests: every cycle must exit
  within `EXIT_BOUND_S` and leave no Postgres process of that directory behind. Most
  cycles stop with a terminal-style Ctrl-C (SIGINT to the whole process group); some with
  SIGTERM to `svc serve` alone, some with two Ctrl-Cs. 20 cycles here, 100 in the slow test
  (`uv run pytest -m slow`).
- SIGTERM with long statements in flight and `--graceful-shutdown-timeout 2`: the server
  exits after the grace period plus a few seconds and the statements are gone from
  `pg_stat_activity`; a request shorter than the grace period is answered normally.
- `svc serve` killed with SIGKILL leaves its Postgres running (and no worker): the next
  start adopts that server and stops it on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from svc.embedded import EmbeddedPostgres
from tests.support import ROOT, ServerProcess, create_database, free_port

#: Seconds a stop may take before the cycle counts as a hang.
EXIT_BOUND_S = 20.0
#: Seconds a server may take to answer its first requests.
READY_BOUND_S = 90.0


# ------------------------------------------------------------------ process helpers


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    """A process `pid` exists and is not a zombie (a postmaster reparented to an init that
    reaps lazily stays a zombie for a while after it exited)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and len(fields) > 1 and fields[1] == str(pid):
                found.append(int(entry.name))
    return found


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains `text` (e.g. `postgres -D <dir>`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _postmaster_pid(real_dir: Path) -> int | None:
    try:
        return int((real_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _serve_env(**extra: str) -> dict[str, str]:
    """The environment of an embedded-Postgres `svc serve`: no database URL, svc's default
    worker count, no request log."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SVC_GRAPHQL_DATABASE_URL", "SVC_GRAPHQL_SERVER_WORKERS")
    }
    return {**env, "SVC_GRAPHQL_LOG_REQUESTS": "false", **extra}


@dataclass
class Embedded:
    """One `svc serve` on the embedded Postgres of `data_dir`, in its own process group
    (so a Ctrl-C can be sent the way a terminal sends it)."""

    data_dir: Path
    log_path: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] = field(init=False)

    def __post_init__(self) -> None:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "svc",
                    "serve",
                    "--data-dir",
                    str(self.data_dir),
                    "--server-host",
                    "127.0.0.1",
                    "--server-port",
                    str(self.port),
                ],
                cwd=ROOT,
                env=_serve_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, client: httpx.Client) -> None:
        deadline = time.monotonic() + READY_BOUND_S
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"svc exited early:\n{self.log_tail()}"
            try:
                if client.get("/healthz").status_code == 200:
                    body = {"type": "export_metadata", "args": {}}
                    if client.post("/v1/query", json=body).status_code != 503:
                        return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"svc did not start:\n{self.log_tail()}")

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def ctrl_c(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)

    def wait_exit(self, bound: float) -> int | None:
        """The exit status, or None (after killing the whole group) past `bound` seconds.
        Past the bound, what the group's processes were doing is written to the log first
        (which process was stuck, and in which kernel wait)."""
        try:
            return self.proc.wait(timeout=bound)
        except subprocess.TimeoutExpired:
            self.note(f"no exit {bound:g} s after the signal; the group:\n{_group(self.proc.pid)}")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return None

    def note(self, text: str) -> None:
        """Append a test line (with a monotonic time) to the server's log."""
        with self.log_path.open("a") as log:
            log.write(f"== test {time.monotonic():.2f}: {text}\n")


def _group(pgid: int) -> str:
    """`ps` lines of process group `pgid` (pid, parent, state, kernel wait, command)."""
    ps = subprocess.run(
        ["ps", "-o", "pid,ppid,stat,wchan:24,etimes,args", "-g", str(pgid)],
        capture_output=True,
        text=True,
        check=False,
    )
    return ps.stdout or ps.stderr


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh embedded-Postgres data directory, destroyed (and its server stopped if a
    failed test left one) afterwards."""
    path = tmp_path / "pgdata"
    yield path
    pg = EmbeddedPostgres(path)
    if _postmaster_pid(Path(os.path.realpath(path))) is not None:
        with contextlib.suppress(Exception):
            pg.start()  # adopts a server a failed test left running, for destroy() to stop
    pg.destroy()


# ------------------------------------------------------------------------ cycles


@dataclass
class CycleReport:
    seconds: list[float] = field(default_factory=list)  # start to exit, per cycle
    stop_seconds: list[float] = field(default_factory=list)  # signal to exit
    hangs: int = 0
    leftovers: list[str] = field(default_factory=list)
    statuses: list[int | None] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # how each cycle was stopped


def _cycle(i: int, data_dir: Path, log_path: Path, report: CycleReport) -> None:
    started = time.monotonic()
    server = Embedded(data_dir, log_path)
    real_dir = Path(os.path.realpath(data_dir))
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as client:
        server.wait_ready(client)
        assert client.get("/healthz").status_code == 200
        sql = f"CREATE TABLE IF NOT EXISTS cycle (n int); INSERT INTO cycle VALUES ({i})"
        r = client.post("/v2/query", json={"type": "run_sql", "args": {"sql": sql}})
        assert r.status_code == 200, r.text
        if i == 0:
            r = client.post(
                "/v1/metadata", json={"type": "pg_track_table", "args": {"table": "cycle"}}
            )
            assert r.status_code == 200, r.text
        r = client.post(
            "/v1/graphql", json={"query": "{ cycle_aggregate { aggregate { count } } }"}
        )
        # One row per cycle so far: the data directory is reused from start to start.
        assert r.json() == {"data": {"cycle_aggregate": {"aggregate": {"count": i + 1}}}}, r.text
        postmaster = _postmaster_pid(real_dir)
        assert postmaster is not None and _alive(postmaster)
        postgres = [postmaster, *_children(postmaster)]
        stopped = time.monotonic()
        kind = ("ctrl-c", "ctrl-c", "ctrl-c", "sigterm", "double ctrl-c")[i % 5]
        server.note(f"cycle {i}: {kind}")
        if kind == "sigterm":
            server.proc.send_signal(signal.SIGTERM)
        else:
            server.ctrl_c()
            if kind == "double ctrl-c":
                time.sleep(0.05)
                with contextlib.suppress(ProcessLookupError):
                    server.ctrl_c()
    status = server.wait_exit(EXIT_BOUND_S)
    now = time.monotonic()
    report.statuses.append(status)
    report.kinds.append(kind)
    report.seconds.append(now - started)
    report.stop_seconds.append(now - stopped)
    if status is None:
        report.hangs += 1
    left = [pid for pid in postgres if _alive(pid)]
    left += [pid for pid in _processes_mentioning(str(real_dir)) if pid not in left]
    if left or (real_dir / "postmaster.pid").exists():
        report.leftovers.append(
            f"cycle {i} ({kind}): pids {left}, pid file {_postmaster_pid(real_dir)}"
        )
        for pid in left:  # do not let one failure spoil the next cycles
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        (real_dir / "postmaster.pid").unlink(missing_ok=True)


def _run_cycles(n: int, data_dir: Path, tmp_path: Path) -> CycleReport:
    report = CycleReport()
    log_path = tmp_path / "serve.log"
    for i in range(n):
        _cycle(i, data_dir, log_path, report)
    seconds = sorted(report.seconds)
    stops = sorted(report.stop_seconds)
    print(
        f"\n{n} cycles: {report.hangs} hangs, {len(report.leftovers)} with leftovers; "
        f"cycle s: median {seconds[n // 2]:.2f} max {seconds[-1]:.2f} total {sum(seconds):.1f}; "
        f"stop s: median {stops[n // 2]:.2f} max {stops[-1]:.2f}; statuses {set(report.statuses)}"
    )
    return report


def _check(report: CycleReport, log_path: Path) -> None:
    assert report.hangs == 0, log_path.read_text(errors="replace")[-4000:]
    assert report.leftovers == []
    odd = [
        (i, kind, status)
        for i, (kind, status) in enumerate(zip(report.kinds, report.statuses, strict=True))
        if status != 0
    ]
    assert odd == [], odd  # (cycle, how it was stopped, exit status)


def test_start_stop_cycles(data_dir: Path, tmp_path: Path) -> None:
    report = _run_cycles(5, data_dir, tmp_path)  # every way of stopping; 100 in the slow set
    _check(report, tmp_path / "serve.log")


@pytest.mark.slow
def test_start_stop_cycles_100(data_dir: Path, tmp_path: Path) -> None:
    report = _run_cycles(100, data_dir, tmp_path)
    _check(report, tmp_path / "serve.log")


# --------------------------------------------------------- SIGTERM with work in flight


async def _activity(url: str, marker: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        count: int = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()",
            f"%{marker}%",
        )
        return count
    finally:
        await conn.close()


def _post_in_background(url: str, body: dict[str, Any], results: list[Any]) -> threading.Thread:
    def run() -> None:
        try:
            r = httpx.post(url, json=body, timeout=120)
            results.append((r.status_code, r.text))
        except httpx.HTTPError as exc:
            results.append(repr(exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _wait_for(check: Any, bound: float, what: str) -> float:
    """Poll `check()` until true; returns the seconds it took. Fails past `bound`."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < bound, f"{what} not within {bound} s"
        time.sleep(0.05)
    return time.monotonic() - started


def test_sigterm_cancels_long_statements_after_the_grace_period(pg_url: str) -> None:
    db = create_database(pg_url)
    grace = 2.0
    server = ServerProcess(db, "--graceful-shutdown-timeout", str(grace))
    marker_sql, marker_gql = "svc_shutdown_sql_marker", "svc_shutdown_view_marker"
    try:
        # A tracked view running a long statement: its name marks the compiled query.
        sql = f"CREATE VIEW {marker_gql} AS SELECT pg_sleep(30)::text AS x"
        r = server.query({"type": "run_sql", "args": {"sql": sql}})
        assert r.status_code == 200, r.text
        r = server.query({"type": "track_table", "args": marker_gql})
        assert r.status_code == 200, r.text
        results: list[Any] = []
        threads = [
            _post_in_background(
                f"{server.url}/v2/query",
                {"type": "run_sql", "args": {"sql": f"SELECT pg_sleep(30) /* {marker_sql} */"}},
                results,
            ),
            _post_in_background(
                f"{server.url}/v1/graphql", {"query": f"{{ {marker_gql} {{ x }} }}"}, results
            ),
        ]
        for marker in (marker_sql, marker_gql):
            _wait_for(lambda m=marker: asyncio.run(_activity(db, m)) > 0, 30, f"{marker} running")
        signalled = time.monotonic()
        server.proc.terminate()
        server.proc.wait(timeout=grace + 15)
        exited = time.monotonic() - signalled
        # In-flight requests got the grace period, and not much more.
        assert grace - 0.2 <= exited <= grace + 4, exited
        for thread in threads:
            thread.join(timeout=10)
        # The clients got an answer (503 "shutting down"), not a dropped connection.
        assert sorted(str(r)[:4] for r in results) == ["(503", "(503"], results
        # The statements were cancelled in Postgres, not left running.
        for marker in (marker_sql, marker_gql):
            _wait_for(lambda m=marker: asyncio.run(_activity(db, m)) == 0, 5, f"{marker} gone")
    finally:
        server.stop()


def test_sigterm_lets_a_short_request_finish(pg_url: str) -> None:
    server = ServerProcess(create_database(pg_url), "--graceful-shutdown-timeout", "20")
    try:
        results: list[Any] = []
        marker = "svc_shutdown_short_marker"
        body = {"type": "run_sql", "args": {"sql": f"SELECT pg_sleep(1.5) /* {marker} */"}}
        thread = _post_in_background(f"{server.url}/v2/query", body, results)
        _wait_for(lambda: asyncio.run(_activity(pg_url, marker)) > 0, 30, "statement running")
        signalled = time.monotonic()
        server.proc.terminate()
        server.proc.wait(timeout=30)
        exited = time.monotonic() - signalled
        thread.join(timeout=10)
        assert results and results[0][0] == 200, results
        assert exited < 10, exited  # it waited for the request, not for the whole grace
    finally:
        server.stop()


# ------------------------------------------------------------- a killed svc serve


def test_killed_serve_leaves_postgres_for_the_next_start(data_dir: Path, tmp_path: Path) -> None:
    log_path = tmp_path / "serve.log"
    first = Embedded(data_dir, log_path)
    with httpx.Client(base_url=f"http://127.0.0.1:{first.port}", timeout=30) as client:
        first.wait_ready(client)
    real_dir = Path(os.path.realpath(data_dir))
    postmaster = _postmaster_pid(real_dir)
    assert postmaster is not None
    workers = _children(first.proc.pid)
    assert workers
    first.proc.kill()  # SIGKILL to svc serve alone: no cleanup runs
    first.proc.wait()
    # Its workers follow it (parent-death signal) ...
    _wait_for(lambda: not any(_alive(pid) for pid in workers), 10, "workers gone")
    # ... but its Postgres keeps running: the next start adopts it.
    assert _alive(postmaster)
    second = Embedded(data_dir, log_path)
    with httpx.Client(base_url=f"http://127.0.0.1:{second.port}", timeout=30) as client:
        second.wait_ready(client)
        r = client.post("/v1/graphql", json={"query": "{ __typename }"})
        assert r.status_code == 200, r.text
    assert "reusing the server already running" in log_path.read_text()
    assert _postmaster_pid(real_dir) == postmaster
    second.ctrl_c()
    assert second.wait_exit(EXIT_BOUND_S) == 0, second.log_tail()
    assert not _alive(postmaster)
    assert not (real_dir / "postmaster.pid").exists()
    assert _processes_mentioning(str(real_dir)) == []


def test_a_worker_deaf_to_the_cancel_is_killed_after_the_window() -> None:
    """After a second signal, a worker still alive `CANCEL_WINDOW_S` after its cancel
    signal is killed by the parent's grace thread (Granian's own kill timeout would wait
    out the whole grace period first). The "worker" is a process that ignores the cancel."""
    from svc.cli.shutdown import CANCEL_WINDOW_S, ShutdownSignals

    code = "import signal, time; signal.signal(signal.SIGUSR1, signal.SIG_IGN); time.sleep(60)"
    deaf = subprocess.Popen([sys.executable, "-c", code])
    lines: list[str] = []
    try:
        time.sleep(0.3)  # its handler is in place

        def alive() -> list[int]:
            return [deaf.pid] if deaf.poll() is None else []

        signals = ShutdownSignals(30.0, alive, lines.append)
        started = time.monotonic()
        signals._begin()  # the first Ctrl-C: a 30 s grace period
        signals._begin()  # the second: cancel now
        status = deaf.wait(timeout=CANCEL_WINDOW_S + 5)
        took = time.monotonic() - started
    finally:
        if deaf.poll() is None:
            deaf.kill()
    assert status == -signal.SIGKILL
    assert CANCEL_WINDOW_S - 0.5 < took < CANCEL_WINDOW_S + 3, took
    assert any("killed" in line for line in lines), lines
