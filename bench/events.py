"""`uv run python -m bench.events`: event-trigger delivery and capture cost (issue 14).

1. Delivery: one `svc serve --workers 1` (default event options) delivers N events (a
   `generate_series` insert into a table with an insert trigger) to a local webhook
   (an asyncio server in its own process, answering 204); events per second from the insert's
   commit until `event_log` shows all delivered, and the server's peak RSS meanwhile. Run
   once per HTTP client library behind `svc/outbound` (`SVC_GRAPHQL_OUTBOUND_CLIENT`:
   httpx, aiohttp), each on a fresh database, in the same run. Target: >= 1,000/s.
2. Capture: insert mutations per second (`insert_<t>_one`, `--concurrency` clients) on a
   table without and with an event trigger, rounds alternating; the server runs with
   `--events-fetch-interval 3600` so only capture is measured. Target: <= 15% slower.

Prints a table and PASS/FAIL, and saves `bench/results/events-<date>.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx

from bench.common import RESULTS, ROOT, create_database, free_port, postgres, say, today
from bench.servers import RssSampler, Server, _spawn


class _Hook(asyncio.Protocol):
    """A webhook that answers every request 204 at once (an asyncio protocol: Python's
    threaded `http.server` answers only a few hundred requests per second, so it would
    measure itself, not svc)."""

    def connection_made(self, transport: Any) -> None:
        self.transport, self.buf = transport, b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while (end := self.buf.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in self.buf[:end].lower().split(b"\r\n"):
                if line.startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length :]
            self.transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")


def _serve_hook(port: int, ready: Any) -> None:
    async def run() -> None:
        await asyncio.get_running_loop().create_server(_Hook, "127.0.0.1", port, backlog=1024)
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(run())


@contextlib.contextmanager
def fast_hook() -> Iterator[str]:
    """The webhook in its own process; yields its URL."""
    port = free_port()
    ready = multiprocessing.Event()
    proc = multiprocessing.Process(target=_serve_hook, args=(port, ready), daemon=True)
    proc.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{port}/bench"
    finally:
        proc.terminate()
        proc.join()


def start(db_url: str, *extra: str, library: str = "aiohttp") -> Server:
    """`svc serve --workers 1` on `db_url` with `extra` options and the outbound client
    `library`, ready."""
    port = free_port()
    cmd = [sys.executable, "-m", "svc", "serve", "--database-url", db_url, "--workers", "1"]
    cmd += ["--server-host", "127.0.0.1", "--server-port", str(port), *extra]
    env = {"SVC_GRAPHQL_LOG_REQUESTS": "false", "SVC_GRAPHQL_OUTBOUND_CLIENT": library}
    server = _spawn("svc-events", cmd, env, ROOT, "")
    server.url = f"http://127.0.0.1:{port}"
    _wait(server)
    return server


def _wait(server: Server) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(server.url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(server.tail())


def query(server: Server, body: Any) -> Any:
    r = httpx.post(server.url + "/v1/query", json=body, timeout=120)
    if r.status_code != 200:
        raise RuntimeError(r.text)
    return r.json()


def setup(server: Server, hook_url: str) -> None:
    sql = "CREATE TABLE plain (id int PRIMARY KEY, v text); CREATE TABLE evt (LIKE plain);"
    sql += "ALTER TABLE evt ADD PRIMARY KEY (id);"
    trigger = {"name": "bench", "table": "evt", "webhook": hook_url, "insert": {"columns": "*"}}
    steps = [
        {"type": "run_sql", "args": {"sql": sql}},
        {"type": "track_table", "args": {"table": "plain"}},
        {"type": "track_table", "args": {"table": "evt"}},
        {"type": "create_event_trigger", "args": trigger},
    ]
    query(server, {"type": "bulk", "args": steps})


async def delivered(db_url: str) -> int:
    conn = await asyncpg.connect(db_url)
    try:
        return int(
            await conn.fetchval("SELECT count(*) FROM hdb_catalog.event_log WHERE delivered")
        )
    finally:
        await conn.close()


def measure_delivery(db_url: str, server: Server, events: int) -> float:
    """Events per second from the insert to the last delivery."""
    sql = f"INSERT INTO evt (id, v) SELECT g, 'x' FROM generate_series(1, {events}) g"
    query(server, {"type": "run_sql", "args": {"sql": sql}})
    started = time.monotonic()
    while asyncio.run(delivered(db_url)) < events:
        if time.monotonic() - started > 600:
            raise RuntimeError("delivery did not finish in 600 s")
        time.sleep(0.05)
    return events / (time.monotonic() - started)


async def inserts(url: str, table: str, count: int, concurrency: int, first: int) -> float:
    """Insert mutations per second (`count` of them, `concurrency` at once)."""
    mutation = f'mutation($id: Int!) {{ insert_{table}_one(object: {{id: $id, v: "x"}}) {{ id }} }}'
    ids = iter(range(first, first + count))
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:

        async def worker() -> None:
            for i in ids:
                r = await client.post(
                    "/v1/graphql", json={"query": mutation, "variables": {"id": i}}
                )
                if "errors" in r.json():
                    raise RuntimeError(r.text)

        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return count / (time.monotonic() - started)


async def row_cost(db_url: str, rows: int, rounds: int) -> dict[str, float]:
    """Microseconds per inserted row in one `INSERT … SELECT generate_series` statement,
    per table (median of `rounds`): the trigger's own cost in Postgres, without HTTP."""
    conn = await asyncpg.connect(db_url)
    out: dict[str, list[float]] = {"plain": [], "evt": []}
    first = 10_000_000
    try:
        for _ in range(rounds):
            for table in ("plain", "evt"):
                sql = f"INSERT INTO {table} SELECT g, 'x' FROM generate_series($1::int, $2::int) g"
                started = time.perf_counter()
                await conn.execute(sql, first, first + rows - 1)
                out[table].append((time.perf_counter() - started) / rows * 1e6)
                first += rows
    finally:
        await conn.close()
    return {t: statistics.median(v) for t, v in out.items()}


