"""The plan cache is bounded in bytes (issue 11, finding 3): 60 anonymous requests, each
with a distinct 1 MB string literal, leave every worker's RSS under the cache bound +
100 MB, right after and when idle; and the cache itself evicts least recently used
entries, refuses entries larger than its share, and accounts plans added later."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from svc.api.state import ENTRY_BYTES, LARGEST_ENTRY, PlanCache, document_bytes, text_bytes
from tests.support import ServerProcess, create_database

MB = 1024 * 1024
CACHE_BYTES = 32 * MB
REQUESTS = 60
SECRET = "cache-secret"
SQL = """
create table article (id serial primary key, title text not null);
insert into article (title) select 'title ' || g from generate_series(1, 50) g;
"""
STEPS = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "article"},
    {
        "type": "create_select_permission",
        "args": {
            "table": "article",
            "role": "anonymous",
            "permission": {"columns": ["id", "title"], "filter": {"id": {"_lt": 10}}},
        },
    },
]


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Granian's workers of a `svc serve`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def rss(pid: int) -> int:
    """Resident set size of `pid` in bytes (`VmRSS` of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[ServerProcess]:
    env = {"SVC_GRAPHQL_SERVER_WORKERS": "2", "SVC_GRAPHQL_PLAN_CACHE_BYTES": str(CACHE_BYTES)}
    args = ("--admin-secret", SECRET, "--unauthorized-role", "anonymous")
    s = ServerProcess(create_database(pg_url), *args, env=env)
    try:
        r = s.query({"type": "bulk", "args": STEPS}, headers={"x-svc-admin-secret": SECRET})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def test_rss_stays_bounded_with_1mb_literals(server: ServerProcess) -> None:
    workers = children(server.proc.pid)
    assert len(workers) == 2, workers
    before = {pid: rss(pid) for pid in workers}
    started = time.monotonic()

    def send(i: int) -> int:
        literal = f"{i:06d}" + "x" * (MB - 6)
        query = '{ article(where: {title: {_eq: "' + literal + '"}}) { id } }'
        with httpx.Client(base_url=server.url, timeout=60) as client:
            r = client.post("/v1/graphql", json={"query": query})
        assert r.status_code == 200, r.text[:300]
        assert r.json() == {"data": {"article": []}}, r.text[:300]
        return i

    # 60 documents of >= 2 MB each (document_bytes) fill the 32 MB cache almost four times
    # over: enough to show eviction holds RSS, at 1/5 of the suite time 300 took.
    with ThreadPoolExecutor(4) as pool:
        assert len(list(pool.map(send, range(REQUESTS)))) == REQUESTS
    elapsed = time.monotonic() - started
    after = {pid: rss(pid) for pid in workers}
    time.sleep(2)
    idle = {pid: rss(pid) for pid in workers}
    print(
        f"{REQUESTS} x 1 MB in {elapsed:.1f} s; worker RSS MB before "
        f"{[b // MB for b in before.values()]}, after {[a // MB for a in after.values()]}, "
        f"idle {[a // MB for a in idle.values()]}"
    )
    for pid in workers:
        assert after[pid] < CACHE_BYTES + 100 * MB, (pid, after[pid] // MB)
        assert idle[pid] < CACHE_BYTES + 100 * MB, (pid, idle[pid] // MB)
    # A bound, not a speed test (bench/ measures speed): graphql-core lexes each 1 MB
    # document in pure Python; on 2 shared cores the 300 took 63 s before issue 23 and
    # 72 s after, under either interface (2026-11-27); 60 take 1/5 of that.
    assert elapsed < 40
    # The server still answers, cached or not.
    r = server.client.post("/v1/graphql", json={"query": "{ article(limit: 1) { id } }"})
    assert r.json() == {"data": {"article": [{"id": 1}]}}


def test_least_recently_used_is_evicted_first() -> None:
    cache = PlanCache(1000 * 8)
    for i in range(8):
        cache.put(i, f"v{i}", 1000)
    assert cache.used == 8000 and len(cache) == 8
    assert cache.get(0) == "v0"  # now the most recently used
    cache.put(8, "v8", 1000)
    assert 1 not in cache and 0 in cache and 8 in cache
    assert cache.used == 8000


def test_too_large_entries_are_not_kept_and_growth_is_accounted() -> None:
    cache = PlanCache(8000)
    cache.put("big", "x", 8000 // LARGEST_ENTRY + 1)
    assert "big" not in cache and cache.used == 0
    cache.put("doc", "d", 500)
    cache.grow("doc", 400)
    assert cache.used == 900
    cache.grow("doc", 200)  # past the share of one entry: dropped
    assert "doc" not in cache and cache.used == 0
    cache.grow("gone", 10)  # nothing to grow
    assert cache.used == 0


def test_estimates_cover_what_entries_hold() -> None:
    literal = "x" * MB
    assert document_bytes('{ a(b: "' + literal + '") { c } }') >= 2 * MB
    assert document_bytes("{ " + " ".join(f"a{i}: t {{ id }}" for i in range(100)) + " }") > (
        100 * 6 * 100
    )
    assert text_bytes(["1"] * 1000) > 1000 * 64
    assert ENTRY_BYTES > 0
