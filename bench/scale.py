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

3. **A big schema** (issue 30): `--tables` tables (10,000; 1,000 with `--quick`), each
   with an object relationship to the next and an array relationship back, and select
   permissions for 5 roles, applied with one `replace_metadata`. Measured against the
   targets: cold start of `svc serve` to the first answered query (5 s), `track_table` of
   one more table (50 ms) and the next request of a role (500 ms), the resident memory
   per worker (300 MB), a role's first introspection (300 ms; and, not a target, the
   same request again on its connection: the kept answer). `track_table` follows a
   `run_sql` creating the table twice: at once (recorded as `…_right_after_run_sql_s`:
   the other worker is still reloading after the DDL), then after `SETTLE_S` (the
   target's measure).

4. **Event delivery** (`bench.events`: 10,000 events; 2,000 and one capture round with
   `--quick`): at least 1,000 events/s per process, capture at most 15% of inserts.
5. **Soak** (`bench.soak`: 5 minutes; 2 minutes with `--quick`; `--soak-minutes`): RSS
   growth per worker at most 5% after warm-up, no growth in tasks, connections or
   descriptors, every event and cron event delivered once.

`--skip-sources`, `--skip-big`, `--skip-events`, `--skip-soak` leave a part out.
`--check` exits non-zero, naming each target that failed: the replica takes at least 90%
of the read transactions; two sources answer at least 40% of one source's rate; the big
schema's targets; the event and soak targets (their modules print each). Results are
saved to `bench/results/scale-<date>.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench.common import RESULTS, create_database, postgres, say, today
from bench.load import Run, run_wrk, wrk_version
from bench.servers import Server, start_svc, status_kb, tree

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
ROLES = ("r1", "r2", "r3", "r4", "r5")
SETTLE_S = 5.0  # after a DDL, time for every worker to reload before the measured write
# Big schema targets (issue 30): seconds, or MB for memory.
BIG_TARGETS = {
    "cold_start_s": 5.0,
    "track_table_s": 0.05,
    "next_request_s": 0.5,
    "rss_per_worker_mb": 300.0,
    "introspection_s": 0.3,
}
INTROSPECTION = (
    "query { __schema { queryType { name } types { name kind fields(includeDeprecated: true)"
    " { name args { name type { name kind ofType { name kind } } } type { name kind ofType"
    " { name kind ofType { name kind } } } } inputFields { name } enumValues { name } } } }"
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="svc workers")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per wrk run")
    p.add_argument("--connections", type=int, default=10, help="wrk connections")
    p.add_argument("--quick", action="store_true", help="short runs (3 s)")
    p.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    p.add_argument("--tables", type=int, default=0, help="big schema tables (10000; 1000 quick)")
    p.add_argument("--skip-sources", action="store_true", help="no replicas, no two sources")
    p.add_argument("--skip-big", action="store_true", help="no big schema")
    p.add_argument("--skip-events", action="store_true", help="no event delivery")
    p.add_argument("--skip-soak", action="store_true", help="no soak")
    p.add_argument("--soak-minutes", type=float, default=0, help="soak length (5; 2 quick)")
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


def _table_name(i: int) -> str:
    return f"t{i:05d}"


def big_sql(n: int) -> str:
    """`n` tables `t00000…`, each with a reference to the previous one, 2 rows each."""
    out = []
    for i in range(n):
        ref = f", prev_id int REFERENCES {_table_name(i - 1)} (id)" if i else ""
        out.append(f"CREATE TABLE {_table_name(i)} (id int PRIMARY KEY, name text{ref});")
        out.append(f"INSERT INTO {_table_name(i)} (id, name) VALUES (1, 'a'), (2, 'b');")
    return "\n".join(out)


def big_document(n: int) -> dict[str, Any]:
    """The metadata of `big_sql(n)`: every table tracked, `prev`/`nexts` relationships,
    select permissions for `ROLES` (each its own filter)."""
    tables = []
    for i in range(n):
        entry: dict[str, Any] = {"table": {"schema": "public", "name": _table_name(i)}}
        if i:
            entry["object_relationships"] = [
                {"name": "prev", "using": {"foreign_key_constraint_on": "prev_id"}}
            ]
        if i + 1 < n:
            fk = {"table": {"schema": "public", "name": _table_name(i + 1)}, "column": "prev_id"}
            entry["array_relationships"] = [
                {"name": "nexts", "using": {"foreign_key_constraint_on": fk}}
            ]
        entry["select_permissions"] = [
            {
                "role": role,
                "permission": {"columns": "*", "filter": {"id": {"_gt": k}}},
            }
            for k, role in enumerate(ROLES)
        ]
        tables.append(entry)
    return {"version": 2, "tables": tables}


def _timed_post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[float, Any]:
    started = time.perf_counter()
    r = httpx.post(url, json=body, headers=headers or {}, timeout=600)
    took = time.perf_counter() - started
    if r.status_code != 200 or (isinstance(r.json(), dict) and "errors" in r.json()):
        sys.exit(f"bench.scale: {str(body)[:80]} answered {r.text[:300]}")
    return took, r.json()


def big_schema(admin: str, args: argparse.Namespace, n: int) -> dict[str, Any]:
    """Part 3 (module doc)."""
    url = asyncio.run(create_database(admin, "scale_big"))
    say(f"  creating {n} tables")
    statements = big_sql(n).split("\n")
    for start in range(0, len(statements), 1000):  # one transaction's locks each
        asyncio.run(_sql(url, "\n".join(statements[start : start + 1000])))
    out: dict[str, Any] = {"tables": n}
    server = start_svc(url, args.workers)
    try:
        server.wait_ready(args.workers)
        meta = server.url.replace("/v1/graphql", "/v1/metadata")
        took, _ = _timed_post(meta, {"type": "replace_metadata", "args": big_document(n)})
        out["replace_metadata_s"] = took
        say(f"  replace_metadata of {n} tables: {took:.2f} s")
    finally:
        server.stop()
    started = time.perf_counter()
    server = start_svc(url, args.workers)
    try:
        first = {"query": f"{{ {_table_name(n - 1)} {{ id }} }}"}
        deadline = time.monotonic() + 300
        while True:
            try:
                r = httpx.post(server.url, json=first, timeout=60)
                if r.status_code == 200 and "data" in r.json():
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                sys.exit(f"bench.scale: no answer within 300 s:\n{server.tail()}")
            time.sleep(0.05)
        out["cold_start_s"] = time.perf_counter() - started
        say(f"  cold start to the first answer: {out['cold_start_s']:.2f} s")
        server.wait_ready(args.workers)
        meta = server.url.replace("/v1/graphql", "/v1/metadata")
        role = {"x-svc-role": "r2"}
        query = {"query": f"{{ {_table_name(n // 2)} {{ id prev {{ id }} }} }}"}
        for extra, settle in (("extra", 0.0), ("extra2", SETTLE_S)):
            sql = f"CREATE TABLE {extra} (id int PRIMARY KEY)"
            took, _ = _timed_post(meta, {"type": "run_sql", "args": {"sql": sql}})
            out["run_sql_create_table_s"] = took  # svc introspects again
            # First at once, as a console does (the other worker is still reloading after
            # the DDL); then once every worker has the new table (the measure of the
            # target: one write against a settled server).
            time.sleep(settle)
            track = {"type": "pg_track_table", "args": {"table": extra}}
            key = "track_table_s" if settle else "track_table_right_after_run_sql_s"
            out[key], _ = _timed_post(meta, track)
            key = "next_request_s" if settle else "next_request_right_after_run_sql_s"
            out[key], _ = _timed_post(server.url, query, role)
        pids = tree(server.proc.pid)[1:] or [server.proc.pid]
        out["rss_before_introspection_mb"] = max(status_kb(p, "VmRSS") / 1024 for p in pids)
        # One connection, so the second request reaches the worker that kept the answer.
        with httpx.Client(timeout=600, headers={"x-svc-role": "r3"}) as client:
            for key in ("introspection_s", "introspection_again_s"):
                started = time.perf_counter()
                r = client.post(server.url, json={"query": INTROSPECTION})
                out[key] = time.perf_counter() - started
                # (not decoded: 55 MB of JSON would take seconds, past the keep-alive)
                if r.status_code != 200 or not r.content.startswith(b'{"data"'):
                    sys.exit(f"bench.scale: introspection answered {r.text[:300]}")
                # The fresh whole schema collected after the first (1.2 s); under httpx's
                # 5 s keep-alive expiry, so the connection (and worker) stays.
                time.sleep(2.5)
        pids = tree(server.proc.pid)[1:] or [server.proc.pid]
        rss = [status_kb(pid, "VmRSS") / 1024 for pid in pids]
        out["rss_per_worker_mb"] = max(rss) if rss else 0.0
        say(
            f"  track_table {out['track_table_s'] * 1000:.0f} ms (right after run_sql "
            f"{out['track_table_right_after_run_sql_s'] * 1000:.0f} ms), next request of a role "
            f"{out['next_request_s'] * 1000:.0f} ms "
            f"({out['next_request_right_after_run_sql_s'] * 1000:.0f} ms), "
            "first introspection of a role "
            f"{out['introspection_s'] * 1000:.0f} ms (again: "
            f"{out['introspection_again_s'] * 1000:.0f} ms), RSS per process (max) "
            f"{out['rss_per_worker_mb']:.0f} MB ({out['rss_before_introspection_mb']:.0f} MB "
            "before the introspection)"
        )
    finally:
        server.stop()
    return out


def targets(results: dict[str, Any]) -> list[str]:
    """The targets that failed, each named."""
    failed = []
    big = results.get("big_schema")
    if big:
        for key, bound in BIG_TARGETS.items():
            if big[key] > bound:
                failed.append(f"big schema {key} = {big[key]:.3f} (target {bound})")
    if "replicas" not in results:
        return failed
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


def other_targets(args: argparse.Namespace) -> list[str]:
    """Run the event delivery and soak benchmarks (short forms with `--quick`); the
    targets that failed, by part (each module prints and saves its own figures)."""
    from bench import events, soak

    failed = []
    if not args.skip_events:
        say("event delivery (bench.events):")
        short = ["--events", "2000", "--rounds", "1", "--inserts", "500"] if args.quick else []
        if events.main([*short, "--check"]):
            failed.append("event delivery or capture (bench.events: see its FAIL lines)")
    if not args.skip_soak:
        minutes = args.soak_minutes or (2.0 if args.quick else 5.0)
        say(f"soak ({minutes:g} minutes, bench.soak):")
        warmup = ["--warmup", "30", "--subscribers", "200"] if args.quick else []
        if soak.main(["--minutes", str(minutes), *warmup, "--check"]):
            failed.append("soak (bench.soak: see its FAIL lines)")
    return failed


def main(argv: list[str] | None = None) -> int:
    """Run both parts; print, save, and with `--check` fail on a missed target."""
    args = parse_args(argv)
    seconds = 3.0 if args.quick else args.duration
    say(f"bench.scale: {wrk_version()}, {args.workers} workers, {seconds:.0f} s runs")
    results: dict[str, Any] = {}
    with postgres() as admin:
        if not args.skip_sources:
            primary = asyncio.run(create_database(admin, "scale_primary"))
            replica = asyncio.run(create_database(admin, "scale_replica"))
            for url in (primary, replica):
                asyncio.run(_sql(url, TABLE_SQL.format(name="item", rows=ROWS)))
            say("read replicas (the same query, the primary alone, then with one replica):")
            results["replicas"] = replicas(admin, primary, replica, args, seconds)
            say("two sources (two root fields from one source, then one from each of two):")
            results["sources"] = two_sources(primary, replica, args, seconds)
        if not args.skip_big:
            n = args.tables or (1000 if args.quick else 10_000)
            say(f"a big schema ({n} tables, relationships, 5 roles):")
            results["big_schema"] = big_schema(admin, args, n)
    failed = targets(results)
    failed += other_targets(args)
    if "replicas" in results:
        say(
            f"the replica took {results['replica_share']:.0%} of the primary's read "
            f"transactions; two sources answered {results['two_source_ratio']:.2f} x the "
            "rate of one"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    part = "-big" if args.skip_sources else ""
    path = RESULTS / f"scale{part}-{today()}{'-quick' if args.quick else ''}.json"
    path.write_text(json.dumps({"args": vars(args), **results}, indent=1) + "\n")
    say(f"saved {path}")
    for line in failed:
        say(f"FAIL: {line}")
    return 1 if failed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
