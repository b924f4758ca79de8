"""`uv run python -m bench.soak [--minutes 60] [--check]`: mixed load on the default `svc serve`.

One `svc serve` with its default worker count runs, for `--minutes`:

- queries: `--query-clients` clients asking `item` rows of a random group (half as role
  `user`, through its select permission);
- mutations: one client updating a random group's `val` (which pushes to subscribers) and
  inserting into `ev_src` (an insert event trigger) every `--mutation-pause` seconds;
- `--subscribers` live queries (Apollo `graphql-ws`, 10 per websocket);
- a cron trigger every second (`* * * * * *`, svc's six-field form), both webhooks a
  local asyncio server answering 204;
- a metadata change every `--metadata-every` seconds (a select permission of role `temp`
  created, then dropped).

Every `--sample-every` seconds it records, per worker process: resident memory (VmRSS),
open file descriptors and threads; the server's Postgres connections (`pg_stat_activity`)
and asyncio tasks (`svc_asyncio_tasks`, `/v1/metrics`). After the load it waits for the
queues to drain and checks that every event and every due cron event was delivered exactly
once (one 2xx invocation each).

Targets (issue 30): RSS growth per worker <= 5% after warm-up (the median of the last third
of the samples against the median of the first third after `--warmup` seconds); no growth
in tasks, connections or descriptors (the last third's median at most the first third's
maximum plus `SLACK`); every event delivered once. Results go to `bench/results/soak-<date>.json`;
`--check` exits 1 naming each target that fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx

from bench.common import RESULTS, ROOT, create_database, free_port, postgres, say, today
from bench.events import fast_hook
from bench.servers import Server, _spawn, status_kb, tree
from bench.subscriptions import Socket, Subscriber, open_socket

GROUPS = 100
SETUP_SQL = f"""
create table item (id serial primary key, grp int not null, val int not null);
insert into item (grp, val) select g % {GROUPS}, 0 from generate_series(0, {GROUPS * 10 - 1}) g;
create index on item (grp);
create table ev_src (id serial primary key, v text not null);
"""
QUERY = "query ($g: Int!) { item(where: {grp: {_eq: $g}}, limit: 10) { id val } }"
UPDATE = (
    "mutation ($g: Int!, $v: Int!) "
    "{ update_item(where: {grp: {_eq: $g}}, _set: {val: $v}) { affected_rows } }"
)
# Pools open connections lazily up to their bounds and close idle ones, so descriptors
# and connections move after warm-up without a leak: the outbound pool keeps a burst's
# connections to the webhook for 15 s (5-minute run: one worker's descriptors went
# 125 -> 138 -> 131 -> 134 with Postgres connections flat at 31). A leak grows past these
# over a long run.
SLACK = {"fds": 16, "threads": 0, "connections": 2, "tasks": 10}
INSERT = 'mutation { insert_ev_src_one(object: {v: "x"}) { id } }'


@dataclass
class Counts:
    """What the load sent, and what went wrong (first few error texts kept)."""

    queries: int = 0
    mutations: int = 0
    inserts: int = 0
    metadata_changes: int = 0
    errors: list[str] = field(default_factory=list)

    def error(self, text: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(text[:300])


def start(db_url: str) -> Server:
    """`svc serve` with its default worker count (no `--workers`), request log off."""
    port = free_port()
    cmd = [sys.executable, "-m", "svc", "serve", "--database-url", db_url]
    cmd += ["--server-host", "127.0.0.1", "--server-port", str(port)]
    server = _spawn("svc-soak", cmd, {"SVC_GRAPHQL_LOG_REQUESTS": "false"}, ROOT, "")
    server.url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(server.url + "/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(server.tail())


def setup(url: str, hook: str) -> None:
    """Tables, tracking, role `user`'s select permission, the event and cron triggers."""
    steps: list[dict[str, Any]] = [
        {"type": "run_sql", "args": {"sql": SETUP_SQL}},
        {"type": "pg_track_table", "args": {"table": "item"}},
        {"type": "pg_track_table", "args": {"table": "ev_src"}},
        {
            "type": "pg_create_select_permission",
            "args": {
                "table": "item",
                "role": "user",
                "permission": {"columns": ["id", "grp", "val"], "filter": {}},
            },
        },
        {
            "type": "pg_create_event_trigger",
            "args": {
                "name": "soak_ev",
                "table": "ev_src",
                "webhook": hook + "/event",
                "insert": {"columns": "*"},
            },
        },
        {
            "type": "create_cron_trigger",
            "args": {
                "name": "soak_tick",
                "webhook": hook + "/cron",
                "schedule": "* * * * * *",
                "include_in_metadata": True,
            },
        },
    ]
    for step in steps:
        endpoint = "/v2/query" if step["type"] == "run_sql" else "/v1/metadata"
        r = httpx.post(url + endpoint, json=step, timeout=60)
        if r.status_code != 200:
            raise RuntimeError(f"{step['type']}: {r.text}")


