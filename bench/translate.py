"""`uv run python -m bench.translate`: what svc costs in-process, without Postgres or HTTP.

- cold compile of each benchmark query against the Chinook schema: parse, validate, plan,
  SQL, and the whole `GraphQLService.compile` with the plan cache emptied first;
- warm overhead on a cache hit: one request through the ASGI app (body decode, auth,
  routing, cache lookups, parameters, answer assembly) with the database call replaced by
  a stub returning the rows Postgres returned;
- GraphQL schema build (and graphql-core's schema validation) for 1,000 generated tables;
- `track_table` through the metadata API (in-process `Engine`) with 2,000 tables tracked;
- peak RSS of svc under load, from the newest `python -m bench` result.

Prints a table with PASS/FAIL per target and writes `bench/results/translate-<date>.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from graphql import parse, validate
from graphql.type import validate_schema

from bench.common import (
    RESULTS,
    SVC_QUERIES,
    create_database,
    engine,
    load_chinook,
    metadata,
    postgres,
    read_queries,
    say,
    today,
)
from bench.report import (
    COLD_MS,
    RSS_MB,
    SCHEMA_S,
    TRACK_MS,
    WARM_US,
    Target,
    at_most,
    print_targets,
    table,
    targets_json,
)
from svc.api.engine import Engine
from svc.api.graphql import GraphQLService, decode_request, prepare
from svc.api.validate import RULES, select_rules, validate_document
from svc.config import Config
from svc.execute.params import resolve
from svc.plan.build import plan_query
from svc.schema import build_schema
from svc.server.app import App
from svc.sql.render import render_query

THREE_LEVEL = ("albums_tracks_genre_all", "albums_tracks_genre_some")
SMALL_ANSWER = 10_000  # bytes: above, copying the answer dominates the warm overhead


def cpu_ns() -> int:
    """CPU time of this process: unlike wall time, not inflated by other processes running
    on a shared machine (the in-process figures are pure computation)."""
    return time.process_time_ns()


def median_us(fn: Callable[[], Any], repeat: int) -> float:
    """Median CPU time of `fn()` over `repeat` calls, in microseconds."""
    times = []
    for _ in range(repeat):
        start = cpu_ns()
        fn()
        times.append(cpu_ns() - start)
    return statistics.median(times) / 1000


def cold_compile(eng: Engine, queries: dict[str, str], repeat: int) -> dict[str, dict[str, float]]:
    """Per query: µs of parse, validate, plan, SQL, and the whole compile on a cache miss."""
    state = eng.state
    schema = state.schema("admin")
    validate(schema, parse("{ __typename }"), RULES)  # graphql-core's one-off schema check
    service = eng.graphql_service
    out: dict[str, dict[str, float]] = {}
    for name, doc in queries.items():
        req = decode_request({"query": doc})
        document = parse(doc)
        prepared = prepare(schema, doc, None)
        op, fragments = prepared.operation, prepared.fragments
        plan = plan_query(
            schema, state.ir.tables, op, fragments, {}, stringify=False, role="admin"
        )[0]

        def whole(req: Any = req) -> None:
            state.plans.clear()
            service.compile(state, "admin", req)

        first = cpu_ns()
        whole()
        first_us = (cpu_ns() - first) / 1000
        out[name] = {
            "parse": median_us(partial(parse, doc), repeat),
            "validate": median_us(
                partial(validate_document, schema, document, select_rules(document, doc)), repeat
            ),
            "plan": median_us(
                partial(plan_query, schema, state.ir.tables, op, fragments, {}, stringify=False),
                repeat,
            ),
            "sql": median_us(partial(render_query, plan), repeat),
            "compile": median_us(whole, repeat),
            "first": first_us,
        }
    return out


class StubDatabase:
    """Answers `query_json` with the texts Postgres gave for each statement."""

    def __init__(self, answers: dict[str, tuple[bytes, ...]]) -> None:
        self.answers = answers

    async def query_json(
        self, sql: str, args: list[Any], columns: int, timeout: float | None = None
    ) -> tuple[bytes, ...]:
        """The recorded answer of `sql`."""
        return self.answers[sql]


async def warm_overhead(
    eng: Engine, queries: dict[str, str], repeat: int
) -> tuple[dict[str, Any], dict[str, int]]:
    """Per query: µs per request through the ASGI app and through `GraphQLService.execute`
    alone, on a cache hit, with the database call stubbed; and the answer sizes in bytes."""
    answers: dict[str, tuple[bytes, ...]] = {}
    sizes: dict[str, int] = {}
    for name, doc in queries.items():
        req = decode_request({"query": doc})
        _, compiled, _ = eng.graphql_service.compile(eng.state, "admin", req)
        args = resolve(compiled.statement.params, {}, {})
        sql = compiled.statement.sql
        answers[sql] = await eng.db.query_json(sql, args, len(compiled.aliases))
        sizes[name] = sum(len(t) for t in answers[sql])
    real = eng.graphql_service
    stub: Any = StubDatabase(answers)
    eng.graphql_service = GraphQLService(stub, stringify=False)
    app = App(Config(database_url=eng.config.database_url, log_requests=False))
    app.engine = eng
    out: dict[str, Any] = {}
    try:
        for name, doc in queries.items():
            payload = json.dumps({"query": doc}).encode()
            raw = {"query": doc}
            scope = {
                "type": "http",
                "method": "POST",
                "path": "/v1/graphql",
                "headers": [(b"content-type", b"application/json")],
            }
            message = {"type": "http.request", "body": payload, "more_body": False}

            async def receive(m: dict[str, Any] = message) -> dict[str, Any]:
                return m

            async def send(_: dict[str, Any]) -> None:
                return None

            async def through_app(n: int, scope: dict[str, Any] = scope) -> None:
                for _ in range(n):
                    await app(scope, receive, send)

            async def through_service(n: int, raw: dict[str, Any] = raw) -> None:
                for _ in range(n):
                    await eng.graphql_service.execute(eng.state, "admin", {}, raw)

            out[name] = {
                "app": await _per_call_us(through_app, repeat),
                "service": await _per_call_us(through_service, repeat),
            }
    finally:
        eng.graphql_service = real
    return out, sizes


async def _per_call_us(batch: Callable[[int], Any], repeat: int) -> float:
    """Median over `repeat` batches of 1,000 calls of the CPU µs per call."""
    await batch(100)  # warm the caches
    times = []
    for _ in range(repeat):
        start = cpu_ns()
        await batch(1000)
        times.append((cpu_ns() - start) / 1000 / 1000)
    return statistics.median(times)


FANOUT = 10


def parent_of(i: int) -> int:
    """The table `gen_<i>` points to: a tree of fan-out 10 (depth 3 for 1,000 tables), as
    schemas of many tables around a few central ones tend to be."""
    return (i - 1) // FANOUT


def generated_ddl(count: int) -> str:
    """`count` tables `gen_0000…`, each but the first with a foreign key onto its parent."""
    parts = []
    for i in range(count):
        parent = f", parent_id integer references gen_{parent_of(i):04d}(id)" if i else ""
        parts.append(
            f"create table gen_{i:04d} (id serial primary key, name text not null, "
            f"amount numeric, flag boolean, created_at timestamptz default now(){parent});"
        )
    return "\n".join(parts)


def generated_metadata(count: int) -> dict[str, Any]:
    """Metadata tracking `gen_0000…` up to `count`, each with an object relationship
    `parent` and an array relationship per child table (`children_<n>`)."""
    tables: list[dict[str, Any]] = []
    for i in range(count):
        entry: dict[str, Any] = {"table": {"schema": "public", "name": f"gen_{i:04d}"}}
        if i:
            entry["object_relationships"] = [
                {"name": "parent", "using": {"foreign_key_constraint_on": "parent_id"}}
            ]
            tables[parent_of(i)].setdefault("array_relationships", []).append(
                {
                    "name": f"children_{i:04d}",
                    "using": {
                        "foreign_key_constraint_on": {
                            "table": {"schema": "public", "name": f"gen_{i:04d}"},
                            "column": "parent_id",
                        }
                    },
                }
            )
        tables.append(entry)
    return {"version": 2, "tables": tables}


async def schema_and_tracking(admin_url: str, repeat: int) -> dict[str, float]:
    """CPU seconds to build (and validate) the schema of 1,000 tables; ms of `track_table`
    with 2,000 tables tracked (wall, and CPU of this process), and CPU seconds of the schema
    rebuild the next request then pays."""
    rounds = max(3, repeat // 40)
    url = await create_database(admin_url, "generated")
    async with engine(url) as eng:
        say("creating 2,001 generated tables")
        await metadata(eng, {"type": "run_sql", "args": {"sql": generated_ddl(2001)}})
        await metadata(eng, {"type": "replace_metadata", "args": generated_metadata(1000)})
        builds, checks = [], []
        for _ in range(rounds):
            start = cpu_ns()
            schema = build_schema(eng.state.ir, "admin")
            built = cpu_ns()
            errors = validate_schema(schema)
            builds.append((built - start) / 1e9)
            checks.append((cpu_ns() - built) / 1e9)
            assert not errors, errors[:3]
        say(f"schema of 1,000 tables: {statistics.median(builds):.3f} s")
        await metadata(eng, {"type": "replace_metadata", "args": generated_metadata(2000)})
        tracks, track_cpu, rebuilds = [], [], []
        for _ in range(rounds):
            wall, cpu = time.perf_counter(), cpu_ns()
            await metadata(eng, {"type": "track_table", "args": {"name": "gen_2000"}})
            tracks.append(time.perf_counter() - wall)
            track_cpu.append((cpu_ns() - cpu) / 1e9)
            cpu = cpu_ns()
            eng.state.schema("admin")
            rebuilds.append((cpu_ns() - cpu) / 1e9)
            await metadata(eng, {"type": "untrack_table", "args": {"table": "gen_2000"}})
        say(f"track_table with 2,000 tracked: {statistics.median(tracks) * 1000:.0f} ms")
    return {
        "schema_build_1000_s": statistics.median(builds),
        "schema_validate_1000_s": statistics.median(checks),
        "track_table_2000_ms": statistics.median(tracks) * 1000,
        "track_table_2000_cpu_ms": statistics.median(track_cpu) * 1000,
        "schema_rebuild_2001_s": statistics.median(rebuilds),
    }


def latest_rss() -> tuple[float | None, str | None]:
    """Peak RSS per svc process (MB) from the newest full load result (else the newest
    quick one), and its file name."""
    runs = sorted(
        (p for p in RESULTS.glob("*.json") if not p.name.startswith("translate")),
        key=lambda p: ("quick" not in p.name, p.stat().st_mtime),  # full runs first
    )
    if not runs:
        return None, None
    memory = json.loads(runs[-1].read_text()).get("svc_memory", {})
    return memory.get("peak_process_mb"), runs[-1].name


async def settle(eng: Engine) -> None:
    """Let Postgres finish the load's background work (a checkpoint flushes its WAL) before
    timing: on a 2-core machine a busy neighbour slows this process's CPU time too."""
    async with eng.db.pool.acquire() as conn:
        await conn.execute("CHECKPOINT")
    await asyncio.sleep(2)


