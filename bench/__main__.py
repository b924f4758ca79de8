"""`uv run python -m bench`: svc vs PostGraphile v4 vs the limit server on Chinook (issue 6).

Steps: start a private Postgres; load and track Chinook through svc's metadata API in this
process, and take svc's statement for each benchmark query; start svc, PostGraphile and the
limit server on that database with the same worker count; check every answer; then drive
each server with wrk, alternating servers round by round; print and save the table, the
chart and the targets.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import (
    CACHE,
    POSTGRAPHILE_QUERIES,
    RESULTS,
    SVC_QUERIES,
    Compiled,
    say,
    today,
)

BENCH_MODULES = ("uvloop", "matplotlib")
PROFILES = CACHE / "profiles"


def ensure_bench_group(module: str) -> None:
    """Re-run under `uv run --group bench` when the `bench` dependency group is missing."""
    try:
        for name in BENCH_MODULES:
            __import__(name)
    except ImportError:
        if os.environ.get("BENCH_REEXEC"):
            raise
        say("the bench dependency group is not installed: re-running with uv run --group bench")
        os.environ["BENCH_REEXEC"] = "1"
        argv = ["uv", "run", "--group", "bench", "python", "-m", module, *sys.argv[1:]]
        os.execvp("uv", argv)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="per server")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per wrk run")
    p.add_argument("--connections", type=int, default=10, help="wrk connections")
    p.add_argument("--threads", type=int, default=1, help="wrk threads")
    p.add_argument("--rounds", type=int, default=2, help="runs per server and query")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds of wrk before timing")
    p.add_argument("--queries", help="comma-separated operation names (default: all)")
    p.add_argument("--no-postgraphile", action="store_true", help="skip PostGraphile")
    p.add_argument(
        "--svc-rsgi",
        action="store_true",
        help="also run svc with --server-interface rsgi (svc_rsgi), beside the default",
    )
    p.add_argument("--quick", action="store_true", help="smoke run: 2 s runs, 1 round")
    p.add_argument(
        "--profile", action="store_true", help="py-spy svc during its first run of each query"
    )
    args = p.parse_args(argv)
    if args.quick:
        args.duration, args.rounds, args.warmup = 2.0, 1, 1.0
    return args


async def prepare(admin_url: str, queries: dict[str, str]) -> tuple[str, list[Compiled], str]:
    """A new database with Chinook tracked; svc's statement per query; Postgres version."""
    from bench.common import compile_query, create_database, engine, load_chinook

    url = await create_database(admin_url, "chinook")
    async with engine(url) as eng:
        say("loading Chinook through run_sql and tracking it in one bulk")
        await load_chinook(eng)
        compiled = [compile_query(eng, name, doc) for name, doc in queries.items()]
        async with eng.db.transaction() as conn:
            version: str = await conn.fetchval("show server_version")
    return url, compiled, version


def body(document: str) -> bytes:
    """The POST body of a GraphQL document."""
    return json.dumps({"query": document}, separators=(",", ":")).encode()


def verify(servers: dict[str, Any], bodies: dict[str, dict[str, bytes]]) -> None:
    """Every server answers every query with 200 and data, no errors; svc's and the limit
    server's bodies are byte for byte equal. Exits on the first failure."""
    import httpx

    answers: dict[tuple[str, str], bytes] = {}
    with httpx.Client(timeout=120) as client:
        for server_name, server in servers.items():
            for query, payload in bodies[server_name].items():
                r = client.post(server.url, content=payload, headers=_JSON)
                parsed = r.json() if r.status_code == 200 else {}
                if r.status_code != 200 or "errors" in parsed or not parsed.get("data"):
                    sys.exit(f"bench: {server_name} {query}: {r.status_code} {r.text[:1000]}")
                answers[server_name, query] = r.content
    for query in bodies.get("limit", {}):
        if answers["svc", query] != answers["limit", query]:
            sys.exit(f"bench: svc and limit answer {query} differently")
    say("every answer checked: 200, data, no errors; svc == limit byte for byte")


_JSON = {"content-type": "application/json"}


def summarise(runs: list[Any]) -> dict[str, Any]:
    """req/s over all rounds; mean p50 and p99 of the rounds."""
    seconds = sum(r.seconds for r in runs)
    return {
        "rps": sum(r.requests for r in runs) / seconds if seconds else 0.0,
        "p50_ms": sum(r.p50_ms for r in runs) / len(runs),
        "p99_ms": sum(r.p99_ms for r in runs) / len(runs),
        "errors": sum(r.errors for r in runs),
        "rounds": [
            {"rps": r.rps, "p50_ms": r.p50_ms, "p99_ms": r.p99_ms, "errors": r.errors} for r in runs
        ],
    }