async def queries(client: httpx.AsyncClient, counts: Counts, stop: asyncio.Event) -> None:
    while not stop.is_set():
        headers = {"x-svc-role": "user"} if random.random() < 0.5 else {}
        body = {"query": QUERY, "variables": {"g": random.randrange(GROUPS)}}
        await _post(client, "/v1/graphql", body, headers, counts)
        counts.queries += 1


async def mutations(
    client: httpx.AsyncClient, counts: Counts, stop: asyncio.Event, pause: float
) -> None:
    while not stop.is_set():
        body = {
            "query": UPDATE,
            "variables": {"g": random.randrange(GROUPS), "v": counts.mutations},
        }
        await _post(client, "/v1/graphql", body, {}, counts)
        counts.mutations += 1
        if await _post(client, "/v1/graphql", {"query": INSERT}, {}, counts):
            counts.inserts += 1
        await asyncio.sleep(pause)


async def metadata_changes(
    client: httpx.AsyncClient, counts: Counts, stop: asyncio.Event, every: float
) -> None:
    permission = {"columns": ["id", "val"], "filter": {"grp": {"_lt": 50}}}
    create = {"table": "item", "role": "temp", "permission": permission}
    drop = {"table": "item", "role": "temp"}
    while not stop.is_set():
        with_it = counts.metadata_changes % 2 == 0
        kind = "pg_create_select_permission" if with_it else "pg_drop_select_permission"
        await _post(
            client, "/v1/metadata", {"type": kind, "args": create if with_it else drop}, {}, counts
        )
        counts.metadata_changes += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


async def _post(
    client: httpx.AsyncClient, path: str, body: Any, headers: dict[str, str], counts: Counts
) -> bool:
    try:
        r = await client.post(path, json=body, headers=headers)
    except httpx.HTTPError as exc:
        counts.error(f"{path}: {type(exc).__name__} {exc}")
        return False
    if r.status_code != 200 or b'"errors"' in r.content:
        counts.error(f"{path}: {r.status_code} {r.text}")
        return False
    return True


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _tasks(url: str) -> float | None:
    try:
        text = httpx.get(url + "/v1/metrics", timeout=10).text
    except httpx.HTTPError:
        return None
    for line in text.splitlines():
        if line.startswith("svc_asyncio_tasks"):
            return float(line.rsplit(" ", 1)[1])
    return None


async def sample(server: Server, db_url: str, started: float) -> dict[str, Any]:
    """One sample: per worker pid (the serve process's children) RSS MB, fds, threads;
    the database's connections; the workers' asyncio tasks."""
    workers = [p for p in tree(server.proc.pid) if p != server.proc.pid]
    conn = await asyncpg.connect(db_url)
    try:
        connections = await conn.fetchval(
            "select count(*) from pg_stat_activity where datname = current_database()"
            " and pid <> pg_backend_pid()"
        )
    finally:
        await conn.close()
    return {
        "t": round(time.monotonic() - started, 1),
        "rss_mb": {str(p): round(status_kb(p, "VmRSS") / 1024, 1) for p in workers},
        "fds": {str(p): _fds(p) for p in workers},
        "threads": {str(p): status_kb(p, "Threads") for p in workers},
        "connections": int(connections),
        "tasks": await asyncio.to_thread(_tasks, server.url),
    }