async def measure(repeat: int) -> dict[str, Any]:
    """Everything, on a private Postgres."""
    queries = read_queries(SVC_QUERIES)
    with postgres() as admin_url:
        url = await create_database(admin_url, "chinook")
        async with engine(url) as eng:
            say("loading and tracking Chinook")
            await load_chinook(eng)
            await settle(eng)
            say("cold compile")
            cold = cold_compile(eng, queries, repeat)
            say("warm overhead")
            warm, answer_bytes = await warm_overhead(eng, queries, max(5, repeat // 10))
        sizes = await schema_and_tracking(admin_url, repeat)
    return {"cold_us": cold, "warm_us": warm, "answer_bytes": answer_bytes, **sizes}


def report(result: dict[str, Any]) -> list[Target]:
    """Print the tables; the targets."""
    cold, warm = result["cold_us"], result["warm_us"]
    headers = ["query (µs)", "parse", "validate", "plan", "sql", "compile", "1st", "warm app"]
    headers += ["warm svc", "answer kB"]
    rows = [
        [name]
        + [f"{c[k]:.0f}" for k in ("parse", "validate", "plan", "sql", "compile", "first")]
        + [f"{warm[name]['app']:.1f}", f"{warm[name]['service']:.1f}"]
        + [f"{result['answer_bytes'][name] / 1000:.1f}"]
        for name, c in cold.items()
    ]
    print()
    print(table(headers, rows))
    print(
        f"\nschema build, 1,000 tables: {result['schema_build_1000_s']:.3f} s "
        f"(+ graphql-core validation {result['schema_validate_1000_s']:.3f} s)"
        f"\ntrack_table with 2,000 tables tracked: {result['track_table_2000_ms']:.0f} ms wall, "
        f"{result['track_table_2000_cpu_ms']:.0f} ms CPU in svc "
        f"(then the first request rebuilds the schema: {result['schema_rebuild_2001_s']:.2f} s)"
    )
    rss, source = result["svc_peak_rss_mb"], result["rss_source"]
    shown = f"{rss:.1f} MB (from {source})" if rss else "not measured (run python -m bench)"
    print(f"peak RSS per svc process under load: {shown}")
    small = [w["app"] for q, w in warm.items() if result["answer_bytes"][q] < SMALL_ANSWER]
    return [
        at_most("warm overhead, worst query, µs", max(w["app"] for w in warm.values()), WARM_US),
        at_most("warm overhead, answers under 10 kB, µs", max(small, default=None), WARM_US),
        at_most(
            "cold compile, three-level query, ms",
            max(cold[q]["compile"] for q in THREE_LEVEL if q in cold) / 1000,
            COLD_MS,
        ),
        at_most(
            "schema build + validation, 1,000 tables, s",
            result["schema_build_1000_s"] + result["schema_validate_1000_s"],
            SCHEMA_S,
        ),
        at_most("track_table with 2,000 tracked, ms", result["track_table_2000_ms"], TRACK_MS),
        at_most("peak RSS per svc process, MB", rss, RSS_MB),
    ]


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m bench.translate", description=__doc__)
    parser.add_argument("--repeat", type=int, default=200, help="timed calls per figure")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    repeat = 20 if args.quick else args.repeat
    result = asyncio.run(measure(repeat))
    result["svc_peak_rss_mb"], result["rss_source"] = latest_rss()
    targets = report(result)
    print_targets(targets)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"translate-{today()}{'-quick' if args.quick else ''}.json"
    result["targets"] = targets_json(targets)
    path.write_text(json.dumps(result, indent=2) + "\n")
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
