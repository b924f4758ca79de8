"""`uv run python -m bench.scale`: svc past one database (issue 28).

1. **Read replicas.** One `svc serve` on a primary database holding `item` (10,000 rows)
   and a replica database holding the same rows (a second database of the same cluster:
   on one machine a streaming replica shares the CPU and disk the same way, and the
   routing is the same; `tests/test_read_replicas.py` checks it with a real streaming
   replica). wrk drives a query of `item` twice: with the primary alone, then with the
   replica in `read_replicas`. Reported: requests per second and the transactions each
   database committed per second (`pg_stat_database.xact_commit`): the primary's load
   drop, not a speed-up (one machine).
2. **Two sources.** The same two root fields answered from one source, then from two
   (`item` in `default`, `other_item` in a second source on the second database): the
   query over two sources runs one statement per source, concurrently, and merges them.
   Reported: requests per second and p50 of each; the ratio is the cost of a second
   source.

`--check` exits non-zero, naming the target that failed: the replica takes at least 90%
of the read transactions; two sources answer at least 40% of one source's rate. Results
are saved to `bench/results/scale-<date>.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench.common import RESULTS, create_database, postgres, say, today
from bench.load import Run, run_wrk, wrk_version
from bench.servers import Server, start_svc

ROWS = 10_000
TABLE_SQL = """
CREATE TABLE {name} (id int PRIMARY KEY, label text NOT NULL, score int NOT NULL);
INSERT INTO {name} SELECT g, 'label ' || g, g % 97 FROM generate_series(1, {rows}) g;
ANALYZE {name};
"""
ONE_QUERY = "{ item(where: {score: {_eq: 5}}, limit: 20) { id label } }"
TWO_ONE_SOURCE = (
    "{ a: item(where: {score: {_eq: 5}}, limit: 20) { id label }"
    " b: item(where: {score: {_eq: 7}}, limit: 20) { id label } }"
)
TWO_SOURCES = (
    "{ a: item(where: {score: {_eq: 5}}, limit: 20) { id label }"
    " b: other_item(where: {score: {_eq: 7}}, limit: 20) { id label } }"
)
REPLICA_SHARE_TARGET = 0.9
TWO_SOURCE_RATIO_TARGET = 0.4


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="svc workers")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per wrk run")
    p.add_argument("--connections", type=int, default=10, help="wrk connections")
    p.add_argument("--quick", action="store_true", help="short runs (3 s)")
    p.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    return p.parse_args(argv)


async def _sql(url: str, text: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(text)
    finally:
        await conn.close()


async def _commits(admin: str, databases: list[str]) -> dict[str, int]:
    """`xact_commit` of each database (by name)."""
    conn = await asyncpg.connect(admin)
    try:
        rows = await conn.fetch(
            "SELECT datname, xact_commit FROM pg_stat_database WHERE datname = ANY($1::text[])",
            databases,
        )
    finally:
        await conn.close()
    return {r["datname"]: int(r["xact_commit"]) for r in rows}


def _metadata(server: Server, body: dict[str, Any]) -> None:
    url = server.url.replace("/v1/graphql", "/v1/metadata")
    r = httpx.post(url, json=body, timeout=60)
    if r.status_code != 200:
        sys.exit(f"bench.scale: {body['type']} failed: {r.text}")


def _drive(server: Server, query: str, seconds: float, connections: int) -> Run:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"query": query}, f)
    r = httpx.post(server.url, json={"query": query}, timeout=30)
    if r.status_code != 200 or "errors" in r.json():
        sys.exit(f"bench.scale: {query!r} answered {r.text[:300]}")
    try:
        return run_wrk(
            server.url, Path(f.name), seconds=seconds, connections=connections, threads=1
        )
    finally:
        os.unlink(f.name)


def _name(url: str) -> str:
    return url.rpartition("/")[2]


def replicas(
    admin: str, primary: str, replica: str, args: argparse.Namespace, seconds: float
) -> dict[str, Any]:
    """Part 1 (module doc)."""
    os.environ["SCALE_REPLICA_URL"] = replica
    server = start_svc(primary, args.workers)
    out: dict[str, Any] = {}
    try:
        server.wait_ready(args.workers)
        _metadata(server, {"type": "pg_track_table", "args": {"table": "item"}})
        names = [_name(primary), _name(replica)]
        for label, replicas_conf in (("primary alone", []), ("one replica", None)):
            if replicas_conf is None:
                replicas_conf = [{"database_url": {"from_env": "SCALE_REPLICA_URL"}}]
            source = {
                "name": "default",
                "kind": "postgres",
                "tables": [{"table": {"schema": "public", "name": "item"}}],
                "configuration": {
                    "connection_info": {"database_url": primary, "read_replicas": replicas_conf}
                },
            }
            doc = {"version": 3, "sources": [source]}
            _metadata(server, {"type": "replace_metadata", "args": doc})
            _drive(server, ONE_QUERY, 1.0, args.connections)  # warm every worker
            before = asyncio.run(_commits(admin, names))
            run = _drive(server, ONE_QUERY, seconds, args.connections)
            after = asyncio.run(_commits(admin, names))
            per_s = {n: (after[n] - before[n]) / run.seconds for n in names}
            out[label] = {
                "rps": run.rps,
                "p50_ms": run.p50_ms,
                "primary_xact_per_s": per_s[names[0]],
                "replica_xact_per_s": per_s[names[1]],
                "errors": run.errors,
            }
            say(
                f"  {label:14} {run.rps:8.0f} req/s   primary {per_s[names[0]]:8.0f} tx/s   "
                f"replica {per_s[names[1]]:8.0f} tx/s"
            )
    finally:
        server.stop()
    return out


def two_sources(primary: str, second: str, args: argparse.Namespace, seconds: float) -> Any:
    """Part 2 (module doc)."""
    os.environ["SCALE_SECOND_URL"] = second
    server = start_svc(primary, args.workers)
    out: dict[str, Any] = {}
    try:
        server.wait_ready(args.workers)
        _metadata(server, {"type": "clear_metadata", "args": {}})  # part 1's
        _metadata(server, {"type": "pg_track_table", "args": {"table": "item"}})
        info = {"database_url": {"from_env": "SCALE_SECOND_URL"}}
        add = {"name": "second", "configuration": {"connection_info": info}}
        _metadata(server, {"type": "pg_add_source", "args": add})
        track = {
            "source": "second",
            "table": "item",
            "configuration": {"custom_name": "other_item"},
        }
        _metadata(server, {"type": "pg_track_table", "args": track})
        for label, query in (("one source", TWO_ONE_SOURCE), ("two sources", TWO_SOURCES)):
            _drive(server, query, 1.0, args.connections)
            run = _drive(server, query, seconds, args.connections)
            out[label] = {"rps": run.rps, "p50_ms": run.p50_ms, "errors": run.errors}
            say(f"  {label:14} {run.rps:8.0f} req/s   p50 {run.p50_ms:6.2f} ms")
    finally:
        server.stop()
    return out


def targets(results: dict[str, Any]) -> list[str]:
    """The targets that failed, each named."""
    failed = []
    alone, moved = results["replicas"]["primary alone"], results["replicas"]["one replica"]
    read_on_primary = alone["primary_xact_per_s"] / max(alone["rps"], 1.0)
    left = moved["primary_xact_per_s"] / max(moved["rps"], 1.0)
    share = 1 - left / max(read_on_primary, 1e-9)
    results["replica_share"] = share
    if share < REPLICA_SHARE_TARGET:
        failed.append(
            f"the replica took {share:.0%} of the reads (target {REPLICA_SHARE_TARGET:.0%})"
        )
    ratio = results["sources"]["two sources"]["rps"] / max(
        results["sources"]["one source"]["rps"], 1.0
    )
    results["two_source_ratio"] = ratio
    if ratio < TWO_SOURCE_RATIO_TARGET:
        failed.append(
            f"two sources answered {ratio:.2f} x one source (target {TWO_SOURCE_RATIO_TARGET})"
        )
    return failed


def main(argv: list[str] | None = None) -> int:
    """Run both parts; print, save, and with `--check` fail on a missed target."""
    args = parse_args(argv)
    seconds = 3.0 if args.quick else args.duration
    say(f"bench.scale: {wrk_version()}, {args.workers} workers, {seconds:.0f} s runs")
    with postgres() as admin:
        primary = asyncio.run(create_database(admin, "scale_primary"))
        replica = asyncio.run(create_database(admin, "scale_replica"))
        for url in (primary, replica):
            asyncio.run(_sql(url, TABLE_SQL.format(name="item", rows=ROWS)))
        say("read replicas (the same query, the primary alone, then with one replica):")
        results: dict[str, Any] = {"replicas": replicas(admin, primary, replica, args, seconds)}
        say("two sources (two root fields from one source, then one from each of two):")
        results["sources"] = two_sources(primary, replica, args, seconds)
    failed = targets(results)
    say(
        f"the replica took {results['replica_share']:.0%} of the primary's read transactions; "
        f"two sources answered {results['two_source_ratio']:.2f} x the rate of one"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"scale-{today()}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps({"args": vars(args), **results}, indent=1) + "\n")
    say(f"saved {path}")
    for line in failed:
        say(f"FAIL: {line}")
    return 1 if failed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