def measure_capture(server: Server, count: int, concurrency: int, rounds: int) -> dict[str, float]:
    rates: dict[str, list[float]] = {"plain": [], "evt": []}
    first = 1_000_000
    for _ in range(rounds):
        for table in ("plain", "evt"):
            rates[table].append(asyncio.run(inserts(server.url, table, count, concurrency, first)))
            first += count
    return {t: statistics.median(r) for t, r in rates.items()}


LIBRARIES = ("httpx", "aiohttp")


def measure_libraries(
    admin: str, hook_url: str, events: int, pool_size: int, libraries: tuple[str, ...] = LIBRARIES
) -> dict[str, Any]:
    """Per outbound library: events delivered per second and the server's peak RSS (MB,
    the whole `svc serve` tree) while `events` drain, each on a fresh database."""
    out: dict[str, Any] = {}
    for library in libraries:
        db = asyncio.run(create_database(admin, f"events_{library}"))
        server = start(db, "--events-http-pool-size", str(pool_size), library=library)
        try:
            setup(server, hook_url)
            say(f"{library}: delivering {events} events")
            with RssSampler(server.proc.pid) as rss:
                rate = measure_delivery(db, server, events)
            out[library] = {"per_s": round(rate, 1), "peak_rss_mb": round(rss.peak_total_kb / 1024)}
        finally:
            server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.events", description=__doc__)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--inserts", type=int, default=2_000, help="mutations per round")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--pool-size", type=int, default=100, help="--events-http-pool-size of the server"
    )
    parser.add_argument(
        "--backlog-only",
        action="store_true",
        help="only aiohttp's delivery of --events (e.g. 100000: the backlog drain) and its RSS",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    args = parser.parse_args(argv)
    with postgres() as admin, fast_hook() as hook_url:
        if args.backlog_only:
            drained = measure_libraries(admin, hook_url, args.events, args.pool_size, ("aiohttp",))
            print(json.dumps({"date": today(), "events": args.events, **drained}, indent=2))
            return 0
        libraries = measure_libraries(admin, hook_url, args.events, args.pool_size)
        rate = libraries["aiohttp"]["per_s"]
        db = asyncio.run(create_database(admin, "events"))
        server = start(db, "--events-fetch-interval", "3600")
        try:
            setup(server, hook_url)
            say(f"capture: {args.rounds} rounds of {args.inserts} inserts per table")
            capture = measure_capture(server, args.inserts, args.concurrency, args.rounds)
            per_row = asyncio.run(row_cost(db, 20_000, args.rounds))
        finally:
            server.stop()
    slower = 1 - capture["evt"] / capture["plain"]
    result = {
        "date": today(),
        "events": args.events,
        "events_http_pool_size": args.pool_size,
        "delivered_per_s": round(rate, 1),
        "delivery_by_library": libraries,
        "inserts_per_s_without_trigger": round(capture["plain"], 1),
        "inserts_per_s_with_trigger": round(capture["evt"], 1),
        "capture_slowdown": round(slower, 4),
        "row_insert_us_without_trigger": round(per_row["plain"], 2),
        "row_insert_us_with_trigger": round(per_row["evt"], 2),
        "delivery_target_pass": rate >= 1000,
        "capture_target_pass": slower <= 0.15,
    }
    print(json.dumps(result, indent=2))
    for library, figures in libraries.items():
        print(f"{library}: {figures['per_s']:.0f} events/s, peak RSS {figures['peak_rss_mb']} MB")
    ratio = libraries["aiohttp"]["per_s"] / libraries["httpx"]["per_s"]
    print(f"aiohttp / httpx: {ratio:.2f}x")
    print(f"delivery {rate:.0f} events/s (target >= 1000): {'PASS' if rate >= 1000 else 'FAIL'}")
    extra = per_row["evt"] - per_row["plain"]
    rows = f"{per_row['plain']:.1f} -> {per_row['evt']:.1f}"
    print(f"capture in Postgres: +{extra:.1f} us per row ({rows})")
    verdict = "PASS" if slower <= 0.15 else "FAIL"
    print(f"capture {slower:.1%} slower with a trigger (target <= 15%): {verdict}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"events-{today()}-pool{args.pool_size}.json").write_text(
        json.dumps(result, indent=2) + "\n"
    )
    passed = result["delivery_target_pass"] and result["capture_target_pass"]
    return 1 if args.check and not passed else 0


if __name__ == "__main__":
    raise SystemExit(main())
