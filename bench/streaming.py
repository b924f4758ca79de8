"""`python -m bench.streaming`: streaming subscriptions (`x_stream`) under load (issue 13).

N subscribers (default 1,000) with 10% distinct variable sets (a `grp` each) stream
`msg_stream(batch_size: 100, cursor: {initial_value: {id: 0}}, where: {grp: {_eq: $g}})`
from one `svc serve --workers 1` (`SVC_GRAPHQL_EXPERIMENTAL_FEATURES=
streaming_subscriptions`) over real websockets (Apollo protocol, `--per-connection`
subscriptions per socket). Measured as `bench.subscriptions` measures live queries:

- **push latency**: a write inserts one row per group (one committed `INSERT`); the time
  from its commit until every subscriber received its group's new row (p50/p95/max);
- **svc RSS** of the worker with every subscriber connected;
- **database statements per second** while idle (`pg_stat_statements`), beside the
  multiplexed statements a poll needs (ceil(cohorts / batch size) per interval).

Results go to `bench/results/streaming-<date>.json`; README "Performance" quotes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import websockets

from bench.common import RESULTS, create_database, engine, metadata, say, today
from bench.servers import start_svc, status_kb, tree
from bench.subscriptions import (
    BATCH_SIZE,
    INTERVAL_S,
    pct,
    postgres_with_statements,
    statements_per_second,
    summary,
    wait_until,
)

QUERY = (
    "subscription ($g: Int!) { msg_stream(batch_size: 100, cursor: {initial_value: {id: 0}}, "
    "where: {grp: {_eq: $g}}) { id body } }"
)


@dataclass
class Subscriber:
    """One stream: the bodies it received (each write's `k`) with their arrival times."""

    group: int
    rows: int = 0
    arrived: dict[str, float] = field(default_factory=dict)


async def read(ws: Any, subs: dict[str, Subscriber]) -> None:
    """Record every row of every `data` frame, until the socket closes."""
    async for frame in ws:
        now = time.monotonic()
        msg = json.loads(frame)
        sub = subs.get(msg.get("id", ""))
        if sub is None or msg.get("type") != "data":
            continue
        for row in msg["payload"].get("data", {}).get("msg_stream") or []:
            sub.rows += 1
            sub.arrived.setdefault(row["body"], now)


async def open_socket(url: str, subs: dict[str, Subscriber]) -> Any:
    """Connect, `connection_init`, start every stream of `subs`."""
    ws = await websockets.connect(
        url,
        subprotocols=["graphql-ws"],
        max_size=None,
        close_timeout=2,
        open_timeout=60,  # type: ignore[list-item]
    )
    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
    while json.loads(await ws.recv())["type"] != "connection_ack":
        pass
    for op_id, sub in subs.items():
        payload = {"query": QUERY, "variables": {"g": sub.group}}
        await ws.send(json.dumps({"id": op_id, "type": "start", "payload": payload}))
    return ws


async def setup(url: str, groups: int) -> None:
    """The table (one row per group to start with) and its tracking."""
    sql = (
        "create table msg (id serial primary key, grp int not null, body text not null);"
        f"insert into msg (grp, body) select g, '0' from generate_series(0, {groups - 1}) g;"
        "create index on msg (grp, id);"
    )
    async with engine(url) as eng:
        await metadata(eng, {"type": "run_sql", "args": {"sql": sql}})
        await metadata(eng, {"type": "track_table", "args": "msg"})


async def measure_writes(url: str, subs: list[Subscriber], writes: int, groups: int) -> list[float]:
    """`writes` times: insert one row per group (body `k`), wait until every subscriber
    received its row; latency = arrival - commit."""
    latencies: list[float] = []
    conn = await asyncpg.connect(url)
    try:
        for k in range(1, writes + 1):
            await asyncio.sleep(random.random() * INTERVAL_S)  # any phase of the poll
            await conn.execute(
                "insert into msg (grp, body) select g, $1 from generate_series(0, $2) g",
                str(k),
                groups - 1,
            )
            committed = time.monotonic()
            key = str(k)
            ok = await wait_until(lambda key=key: all(key in s.arrived for s in subs), 60)
            got = [s.arrived[key] - committed for s in subs if key in s.arrived]
            say(
                f"write {k}: {len(got)}/{len(subs)} pushed, p95 {pct(got, 95):.3f} s"
                + ("" if ok else " (missing pushes)")
            )
            latencies += got
    finally:
        await conn.close()
    return latencies


async def run_size(admin_url: str, n: int, per_connection: int, writes: int) -> dict[str, Any]:
    """One measurement with `n` streams; see the module docstring."""
    groups = max(1, n // 10)
    url = await create_database(admin_url, "stream")
    await setup(url, groups)
    os.environ["SVC_GRAPHQL_EXPERIMENTAL_FEATURES"] = "streaming_subscriptions"
    server = start_svc(url, 1)
    try:
        server.wait_ready(1)
        ws_url = server.url.replace("http://", "ws://")
        subs = [Subscriber(i % groups) for i in range(n)]
        sockets: list[Any] = []
        started = time.monotonic()
        for first in range(0, n, per_connection):
            chunk = {str(i): subs[i] for i in range(first, min(n, first + per_connection))}
            ws = await open_socket(ws_url, chunk)
            sockets.append((ws, asyncio.ensure_future(read(ws, chunk))))
        ok = await wait_until(lambda: all("0" in s.arrived for s in subs), 120)
        say(f"{n} streams: first batches in {time.monotonic() - started:.1f} s (ok={ok})")
        await asyncio.sleep(2 * INTERVAL_S)
        worker = max(tree(server.proc.pid), key=lambda p: status_kb(p, "VmRSS"))
        rss_mb = status_kb(worker, "VmRSS") / 1024
        rates = await statements_per_second(url, 10.0)
        latencies = await measure_writes(url, subs, writes, groups)
        duplicates = sum(s.rows - len(s.arrived) for s in subs)
        await asyncio.gather(*(ws.close() for ws, _ in sockets))
        for _, reader in sockets:
            reader.cancel()
    finally:
        server.stop()
    return {
        "subscribers": n,
        "sockets": len(sockets),
        "cohorts": groups,
        "push_latency_s": summary(latencies),
        "rows_received_twice": duplicates,
        "worker_rss_mb": round(rss_mb, 1),
        "idle_multiplexed_statements_per_s": round(rates.pop("multiplexed"), 2),
        "idle_all_statements_per_s": round(rates.pop("all"), 2),
        "multiplexed_statements_per_interval": math.ceil(groups / BATCH_SIZE),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the sizes given (`--sizes 1000,5000`) and write the results file."""
    parser = argparse.ArgumentParser(prog="python -m bench.streaming")
    parser.add_argument("--sizes", default="1000")
    parser.add_argument("--per-connection", type=int, default=1)
    parser.add_argument("--writes", type=int, default=5)
    args = parser.parse_args(argv)
    results: list[dict[str, Any]] = []
    with postgres_with_statements() as admin_url:
        for n in (int(s) for s in args.sizes.split(",")):
            results.append(asyncio.run(run_size(admin_url, n, args.per_connection, args.writes)))
    suffix = "" if args.per_connection == 1 else f"-per{args.per_connection}"
    out = RESULTS / f"streaming-{today()}{suffix}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    for r in results:
        say(json.dumps(r))
    say(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
