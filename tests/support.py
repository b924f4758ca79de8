"""Test support: a throwaway Postgres, fresh databases, and svc servers as real processes."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def with_database(url: str, name: str) -> str:
    """`url` with its database name replaced by `name`."""
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


def create_database(admin_url: str, prefix: str = "t") -> str:
    """Create an empty database on the cluster of `admin_url`; returns its URL."""
    import asyncio

    import asyncpg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"

    async def go() -> None:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(go())
    return with_database(admin_url, name)


class ServerProcess:
    """`svc serve` in a subprocess on a free port, with svc's default worker count (the
    CPU count) unless `env` sets `SVC_GRAPHQL_SERVER_WORKERS` or `args` pass `--workers`."""

    latest_url: str | None = None  # the last server started (the actions fixture calls it)

    def __init__(self, database_url: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        ServerProcess.latest_url = self.url
        full_env = {
            **os.environ,
            "SVC_GRAPHQL_LOG_REQUESTS": "false",
            **(env or {}),
        }
        cmd = [
            sys.executable,
            "-m",
            "svc",
            "serve",
            "--database-url",
            database_url,
            "--server-host",
            "127.0.0.1",
            "--server-port",
            str(self.port),
            *args,
        ]
        self.log_path = Path(f"/tmp/svc-test-server-{self.port}.log")
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=full_env, stdout=self._log, stderr=subprocess.STDOUT
        )
        self.client = httpx.Client(base_url=self.url, timeout=60)
        # The readiness probe is an admin request: it carries the admin secret, if any.
        secret = args[args.index("--admin-secret") + 1] if "--admin-secret" in args else None
        secret = secret or full_env.get("SVC_GRAPHQL_ADMIN_SECRET")
        hasura = "--hasura-compat" in args or full_env.get("SVC_GRAPHQL_HASURA_COMPAT") == "true"
        header = "x-hasura-admin-secret" if hasura else "x-svc-admin-secret"
        self._probe_headers = {header: secret} if secret else {}
        self._wait()

    def _wait(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"svc exited early:\n{self.log_path.read_text()[-3000:]}")
            try:
                if self.client.get("/healthz").status_code == 200 and self._ready():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"svc did not start:\n{self.log_path.read_text()[-3000:]}")

    def _ready(self) -> bool:
        body = {"type": "export_metadata", "args": {}}
        r = self.client.post("/v1/query", json=body, headers=self._probe_headers)
        return r.status_code != 503  # 503: the engine is still starting

    def query(self, body: Any, **kw: Any) -> httpx.Response:
        """POST a `/v1/query` body."""
        return self.client.post("/v1/query", json=body, **kw)

    def graphql(self, query: str, variables: dict[str, Any] | None = None, **kw: Any) -> Any:
        """POST a GraphQL query; returns the decoded body."""
        body: dict[str, Any] = {"query": query}
        if variables is not None:
            body["variables"] = variables
        return self.client.post("/v1/graphql", json=body, **kw).json()

    def stop(self) -> None:
        """Terminate the server and wait for it."""
        self.client.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


@contextlib.contextmanager
def server_with(
    pg_url: str, steps: list[dict[str, Any]], *args: str, **kw: Any
) -> Iterator[ServerProcess]:
    """A server on a new database after the metadata `steps` ran (one `bulk`), stopped on
    exit; `args`/`kw` go to `ServerProcess`."""
    s = ServerProcess(create_database(pg_url), *args, **kw)
    try:
        r = s.query({"type": "bulk", "args": steps})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def author_article_steps() -> list[dict[str, Any]]:
    """`bulk` steps tracking `author` and `article` with `article.author` and
    `author.articles` (the fixture shape most tests use)."""
    fk = {"table": "article", "column": "author_id"}
    return [
        {"type": "track_table", "args": {"schema": "public", "name": "author"}},
        {"type": "track_table", "args": "article"},
        {
            "type": "create_object_relationship",
            "args": {
                "table": "article",
                "name": "author",
                "using": {"foreign_key_constraint_on": "author_id"},
            },
        },
        {
            "type": "create_array_relationship",
            "args": {
                "table": "author",
                "name": "articles",
                "using": {"foreign_key_constraint_on": fk},
            },
        },
    ]


def export_apply_export(
    srv: ServerProcess, tmp: Path, *export_args: str
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """`svc metadata export` of `srv` into `tmp/first`, `clear_metadata`, `svc metadata
    apply` of that directory, `svc metadata export` into `tmp/second` (the CLI in this
    process, `export_args` given to both exports); the files of both directories,
    `{relative path: bytes}`."""
    from svc.cli import main

    def cli(command: str, directory: Path) -> None:
        extra = list(export_args) if command == "export" else []
        code = main(["metadata", command, "--endpoint", srv.url, "--dir", str(directory), *extra])
        assert code == 0, f"svc metadata {command} exited {code}"

    def files(root: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    first, second = tmp / "first", tmp / "second"
    cli("export", first)
    cleared = srv.query({"type": "clear_metadata", "args": {}})
    assert cleared.status_code == 200, cleared.text
    cli("apply", first)
    cli("export", second)
    return files(first), files(second)


def active_statements(pg_url: str, database: str, needle: str) -> int:
    """How many backends of `database` are running a statement containing `needle` now
    (pg_stat_activity, this connection excluded)."""
    import asyncio

    import asyncpg

    async def go() -> int:
        conn = await asyncpg.connect(pg_url)
        try:
            count: int = await conn.fetchval(
                "select count(*) from pg_stat_activity where datname = $1 and state = 'active'"
                " and query like $2 and pid <> pg_backend_pid()",
                database,
                f"%{needle}%",
            )
            return count
        finally:
            await conn.close()

    return asyncio.run(go())
