"""What both benchmark commands share: paths, progress lines, a private Postgres, loading
and tracking Chinook through svc's own metadata API (in-process `Engine`), and the
benchmark queries."""

from __future__ import annotations

import contextlib
import datetime
import re
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
from graphql import OperationDefinitionNode, parse

from svc.api.engine import Engine
from svc.api.graphql import decode_request
from svc.config import Config
from svc.embedded import EmbeddedPostgres
from svc.execute.params import resolve

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CHINOOK = SHARED / "data" / "chinook" / "chinook_pg_serial_pk_proper_naming.sql"
SVC_QUERIES = SHARED / "bench" / "queries" / "svc.graphql"
POSTGRAPHILE_QUERIES = SHARED / "bench" / "queries" / "postgraphile-v4.graphql"
RESULTS = Path(__file__).resolve().parent / "results"
CACHE = Path(__file__).resolve().parent / ".cache"

# (table, relationship, kind, remote table of an array relationship, foreign-key column):
# the relationships the header of svc.graphql asks for, all on foreign keys.
RELATIONSHIPS = [
    ("albums", "artist", "object", None, "artist_id"),
    ("albums", "tracks", "array", "tracks", "album_id"),
    ("artists", "albums", "array", "albums", "artist_id"),
    ("tracks", "album", "object", None, "album_id"),
    ("tracks", "genre", "object", None, "genre_id"),
    ("tracks", "media_type", "object", None, "media_type_id"),
    ("genres", "tracks", "array", "tracks", "genre_id"),
    ("media_types", "tracks", "array", "tracks", "media_type_id"),
]

_STARTED = time.monotonic()


def say(message: str) -> None:
    """One progress line on stderr, with the seconds since start, flushed."""
    print(f"[{time.monotonic() - _STARTED:7.1f}s] {message}", file=sys.stderr, flush=True)


def today() -> str:
    """The date that names result files (`YYYY-MM-DD`)."""
    return datetime.date.today().isoformat()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def require(path: Path, what: str) -> Path:
    """`path`, or exit with a message naming what is missing."""
    if not path.exists():
        sys.exit(f"bench: {what} not found at {path} (expected beside the project, in ../shared)")
    return path


def read_queries(path: Path) -> dict[str, str]:
    """`{operation name: document text}`: each operation of `path` as its own document,
    sliced verbatim from the file."""
    text = require(path, "benchmark queries").read_text()
    out: dict[str, str] = {}
    for node in parse(text).definitions:
        if isinstance(node, OperationDefinitionNode) and node.name and node.loc:
            out[node.name.value] = text[node.loc.start : node.loc.end]
    return out


def header_relationships(path: Path) -> set[str]:
    """`table.relationship` names listed in the comment header of svc.graphql."""
    header = "".join(line for line in path.read_text().splitlines() if line.startswith("#"))
    return set(re.findall(r"\b(\w+\.\w+)\b", header.split("relationships", 1)[-1]))


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A throwaway Postgres cluster for the run; yields its superuser URL."""
    pg = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="svc-bench-pg-")) / "data", log=say)
    url = pg.start()
    try:
        yield url
    finally:
        pg.destroy()


async def create_database(admin_url: str, prefix: str) -> str:
    """A new empty database on the cluster of `admin_url`; returns its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return admin_url.rpartition("/")[0] + "/" + name


@contextlib.asynccontextmanager
async def engine(url: str) -> AsyncIterator[Engine]:
    """svc's engine, in this process, on database `url`."""
    eng = await Engine.start(Config(database_url=url, log_requests=False))
    try:
        yield eng
    finally:
        await eng.close()


async def metadata(eng: Engine, body: dict[str, Any]) -> Any:
    """Run one metadata operation; exit with its error if it fails."""
    try:
        return await eng.metadata(body, "admin")
    except Exception as exc:
        sys.exit(f"bench: metadata operation {body['type']} failed: {exc}")


def _relationship_step(table: str, name: str, kind: str, remote: str | None, column: str) -> Any:
    on: Any = column if kind == "object" else {"table": remote, "column": column}
    return {
        "type": f"create_{kind}_relationship",
        "args": {"table": table, "name": name, "using": {"foreign_key_constraint_on": on}},
    }


async def load_chinook(eng: Engine) -> None:
    """Load Chinook with `run_sql` and `ANALYZE` it, then track every public table and the
    relationships of svc.graphql's header in one `bulk`."""
    require(CHINOOK, "the Chinook dump")
    wanted = header_relationships(require(SVC_QUERIES, "svc.graphql"))
    ours = {f"{t}.{n}" for t, n, *_ in RELATIONSHIPS}
    if wanted != ours:
        sys.exit(f"bench: svc.graphql asks for relationships {sorted(wanted)}, not {sorted(ours)}")
    await metadata(eng, {"type": "run_sql", "args": {"sql": CHINOOK.read_text()}})
    # Planner statistics, as a database in use has them (autovacuum would gather them
    # within a minute, possibly in the middle of a run).
    await metadata(eng, {"type": "run_sql", "args": {"sql": "ANALYZE"}})
    catalog = eng.state.catalog
    tables = sorted(t.name for t in catalog.tables if t.schema == "public" and t.kind in "rp")
    steps = [{"type": "track_table", "args": {"schema": "public", "name": t}} for t in tables]
    steps += [_relationship_step(*r) for r in RELATIONSHIPS]
    await metadata(eng, {"type": "bulk", "args": steps})


@dataclass(frozen=True)
class Compiled:
    """What svc runs for one benchmark query: the statement, its arguments, root aliases."""

    name: str
    document: str
    sql: str
    args: list[Any]
    aliases: list[str]


def compile_query(eng: Engine, name: str, document: str) -> Compiled:
    """svc's statement for `document` as admin, with its arguments resolved."""
    req = decode_request({"query": document})
    _, compiled, variables = eng.graphql_service.compile(eng.state, "admin", req)
    args = resolve(compiled.statement.params, variables, {})
    return Compiled(name, document, compiled.statement.sql, args, list(compiled.aliases))