def measure(
    args: argparse.Namespace,
    servers: dict[str, Any],
    files: dict[str, dict[str, Path]],
    rss: Any,
) -> dict[str, dict[str, Any]]:
    """wrk per query: a warm-up per server, then `rounds` x (each server in turn)."""
    from bench import profile
    from bench.load import run_wrk

    PROFILES.mkdir(parents=True, exist_ok=True)

    results: dict[str, dict[str, Any]] = {}
    for query in files["svc"]:
        present = [s for s in servers if query in files[s]]
        runs: dict[str, list[Any]] = {s: [] for s in present}
        load = {"connections": args.connections, "threads": args.threads}
        for s in present:
            run_wrk(servers[s].url, files[s][query], seconds=args.warmup, **load)
        for round_no in range(args.rounds):
            for s in present:
                spy = None
                if args.profile and s == "svc" and round_no == 0:
                    raw = PROFILES / f"{query}.txt"
                    spy = profile.start(servers[s].proc.pid, args.duration, raw)
                with rss if s == "svc" else contextlib.nullcontext():
                    run = run_wrk(servers[s].url, files[s][query], seconds=args.duration, **load)
                runs[s].append(run)
                if spy is not None:
                    spy.wait()
                    say(f"py-spy profile of svc, {query} ({raw}):\n{profile.summarise(raw)}")
                say(
                    f"{query} round {round_no + 1}/{args.rounds} {s}: {run.rps:,.0f} req/s, "
                    f"p50 {run.p50_ms:.2f} ms, p99 {run.p99_ms:.2f} ms"
                    + (f", {run.errors} errors" if run.errors else "")
                )
        results[query] = {s: summarise(r) for s, r in runs.items()}
        for ours, theirs in RATIOS:
            a = results[query].get(ours, {}).get("rps")
            b = results[query].get(theirs, {}).get("rps")
            results[query][f"{ours}/{theirs}"] = a / b if a and b else None
    return results


# (server, server) pairs whose req/s ratio the table shows, under these column names.
RATIOS = (
    ("svc", "postgraphile"),
    ("svc", "postgraphile5"),
    ("svc", "limit"),
    ("svc", "limit_asgi"),
    ("svc_rsgi", "limit"),
)
COLUMNS = ("svc/pg", "svc/pg5", "svc/limit", "svc/limit_asgi", "svc_rsgi/limit")
SERVERS = ("svc", "svc_rsgi", "postgraphile", "postgraphile5", "limit", "limit_asgi")


def print_results(results: dict[str, dict[str, Any]]) -> None:
    """The table: req/s, p50 and p99 per server, and svc's ratios."""
    from bench.report import table

    servers = [s for s in SERVERS if any(s in r for r in results.values())]
    headers = ["query"]
    for s in servers:
        headers += [f"{s} req/s", "p50 ms", "p99 ms"]
    headers += list(COLUMNS)
    rows = []
    for query, r in results.items():
        row = [query]
        for s in servers:
            m = r.get(s)
            row += (
                [f"{m['rps']:,.0f}", f"{m['p50_ms']:.2f}", f"{m['p99_ms']:.2f}"] if m else ["-"] * 3
            )
        row += [f"{r[f'{a}/{b}']:.2f}" if r.get(f"{a}/{b}") else "-" for a, b in RATIOS]
        rows.append(row)
    print()
    print(table(headers, rows))


def check_targets(results: dict[str, dict[str, Any]], rss: dict[str, float]) -> list[Any]:
    """The load targets of issue 6 for the queries measured."""
    from bench.report import (
        RSS_MB,
        VS_LIMIT,
        VS_LIMIT_ASGI,
        VS_POSTGRAPHILE,
        VS_POSTGRAPHILE_ANY,
        at_least,
        at_most,
    )

    out = [
        at_least(f"svc/PostGraphile {q}", results[q].get("svc/postgraphile"), bound)
        for q, bound in VS_POSTGRAPHILE.items()
        if q in results
    ]
    for version, key in (("v4", "svc/postgraphile"), ("v5", "svc/postgraphile5")):
        out += [
            at_least(f"svc/PostGraphile {version} {q}", r.get(key), VS_POSTGRAPHILE_ANY)
            for q, r in results.items()
            if r.get(key) is not None
        ]
    out += [at_least(f"svc/limit {q}", r.get("svc/limit"), VS_LIMIT) for q, r in results.items()]
    out += [
        at_least(f"svc/limit_asgi {q}", r.get("svc/limit_asgi"), VS_LIMIT_ASGI)
        for q, r in results.items()
    ]
    out.append(at_most("peak RSS per svc process, MB", rss.get("peak_process_mb"), RSS_MB))
    return out


def machine(
    pg_version: str, postgraphile: str | None, postgraphile5: str | None = None
) -> dict[str, Any]:
    """What the numbers were measured on."""
    import granian

    from bench.load import wrk_version

    lines = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((x.split(":", 1)[1].strip() for x in lines if "model name" in x), "")
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "postgres": pg_version,
        "granian": granian.__version__,
        "postgraphile": postgraphile,
        "postgraphile5": postgraphile5,
        "wrk": wrk_version(),
    }


