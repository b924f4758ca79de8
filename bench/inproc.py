"""svc's own cost per request, without sockets: `python -m bench.inproc [QUERY ...]`.

svc's ASGI app and the limit server's ASGI app (`bench.limit_server`) are called alike in
one process on one Chinook database (same request bytes, 10 concurrent callers, the body in
one message, `send` a no-op), alternating rounds of 3,000 requests; the figure is the
process's CPU (user + system) per request, median of 7 rounds, and the garbage collector's
time per request. Postgres runs in its own processes and is not counted. What remains above
the limit app is svc's own Python per request (the HTTP server's share, in Rust threads,
is left out for both).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.__main__ import SVC_QUERIES, body, prepare
from bench.common import Compiled, postgres, read_queries, say
from bench.limit_server import LimitApp

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
ROUNDS, REQUESTS, CALLERS = 7, 3000, 10


class GcClock:
    """Seconds the collector ran while installed (`gc.callbacks`)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start


async def _drive(app: App, scope: dict[str, Any], payload: bytes, n: int) -> None:
    message = {"type": "http.request", "body": payload, "more_body": False}

    async def receive() -> dict[str, Any]:
        return message

    async def send(_: dict[str, Any]) -> None:
        return None

    async def caller(k: int) -> None:
        for _ in range(k):
            await app(scope, receive, send)

    await asyncio.gather(*(caller(n // CALLERS) for _ in range(CALLERS)))


async def measure(url: str, c: Compiled) -> dict[str, float]:
    """CPU µs per request of svc and of the limit app, and GC µs per request of each."""
    from svc.config import Config
    from svc.server.app import App as SvcApp

    payload = body(c.document)
    route = {"body": payload.decode(), "sql": c.sql, "args": c.args, "aliases": c.aliases}
    limit = LimitApp({"database_url": url, "pool_size": 10, "routes": [route]})
    svc = SvcApp(Config(database_url=url, log_requests=False))
    await svc.startup()
    headers = [(b"host", b"bench"), (b"content-type", b"application/json")]
    scope = {"type": "http", "method": "POST", "path": "/v1/graphql", "raw_path": b"/v1/graphql"}
    scope |= {"query_string": b"", "headers": headers}
    apps: dict[str, App] = {"svc": svc, "limit": limit}
    cpu: dict[str, list[float]] = {name: [] for name in apps}
    gcs: dict[str, float] = dict.fromkeys(apps, 0.0)
    try:
        for app in apps.values():  # warm: statements prepared, plans cached, frozen
            await _drive(app, scope, payload, 2000)
        svc.freezer.tick()
        for _ in range(ROUNDS):
            for name, app in apps.items():
                clock = GcClock()
                gc.callbacks.append(clock)
                before = os.times()
                await _drive(app, scope, payload, REQUESTS)
                after = os.times()
                gc.callbacks.remove(clock)
                spent = (after.user - before.user) + (after.system - before.system)
                cpu[name].append(spent / REQUESTS * 1e6)
                gcs[name] += clock.seconds / REQUESTS / ROUNDS * 1e6
    finally:
        await svc.shutdown()
    figures = {f"{name}_cpu_us": statistics.median(v) for name, v in cpu.items()}
    return figures | {f"{name}_gc_us": v for name, v in gcs.items()}


async def run(admin_url: str, names: list[str]) -> None:
    queries = read_queries(SVC_QUERIES)
    url, compiled, _ = await prepare(admin_url, {n: queries[n] for n in names})
    print(f"{'query':26} {'svc µs':>8} {'limit µs':>9} {'svc/limit':>9} {'svc gc µs':>9}")
    for c in compiled:
        f = await measure(url, c)
        ratio = f["svc_cpu_us"] / f["limit_cpu_us"]
        print(
            f"{c.name:26} {f['svc_cpu_us']:8.1f} {f['limit_cpu_us']:9.1f} {ratio:9.2f}"
            f" {f['svc_gc_us']:9.2f}"
        )


def main(argv: list[str] | None = None) -> None:
    """Measure the named queries (default: artist_by_pk and albums_tracks_genre_some)."""
    import uvloop

    parser = argparse.ArgumentParser(prog="python -m bench.inproc")
    parser.add_argument("queries", nargs="*", default=["artist_by_pk", "albums_tracks_genre_some"])
    args = parser.parse_args(argv)
    say("CPU per request in one process: svc's ASGI app against the limit server's")
    with postgres() as admin_url:
        uvloop.run(run(admin_url, args.queries))


if __name__ == "__main__":
    main()
