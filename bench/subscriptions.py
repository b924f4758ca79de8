"""`python -m bench.subscriptions`: live queries under load (issue 13).

N subscribers (default 1,000 and 5,000) with 10% distinct variable sets subscribe to one
`svc serve --workers 1` over real websockets (the `websockets` client library, Apollo
`graphql-ws` protocol, `--per-connection` subscriptions per socket). The run measures:

- **push latency**: a write (one `UPDATE` committed by this process) changes every
  subscriber's result; the time from its commit until each subscriber received the new
  result (p50/p95/max over subscribers, over `--writes` writes);
- **svc RSS**: the worker's resident memory with every subscriber connected, and what
  that adds to the served-but-idle worker per socket and per subscriber;
- **database statements per second** while the subscribers sit idle (`xact_commit` of the
  database in `pg_stat_database`: every statement svc runs outside a transaction is one),
  beside the multiplexed statements a poll needs (ceil(cohorts / batch size) per interval).

`--skip-idle off,triggers` runs each size once per `SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE`
mode (issue 13 "an idle database costs nothing"): with `triggers` the idle statements
should fall to ~0 and the writes (plain `UPDATE`s, heard through the trigger) are still
pushed; with `mutations` the writes go through svc's GraphQL `update_item` instead.

Results go to `bench/results/subscriptions-<date>.json`; README "Performance" quotes them.
Targets (issue 13): 5,000 subscribers on one worker with p95 push <= 1.5 s after the write
at the default interval, RSS <= 250 MB, <= 1 statement per batch per interval.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import websockets

from bench.common import RESULTS, create_database, engine, metadata, say, today
from bench.servers import start_svc, status_kb, tree
from svc.embedded import EmbeddedPostgres

QUERY = "subscription ($g: Int!) { item(where: {grp: {_eq: $g}}) { id val } }"
UPDATE = "mutation ($k: Int!) { update_item(where: {}, _set: {val: $k}) { affected_rows } }"
BATCH_SIZE = 100  # svc's default `--live-queries-multiplexed-batch-size`
INTERVAL_S = 1.0  # svc's default `--live-queries-multiplexed-refetch-interval`


@dataclass
class Subscriber:
    """One subscription: the `val` it last saw and when each awaited value arrived."""

    group: int
    val: int | None = None
    arrived: dict[int, float] = field(default_factory=dict)


@dataclass
class Socket:
    """One websocket carrying some subscriptions (by operation id)."""

    ws: Any
    subs: dict[str, Subscriber]

    async def read(self) -> None:
        """Record every `data` frame's `val` with its arrival time, until closed."""
        async for frame in self.ws:
            now = time.monotonic()
            msg = json.loads(frame)
            sub = self.subs.get(msg.get("id", ""))
            if sub is None or msg.get("type") != "data":
                continue
            rows = msg["payload"].get("data", {}).get("item") or []
            if rows:
                sub.val = rows[0]["val"]
                sub.arrived.setdefault(sub.val, now)


async def open_socket(url: str, subs: dict[str, Subscriber]) -> Socket:
    """Connect, `connection_init`, start every subscription of `subs`."""
    ws = await websockets.connect(
        url,
        subprotocols=["graphql-ws"],  # type: ignore[list-item]
        max_size=None,
        close_timeout=2,
        open_timeout=60,
    )
    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
    while json.loads(await ws.recv())["type"] != "connection_ack":
        pass
    for op_id, sub in subs.items():
        payload = {"query": QUERY, "variables": {"g": sub.group}}
        await ws.send(json.dumps({"id": op_id, "type": "start", "payload": payload}))
    return Socket(ws, subs)


async def setup(url: str, groups: int) -> None:
    """The table (one row per group) and its tracking, through svc's metadata API."""
    sql = (
        "create table item (id serial primary key, grp int not null, val int not null);"
        f"insert into item (grp, val) select g, 0 from generate_series(0, {groups - 1}) g;"
        "create index on item (grp);"
    )
    async with engine(url) as eng:
        await metadata(eng, {"type": "run_sql", "args": {"sql": sql}})
        await metadata(eng, {"type": "track_table", "args": "item"})


async def wait_until(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.02)
    return check()


