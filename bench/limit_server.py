"""The "limit" server: the least a Python server can do to answer the benchmark queries.

A Granian app on the uvloop event loop, on the RSGI interface (`limit`) or the ASGI one
(`limit_asgi`, `--interface asgi`: the same work behind ASGI's message dicts, so the bench
table separates the interface's own cost from svc's). Each request body is looked
up verbatim among the benchmark requests; its statement (the exact SQL svc generated, with
svc's arguments) runs as an asyncpg prepared statement on a connection of this worker, and
the JSON bytes Postgres produced are wrapped as svc wraps them: `{"data":{"alias":…}}`.
No parsing, validation, planning or JSON decoding happens per request.

Run: `python -m bench.limit_server SPEC.json --port P --workers N [--interface asgi]`,
where the spec is `{"database_url", "pool_size", "routes": [{"body", "sql", "args", "aliases"}]}`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from dataclasses import dataclass
from typing import Any

import asyncpg

JSON_HEADERS = [("content-type", "application/json; charset=utf-8")]


@dataclass(frozen=True)
class Route:
    """One benchmark request: its statement's index, arguments and answer prefixes."""

    index: int
    args: tuple[Any, ...]
    keys: tuple[bytes, ...]  # `"alias":` per result column


async def _json_as_bytes(conn: asyncpg.Connection) -> None:
    """json and jsonb columns arrive as the bytes Postgres sent (binary format: json is its
    text, jsonb is a version byte and its text)."""
    await conn.set_type_codec(
        "json", encoder=bytes, decoder=bytes, schema="pg_catalog", format="binary"
    )
    await conn.set_type_codec(
        "jsonb",
        encoder=lambda v: b"\x01" + v,
        decoder=lambda v: bytes(v[1:]),
        schema="pg_catalog",
        format="binary",
    )


class LimitApp:
    """The RSGI application; connects on the first request of each worker."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.url: str = spec["database_url"]
        self.pool_size: int = spec["pool_size"]
        self.sqls: list[str] = [r["sql"] for r in spec["routes"]]
        self.routes = {
            r["body"].encode(): Route(
                i, tuple(r["args"]), tuple(f'"{a}":'.encode() for a in r["aliases"])
            )
            for i, r in enumerate(spec["routes"])
        }
        self.idle: asyncio.Queue[list[asyncpg.PreparedStatement]] | None = None
        self.lock = asyncio.Lock()

    async def _connect(self) -> asyncio.Queue[list[asyncpg.PreparedStatement]]:
        """`pool_size` connections, each with every statement prepared."""
        async with self.lock:
            if self.idle is None:
                idle: asyncio.Queue[list[asyncpg.PreparedStatement]] = asyncio.Queue()
                for _ in range(self.pool_size):
                    conn = await asyncpg.connect(
                        self.url, server_settings={"timezone": "UTC", "application_name": "limit"}
                    )
                    await _json_as_bytes(conn)
                    idle.put_nowait([await conn.prepare(sql) for sql in self.sqls])
                self.idle = idle
            return self.idle

    async def answer(self, body: bytes) -> tuple[int, bytes]:
        """(status, body) for one request body: the route's statement on an idle
        connection, its JSON columns wrapped as `{"data":{…}}`; 404 for an unknown body."""
        route = self.routes.get(body)
        if route is None:
            return 404, b'{"error":"not a benchmark request"}'
        idle = self.idle or await self._connect()
        statements = await idle.get()
        try:
            row = await statements[route.index].fetchrow(*route.args)
        finally:
            idle.put_nowait(statements)
        values = zip(route.keys, row, strict=True)
        parts = [k + (v if v is not None else b"null") for k, v in values]
        return 200, b'{"data":{' + b",".join(parts) + b"}}"

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        """Answer one HTTP request (RSGI)."""
        if scope.path == "/healthz":
            proto.response_bytes(200, [("content-type", "text/plain")], b"OK")
            return
        status, payload = await self.answer(await proto())
        proto.response_bytes(status, JSON_HEADERS, payload)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Answer one HTTP request (ASGI: the body's messages read to the end, the answer
        sent as a start and a body message, as any ASGI app must)."""
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        status, payload = await self.answer(b"".join(chunks))
        await send({"type": "http.response.start", "status": status, "headers": ASGI_HEADERS})
        await send({"type": "http.response.body", "body": payload})


ASGI_HEADERS = [(k.encode(), v.encode()) for k, v in JSON_HEADERS]


def create_app() -> LimitApp:
    """The factory each Granian worker calls: the spec file named by `BENCH_LIMIT_SPEC`."""
    with open(os.environ["BENCH_LIMIT_SPEC"]) as f:
        return LimitApp(json.load(f))


def main() -> None:
    """Serve the limit app with Granian (RSGI or ASGI, uvloop)."""
    from granian import Granian
    from granian.constants import Interfaces, Loops

    parser = argparse.ArgumentParser(prog="python -m bench.limit_server")
    parser.add_argument("spec", help="JSON file: database_url, pool_size, routes")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--interface", choices=("rsgi", "asgi"), default="rsgi")
    args = parser.parse_args()
    os.environ["BENCH_LIMIT_SPEC"] = os.path.abspath(args.spec)
    Granian(
        "bench.limit_server:create_app",
        address="127.0.0.1",
        port=args.port,
        interface=Interfaces.ASGI if args.interface == "asgi" else Interfaces.RSGI,
        loop=Loops.uvloop,
        workers=args.workers,
        factory=True,
        log_access=False,
    ).serve()


if __name__ == "__main__":
    main()