async def delivery_check(db_url: str, inserts: int, settle: float) -> dict[str, Any]:
    """Wait up to `settle` seconds for the queues to drain, then count what was not
    delivered exactly once."""
    conn = await asyncpg.connect(db_url)
    try:
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            pending = await conn.fetchval(
                "select count(*) from hdb_catalog.event_log where not delivered and not error"
            )
            if pending == 0:
                break
            await asyncio.sleep(1)
        events = await conn.fetchrow(
            "select count(*) as total, count(*) filter (where delivered) as delivered,"
            " count(*) filter (where error) as errored from hdb_catalog.event_log"
        )
        twice = await conn.fetchval(
            "select count(*) from (select event_id from hdb_catalog.event_invocation_logs"
            " where status between 200 and 299 group by event_id having count(*) > 1) d"
        )
        cron = await conn.fetchrow(
            "select count(*) filter (where status = 'delivered') as delivered,"
            " count(*) filter (where status <> 'delivered') as not_delivered"
            " from hdb_catalog.hdb_cron_events"
            " where scheduled_time < now() - interval '20 seconds'"
        )
        cron_twice = await conn.fetchval(
            "select count(*) from (select event_id"
            " from hdb_catalog.hdb_cron_event_invocation_logs"
            " where status between 200 and 299 group by event_id having count(*) > 1) d"
        )
    finally:
        await conn.close()
    return {
        "inserted": inserts,
        "events": dict(events),
        "events_delivered_twice": int(twice),
        "cron_due": dict(cron),
        "cron_delivered_twice": int(cron_twice),
    }