def run(args: argparse.Namespace) -> int:
    """The whole comparison; returns the exit status."""
    from bench import profile
    from bench.common import postgres, read_queries
    from bench.postgraphile5 import install_postgraphile5, start_postgraphile5
    from bench.report import chart, print_targets, targets_json
    from bench.servers import (
        PROBE,
        RssSampler,
        Server,
        install_postgraphile,
        start_limit,
        start_postgraphile,
        start_svc,
    )

    queries = read_queries(SVC_QUERIES)
    if args.queries:
        wanted = [q.strip() for q in args.queries.split(",") if q.strip()]
        unknown = set(wanted) - set(queries)
        if unknown:
            sys.exit(f"bench: unknown queries {sorted(unknown)}; known: {sorted(queries)}")
        queries = {q: queries[q] for q in wanted}
    pg_queries = {q: d for q, d in read_queries(POSTGRAPHILE_QUERIES).items() if q in queries}
    if args.profile:
        profile.py_spy()
    load = os.getloadavg()[0]
    if load > 0.5:
        say(f"warning: the machine is busy before the run (load average {load:.1f})")
    postgraphile = None if args.no_postgraphile else install_postgraphile()
    postgraphile5 = None if args.no_postgraphile else install_postgraphile5()
    say(
        f"{len(queries)} queries, {args.workers} workers per server, "
        f"wrk -c{args.connections}, {args.duration:g} s x {args.rounds} rounds"
    )
    work = Path(tempfile.mkdtemp(prefix="svc-bench-"))
    with postgres() as admin_url:
        url, compiled, server_version = asyncio.run(prepare(admin_url, queries))
        spec = {
            "database_url": url,
            "pool_size": 10,
            "routes": [
                {"body": body(c.document).decode(), "sql": c.sql, "args": c.args}
                | {"aliases": c.aliases}
                for c in compiled
            ],
        }
        (work / "limit.json").write_text(json.dumps(spec))
        bodies = {
            "svc": {c.name: body(c.document) for c in compiled},
            "limit": {c.name: body(c.document) for c in compiled},
        }
        bodies["limit_asgi"] = bodies["limit"]
        if args.svc_rsgi:
            bodies["svc_rsgi"] = bodies["svc"]
        if postgraphile:
            bodies["postgraphile"] = {q: body(d) for q, d in pg_queries.items()}
        if postgraphile5:  # v4's queries: v5 runs with the v4 preset
            bodies["postgraphile5"] = {q: body(d) for q, d in pg_queries.items()}
        files: dict[str, dict[str, Path]] = {}
        for server_name, per_query in bodies.items():
            files[server_name] = {}
            for q, payload in per_query.items():
                files[server_name][q] = work / f"{server_name}-{q}.json"
                files[server_name][q].write_bytes(payload)
        servers: dict[str, Any] = {}
        try:
            starts: list[tuple[str, Callable[[], Server]]] = [
                ("svc", lambda: start_svc(url, args.workers))
            ]
            if postgraphile:
                starts.append(("postgraphile", lambda: start_postgraphile(url, args.workers)))
            if postgraphile5:
                starts.append(("postgraphile5", lambda: start_postgraphile5(url, args.workers)))
            if args.svc_rsgi:
                starts.append(("svc_rsgi", lambda: start_svc(url, args.workers, "rsgi")))
            starts.append(("limit", lambda: start_limit(work / "limit.json", args.workers)))
            starts.append(
                ("limit_asgi", lambda: start_limit(work / "limit.json", args.workers, "asgi"))
            )
            for name, start in starts:
                say(f"starting {name}")
                servers[name] = start()
                probe = next(iter(bodies["limit"].values())) if "limit" in name else PROBE
                servers[name].wait_ready(args.workers, probe)
            verify(servers, bodies)
            rss = RssSampler(servers["svc"].proc.pid)
            results = measure(args, servers, files, rss)
            memory = {
                "peak_process_mb": rss.peak_process_kb / 1024,
                "peak_total_mb": rss.peak_total_kb / 1024,
                "high_water_process_mb": rss.high_water_kb() / 1024,
            }
        finally:
            for server in servers.values():
                server.stop()
    print_results(results)
    print(
        f"\nsvc memory under load: peak RSS {memory['peak_process_mb']:.1f} MB per process "
        f"(VmHWM {memory['high_water_process_mb']:.1f} MB), "
        f"{memory['peak_total_mb']:.1f} MB for main + {args.workers} workers"
    )
    targets = check_targets(results, memory)
    print_targets(targets)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = today() + ("-quick" if args.quick else "")
    out = {
        "date": today(),
        "command": "python -m bench " + " ".join(sys.argv[1:]),
        "machine": machine(server_version, postgraphile, postgraphile5) | {"load_before": load},
        "settings": {k: v for k, v in vars(args).items()},
        "queries": results,
        "svc_memory": memory,
        "targets": targets_json(targets),
    }
    (RESULTS / f"{stem}.json").write_text(json.dumps(out, indent=2) + "\n")
    chart(results, list(servers), RESULTS / f"{stem}.png")
    say(f"wrote {RESULTS / (stem + '.json')} and {stem}.png")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    ensure_bench_group("bench")
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