@contextlib.contextmanager
def postgres_with_statements() -> Iterator[str]:
    """A throwaway cluster with `pg_stat_statements` loaded (so statements are counted
    exactly, by text); yields its superuser URL."""
    pg = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="svc-bench-pg-")) / "data", log=say)
    try:
        url = pg.start()
        asyncio.run(_preload(url))
        pg.stop()
        yield pg.start()
    finally:
        pg.destroy()


async def _preload(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    finally:
        await conn.close()


COUNT_SQL = """
select query, calls from pg_stat_statements
where dbid = (select oid from pg_database where datname = $1) and query <> $2
"""


async def statements_per_second(url: str, seconds: float) -> dict[str, float]:
    """Statements per second that svc runs on database `url` over `seconds`, by text
    (`pg_stat_statements`; this connection's reads excluded), the multiplexed ones under
    `"multiplexed"`, everything under `"all"`."""
    conn = await asyncpg.connect(url)
    name = url.rpartition("/")[2]
    try:
        await conn.execute("create extension if not exists pg_stat_statements")
        before = dict(await conn.fetch(COUNT_SQL, name, COUNT_SQL))
        start = time.monotonic()
        await asyncio.sleep(seconds)
        after = dict(await conn.fetch(COUNT_SQL, name, COUNT_SQL))
        took = time.monotonic() - start
    finally:
        await conn.close()
    rates = {q: (n - before.get(q, 0)) / took for q, n in after.items() if n > before.get(q, 0)}
    out = {" ".join(q.split())[:100]: round(r, 2) for q, r in rates.items()}
    out["multiplexed"] = sum(r for q, r in rates.items() if '"_subs"' in q)
    out["all"] = sum(rates.values())
    return out


async def run_size(
    admin_url: str, n: int, per_connection: int, writes: int, skip_idle: str = "off"
) -> dict[str, Any]:
    """One measurement with `n` subscribers; see the module docstring."""
    groups = max(1, n // 10)
    url = await create_database(admin_url, "subs")
    await setup(url, groups)
    os.environ["SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE"] = skip_idle  # start_svc passes it on
    server = start_svc(url, 1)
    try:
        server.wait_ready(1)
        worker = max(tree(server.proc.pid), key=lambda p: status_kb(p, "VmRSS"))
        base_mb = status_kb(worker, "VmRSS") / 1024  # served, nobody subscribed yet
        ws_url = server.url.replace("http://", "ws://")
        subs = [Subscriber(i % groups) for i in range(n)]
        sockets: list[Socket] = []
        started = time.monotonic()
        for first in range(0, n, per_connection):
            chunk = {str(i): subs[i] for i in range(first, min(n, first + per_connection))}
            sockets.append(await open_socket(ws_url, chunk))
        readers = [asyncio.ensure_future(s.read()) for s in sockets]
        ok = await wait_until(lambda: all(s.val == 0 for s in subs), 120)
        say(
            f"{n} subscribers on {len(sockets)} sockets: first results in "
            f"{time.monotonic() - started:.1f} s ({'all' if ok else 'NOT all'})"
        )
        await asyncio.sleep(2 * INTERVAL_S)
        worker = max(tree(server.proc.pid), key=lambda p: status_kb(p, "VmRSS"))
        rss_mb = status_kb(worker, "VmRSS") / 1024
        rates = await statements_per_second(url, 10.0)
        via = server.url if skip_idle == "mutations" else None
        latencies = await measure_writes(url, subs, writes, via)
        rss_after_mb = status_kb(worker, "VmRSS") / 1024
        closed = time.monotonic()
        await asyncio.gather(*(s.ws.close() for s in sockets))
        say(f"closed {len(sockets)} sockets in {time.monotonic() - closed:.1f} s")
        for r in readers:
            r.cancel()
    finally:
        server.stop()
    cohorts = groups
    return {
        "skip_idle": skip_idle,
        "subscribers": n,
        "sockets": len(sockets),
        "cohorts": cohorts,
        "push_latency_s": summary(latencies),
        "worker_rss_mb": round(rss_mb, 1),
        "worker_rss_after_writes_mb": round(rss_after_mb, 1),
        "worker_rss_base_mb": round(base_mb, 1),
        # what the sockets and subscriptions added, per socket and per subscriber
        "rss_per_socket_kb": round((rss_mb - base_mb) * 1024 / len(sockets), 1),
        "rss_per_subscriber_kb": round((rss_mb - base_mb) * 1024 / n, 2),
        "idle_multiplexed_statements_per_s": round(rates.pop("multiplexed"), 2),
        "idle_all_statements_per_s": round(rates.pop("all"), 2),
        "idle_statements_by_text": rates,
        "multiplexed_statements_per_interval": math.ceil(cohorts / BATCH_SIZE),
    }


async def measure_writes(
    url: str, subs: list[Subscriber], writes: int, graphql: str | None = None
) -> list[float]:
    """`writes` times: commit `val = k` for every row (a plain `UPDATE`, or svc's
    `update_item` mutation at `graphql` when given), then wait until every subscriber
    saw `k`; the latency per subscriber is its arrival minus the commit."""
    latencies: list[float] = []
    conn = await asyncpg.connect(url)
    client = httpx.AsyncClient(timeout=30)
    try:
        for k in range(1, writes + 1):
            await asyncio.sleep(random.random() * INTERVAL_S)  # any phase of the poll
            if graphql is None:
                await conn.execute("update item set val = $1", k)
            else:
                body = {"query": UPDATE, "variables": {"k": k}}
                r = await client.post(graphql, json=body)
                assert "errors" not in r.json(), r.text
            committed = time.monotonic()
            ok = await wait_until(lambda k=k: all(k in s.arrived for s in subs), 60)
            got = [s.arrived[k] - committed for s in subs if k in s.arrived]
            say(
                f"write {k}: {len(got)}/{len(subs)} pushed, p95 {pct(got, 95):.3f} s"
                + ("" if ok else " (missing pushes)")
            )
            latencies += got
    finally:
        await conn.close()
        await client.aclose()
    return latencies


def pct(values: list[float], p: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "count": len(values),
        "p50": round(statistics.median(values), 3) if values else math.nan,
        "p95": round(pct(values, 95), 3),
        "max": round(max(values), 3) if values else math.nan,
    }


def report(results: list[dict[str, Any]]) -> None:
    print(
        "\n| skip idle | subscribers | sockets | cohorts | push p50 | p95 | max | worker RSS | "
        "idle multiplexed statements/s (needed) | all statements/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        lat = r["push_latency_s"]
        print(
            f"| {r['skip_idle']} | {r['subscribers']:,} | {r['sockets']:,} | {r['cohorts']:,} | "
            f"{lat['p50']:.3f} s | {lat['p95']:.3f} s | {lat['max']:.3f} s | "
            f"{r['worker_rss_mb']:.0f} MB | {r['idle_multiplexed_statements_per_s']:.2f} "
            f"({r['multiplexed_statements_per_interval']}) | "
            f"{r['idle_all_statements_per_s']:.2f} |"
        )
    big = max(
        [r for r in results if r["skip_idle"] == "off"] or results,
        key=lambda r: r["subscribers"],
    )
    checks = [
        ("p95 push <= 1.5 s", big["push_latency_s"]["p95"] <= 1.5),
        ("worker RSS <= 250 MB", big["worker_rss_after_writes_mb"] <= 250),
        (
            "<= 1 statement per batch per interval",
            big["idle_multiplexed_statements_per_s"]
            <= 1.05 * big["multiplexed_statements_per_interval"] / INTERVAL_S,
        ),
    ]
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name} at {big['subscribers']:,} subscribers")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.subscriptions", description=__doc__)
    p.add_argument("--sizes", default="1000,5000", help="subscriber counts (1000,5000)")
    p.add_argument("--per-connection", type=int, default=1, help="subscriptions per socket (1)")
    p.add_argument("--writes", type=int, default=5, help="writes measured per size (5)")
    p.add_argument(
        "--skip-idle",
        default="off",
        help="SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE modes to run, comma-separated (off)",
    )
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    modes = [m for m in args.skip_idle.split(",") if m]
    results: list[dict[str, Any]] = []
    with postgres_with_statements() as admin_url:
        for mode in modes:
            for n in sizes:
                say(f"-- {n} subscribers, skip idle: {mode}")
                run = run_size(admin_url, n, args.per_connection, args.writes, mode)
                results.append(asyncio.run(run))
    report(results)
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.per_connection == 1 else f"-per{args.per_connection}"
    suffix += "" if modes == ["off"] else "-idle-" + "-".join(modes)
    out = RESULTS / f"subscriptions-{today()}{suffix}.json"
    out.write_text(json.dumps({"date": today(), "results": results}, indent=1) + "\n")
    say(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