def _per_worker(samples: list[dict[str, Any]], key: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for s in samples:
        for pid, value in s[key].items():
            out.setdefault(pid, []).append(value)
    return out


def verdicts(samples: list[dict[str, Any]], delivery: dict[str, Any], warmup: float) -> list[str]:
    """The names of the targets that fail (module docstring), `[]` when all hold."""
    failed: list[str] = []
    steady = [s for s in samples if s["t"] >= warmup]
    if len(steady) < 6:
        return ["too few samples after warm-up (run longer)"]
    third = len(steady) // 3
    first, last = steady[:third], steady[-third:]
    for pid, values in _per_worker(steady, "rss_mb").items():
        if len(values) < len(steady):
            failed.append(f"worker {pid} was not alive the whole run (restarted?)")
            continue
        head, tail = statistics.median(values[:third]), statistics.median(values[-third:])
        if tail > head * 1.05:
            failed.append(f"RSS of worker {pid} grew {tail / head - 1:.1%} (> 5%)")
    for key in ("fds", "threads"):
        for pid, values in _per_worker(steady, key).items():
            grown = statistics.median(values[-third:]) - max(values[:third])
            if len(values) == len(steady) and grown > SLACK[key]:
                failed.append(f"{key} of worker {pid} grew by {grown:g} (> {SLACK[key]})")
    for key in ("connections", "tasks"):
        head_values = [s[key] for s in first if s[key] is not None]
        tail_values = [s[key] for s in last if s[key] is not None]
        if head_values and tail_values:
            grown = statistics.median(tail_values) - max(head_values)
            if grown > SLACK[key]:
                failed.append(f"{key} grew by {grown:g} (> {SLACK[key]})")
    events = delivery["events"]
    if events["total"] != delivery["inserted"] or events["delivered"] != events["total"]:
        failed.append(f"events not all delivered: {events} of {delivery['inserted']} inserted")
    if delivery["events_delivered_twice"]:
        failed.append(f"{delivery['events_delivered_twice']} events delivered twice")
    if delivery["cron_due"]["not_delivered"] or not delivery["cron_due"]["delivered"]:
        failed.append(f"cron events not delivered: {delivery['cron_due']}")
    if delivery["cron_delivered_twice"]:
        failed.append(f"{delivery['cron_delivered_twice']} cron events delivered twice")
    return failed


async def soak(args: argparse.Namespace, db_url: str, server: Server) -> dict[str, Any]:
    counts = Counts()
    stop = asyncio.Event()
    ws_url = server.url.replace("http://", "ws://") + "/v1/graphql"
    subs = [Subscriber(i % GROUPS) for i in range(args.subscribers)]
    sockets: list[Socket] = []
    for first in range(0, len(subs), 10):
        chunk = {str(i): subs[i] for i in range(first, min(len(subs), first + 10))}
        sockets.append(await open_socket(ws_url, chunk))
    readers = [asyncio.ensure_future(s.read()) for s in sockets]
    say(f"{len(subs)} subscribers on {len(sockets)} sockets")
    limits = httpx.Limits(max_connections=args.query_clients + 4)
    async with httpx.AsyncClient(base_url=server.url, timeout=60, limits=limits) as client:
        load = [
            asyncio.ensure_future(queries(client, counts, stop)) for _ in range(args.query_clients)
        ]
        load.append(asyncio.ensure_future(mutations(client, counts, stop, args.mutation_pause)))
        load.append(
            asyncio.ensure_future(metadata_changes(client, counts, stop, args.metadata_every))
        )
        started = time.monotonic()
        samples: list[dict[str, Any]] = []
        while time.monotonic() - started < args.minutes * 60:
            samples.append(await sample(server, db_url, started))
            last = samples[-1]
            say(
                f"t={last['t']:.0f}s rss={last['rss_mb']} fds={last['fds']} conns="
                f"{last['connections']} tasks={last['tasks']} q={counts.queries} "
                f"m={counts.mutations} errors={len(counts.errors)}"
            )
            await asyncio.sleep(args.sample_every)
        stop.set()
        await asyncio.gather(*load)
    await asyncio.gather(*(s.ws.close() for s in sockets))
    for r in readers:
        r.cancel()
    received = sum(1 for s in subs if s.val is not None)
    delivery = await delivery_check(db_url, counts.inserts, 120)
    return {
        "date": today(),
        "minutes": args.minutes,
        "workers": len([p for p in tree(server.proc.pid) if p != server.proc.pid]),
        "subscribers": len(subs),
        "subscribers_with_data": received,
        "queries": counts.queries,
        "mutations": counts.mutations,
        "inserts": counts.inserts,
        "metadata_changes": counts.metadata_changes,
        "errors": counts.errors,
        "delivery": delivery,
        "samples": samples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--query-clients", type=int, default=4)
    parser.add_argument("--mutation-pause", type=float, default=0.05, help="seconds")
    parser.add_argument("--metadata-every", type=float, default=60, help="seconds")
    parser.add_argument("--sample-every", type=float, default=10, help="seconds")
    parser.add_argument("--warmup", type=float, default=60, help="seconds")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    parser.add_argument("--output", help="result file (default bench/results/soak-<date>.json)")
    args = parser.parse_args(argv)
    with postgres() as admin, fast_hook() as hook_url:
        hook = hook_url.rsplit("/", 1)[0]
        db = asyncio.run(create_database(admin, "soak"))
        server = start(db)
        try:
            setup(server.url, hook)
            result = asyncio.run(soak(args, db, server))
        finally:
            server.stop()
    failed = verdicts(result["samples"], result["delivery"], args.warmup)
    if result["errors"]:
        failed.append(f"{len(result['errors'])}+ requests failed, first: {result['errors'][0]}")
    if result["subscribers_with_data"] < result["subscribers"]:
        failed.append(f"only {result['subscribers_with_data']} subscribers got data")
    result["failed"] = failed
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = args.output or str(RESULTS / f"soak-{today()}.json")
    with open(out, "w") as f:
        f.write(json.dumps(result, indent=2) + "\n")
    summary = {k: v for k, v in result.items() if k != "samples"}
    print(json.dumps(summary, indent=2))
    for line in failed:
        print(f"FAIL: {line}")
    print("PASS" if not failed else f"{len(failed)} target(s) failed")
    return 1 if failed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
