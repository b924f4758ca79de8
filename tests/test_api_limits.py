"""API limits (issue 11): `set_api_limits` / `remove_api_limits` /
`set_graphql_schema_introspection_options`, their enforcement on `/v1/graphql`, the server
defaults, and large documents parsed off the event loop.

A refused request must cost no database round trip: each refusal is checked while another
connection holds `ACCESS EXCLUSIVE` locks on both tables, so a request that reached
Postgres would block instead of answering (`test_lock_blocks_queries` shows it does).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import pytest

from svc.metadata.directory import DirectoryError, metadata_from_files, metadata_to_files
from svc.metadata.model import metadata_from_obj
from tests.support import ServerProcess, create_database

SQL = """
create table author (id serial primary key, name text not null);
create table article (id serial primary key, title text not null,
                      author_id integer not null references author (id));
insert into author (name) values ('a'), ('b');
insert into article (title, author_id) values ('x', 1), ('y', 1), ('z', 2);
create view slow as select id, pg_sleep(1)::text as slept from author;
"""
FK = {"table": "article", "column": "author_id"}


def _select(table: str, role: str) -> dict[str, Any]:
    return {
        "type": "create_select_permission",
        "args": {
            "table": table,
            "role": role,
            "permission": {"columns": "*", "filter": {}},
        },
    }


STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "author"},
    {"type": "track_table", "args": "article"},
    {"type": "track_table", "args": "slow"},
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
        "args": {"table": "author", "name": "articles", "using": {"foreign_key_constraint_on": FK}},
    },
    *(_select(t, r) for t in ("author", "article", "slow") for r in ("user", "other", "guest")),
]

USER = {"x-svc-role": "user"}
OTHER = {"x-svc-role": "other"}


def cycle(depth: int) -> str:
    """`{ author { articles { author { … { id } } } } }` nested `depth` fields deep."""
    text = "id"
    for i in reversed(range(depth)):
        text = f"{'author' if i % 2 == 0 else 'articles'} {{ {text} }}"
    return "{ " + text + " }"


class Server:
    """A 2-worker server with its database URL (for locking its tables)."""

    def __init__(self, url: str, proc: ServerProcess) -> None:
        self.url = url
        self.proc = proc

    def gql(self, query: str | list[dict[str, Any]], headers: dict[str, str]) -> Any:
        """POST on a fresh connection (so requests spread over the workers)."""
        body: Any = {"query": query} if isinstance(query, str) else query
        r = httpx.post(f"{self.proc.url}/v1/graphql", json=body, headers=headers, timeout=60)
        assert r.status_code == 200, r.text
        return r.json()

    def meta(self, body: dict[str, Any]) -> httpx.Response:
        return self.proc.query(body)


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[Server]:
    url = create_database(pg_url)
    proc = ServerProcess(url, env={"SVC_GRAPHQL_SERVER_WORKERS": "2"})
    try:
        r = proc.query({"type": "bulk", "args": STEPS})
        assert r.status_code == 200, r.text
        yield Server(url, proc)
    finally:
        proc.stop()


@pytest.fixture(autouse=True)
def no_limits(server: Server) -> Iterator[None]:
    yield
    assert server.meta({"type": "remove_api_limits", "args": {}}).status_code == 200
    body = {"type": "set_graphql_schema_introspection_options", "args": {"disabled_for_roles": []}}
    assert server.meta(body).status_code == 200


class Locked:
    """Hold `ACCESS EXCLUSIVE` locks on author and article (in a thread) while inside."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._locked = threading.Event()
        self._release = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._hold()), daemon=True)

    async def _hold(self) -> None:
        conn = await asyncpg.connect(self.url)
        try:
            tx = conn.transaction()
            await tx.start()
            await conn.execute("lock table author, article in access exclusive mode")
            self._locked.set()
            while not self._release.is_set():
                await asyncio.sleep(0.05)
            await tx.rollback()
        finally:
            await conn.close()

    def __enter__(self) -> Locked:
        self._thread.start()
        assert self._locked.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._thread.join(10)


def refused(server: Server, query: Any, headers: dict[str, str], code: str) -> dict[str, Any]:
    """The error of a request refused with `code` within 2 s while the tables are locked.

    Every worker first serves the current metadata (ten requests on fresh connections
    reach both workers but for a 2^-9 chance): a worker that catches up on a metadata
    change introspects the database, which waits for the lock; the refusal itself must
    not."""
    for _ in range(10):
        server.gql("{ __typename }", {})
    with Locked(server.url):
        started = time.monotonic()
        body = server.gql(query, headers)
        assert time.monotonic() - started < 2
    assert "data" not in body, body
    error: dict[str, Any] = body["errors"][0]
    assert error["extensions"]["code"] == code, body
    return error


def set_limits(server: Server, args: dict[str, Any]) -> None:
    r = server.meta({"type": "set_api_limits", "args": args})
    assert r.status_code == 200, r.text
    assert r.json() == {"message": "success"}


def test_lock_blocks_queries(server: Server) -> None:
    """The control: while locked, an allowed query does not answer."""
    with Locked(server.url), pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{server.proc.url}/v1/graphql",
            json={"query": "{ author { id } }"},
            headers=USER,
            timeout=1.5,
        )


def test_cycle_shape() -> None:
    assert cycle(2) == "{ author { articles { id } } }"
    assert cycle(3) == "{ author { articles { author { id } } } }"


def test_depth_limit_global_and_per_role(server: Server) -> None:
    set_limits(server, {"depth_limit": {"global": 1, "per_role": {"user": 2}}})
    assert server.gql(cycle(2), USER)["data"]["author"][0]["articles"]
    error = refused(server, cycle(3), USER, "depth-limit-exceeded")
    assert "depth 3" in error["message"] and "limit 2" in error["message"]
    refused(server, cycle(2), OTHER, "depth-limit-exceeded")
    assert server.gql(cycle(1), OTHER)["data"]["author"]
    assert "data" in server.gql(cycle(5), {})  # admin: no API limits
    # fragments are expanded
    frag = "{ author { ...A } } fragment A on author { articles { author { id } } }"
    refused(server, frag, USER, "depth-limit-exceeded")
    # disabled: only the server defaults apply
    set_limits(server, {"disabled": True, "depth_limit": {"global": 1}})
    assert "data" in server.gql(cycle(3), USER)


def test_node_limit(server: Server) -> None:
    set_limits(server, {"node_limit": {"global": 2, "per_role": {"other": 1}}})
    two = "{ author { id } article { id } }"
    assert "data" in server.gql(two, USER)
    refused(server, "{ author { articles { id } } article { id } }", USER, "node-limit-exceeded")
    refused(server, two, OTHER, "node-limit-exceeded")
    # a fragment spread counts its fragment's nodes each time
    spread = "{ a: author { ...F } b: author { ...F } } fragment F on author { articles { id } }"
    refused(server, spread, USER, "node-limit-exceeded")


def test_batch_limit(server: Server) -> None:
    set_limits(server, {"batch_limit": {"global": 2}})
    op = {"query": "{ author { id } }"}
    answers = server.gql([op, op], USER)
    assert [len(a["data"]["author"]) > 0 for a in answers] == [True, True]
    refused(server, [op, op, op], USER, "batch-limit-exceeded")
    assert len(server.gql([op, op, op], {})) == 3  # admin


def test_rate_limit_per_session_variable_across_workers(server: Server) -> None:
    """3 per minute per user id, counted over both workers (a fresh connection per
    request); identical bodies (answered from their statement alone) count too."""
    rule = {"max_reqs_per_min": 3, "unique_params": ["x-svc-user-id"]}
    set_limits(
        server, {"rate_limit": {"global": {"max_reqs_per_min": 100}, "per_role": {"user": rule}}}
    )
    alice = {**USER, "x-svc-user-id": "alice"}
    results = [server.gql("{ author { id } }", alice) for _ in range(6)]
    assert ["data" in r for r in results] == [True] * 3 + [False] * 3
    assert results[3]["errors"][0]["extensions"]["code"] == "rate-limit-exceeded"
    refused(server, "{ author { id } }", alice, "rate-limit-exceeded")
    bob = {**USER, "x-svc-user-id": "bob"}
    assert "data" in server.gql("{ article { id } }", bob)
    assert all("data" in server.gql("{ author { id } }", {}) for _ in range(5))  # admin
    # per role without unique params: `other` shares the global 100 per minute
    assert all("data" in server.gql("{ author { id } }", OTHER) for _ in range(5))


def test_rate_limit_global_per_role(server: Server) -> None:
    """Counts are kept per role across limit changes, so this test uses its own role."""
    set_limits(server, {"rate_limit": {"global": {"max_reqs_per_min": 2}}})
    guest = {"x-svc-role": "guest"}
    results = [server.gql("{ author { id } }", guest) for _ in range(4)]
    assert ["data" in r for r in results] == [True, True, False, False]
    # each operation of a batch counts
    op = {"query": "{ author { id } }"}
    batch = server.gql([op, op], USER)
    assert ["data" in a for a in batch] == [True, True]
    assert server.gql("{ author { id } }", USER)["errors"][0]["extensions"]["code"] == (
        "rate-limit-exceeded"
    )


def test_time_limit_per_role(server: Server) -> None:
    """`time_limit` is the role's statement timeout: Postgres cancels the statement."""
    set_limits(server, {"time_limit": {"global": 30, "per_role": {"user": 0.3}}})
    started = time.monotonic()
    body = server.gql("{ slow { id } }", USER)
    assert time.monotonic() - started < 1.5
    assert body["errors"][0]["extensions"]["code"] == "postgres-error", body
    assert "statement timeout" in body["errors"][0]["message"]
    assert server.gql("{ slow(limit: 1) { id } }", OTHER) == {"data": {"slow": [{"id": 1}]}}
    assert "data" in server.gql("{ author { id } }", USER)  # the connection is healthy
    mutation = 'mutation { insert_author_one(object: {name: "c"}) { id } }'
    # mutations run under the same limit (quick ones pass)
    perm = {
        "type": "create_insert_permission",
        "args": {
            "table": "author",
            "role": "user",
            "permission": {"columns": ["name"], "check": {}},
        },
    }
    assert server.meta(perm).status_code == 200
    assert "data" in server.gql(mutation, USER)


def test_remove_api_limits_restores(server: Server) -> None:
    set_limits(server, {"depth_limit": {"global": 1}, "node_limit": {"global": 1}})
    refused(server, cycle(2), USER, "depth-limit-exceeded")
    assert server.meta({"type": "remove_api_limits", "args": {}}).json() == {"message": "success"}
    assert "data" in server.gql(cycle(2), USER)
    exported = server.meta({"type": "export_metadata", "args": {}}).json()
    assert "api_limits" not in exported


def test_introspection_disabled_per_role(server: Server) -> None:
    body = {
        "type": "set_graphql_schema_introspection_options",
        "args": {"disabled_for_roles": ["user"]},
    }
    assert server.meta(body).json() == {"message": "success"}
    for query in (
        "{ __schema { queryType { name } } }",
        '{ __type(name: "author") { name } }',
        "{ author { id } __schema { types { name } } }",
        "query { ...F } fragment F on query_root { __schema { queryType { name } } }",
    ):
        error = refused(server, query, USER, "access-denied")
        assert error["message"] == "Introspection disabled"
    assert server.gql("{ __typename }", USER) == {"data": {"__typename": "query_root"}}
    assert server.gql("{ __schema { queryType { name } } }", OTHER)["data"]
    assert server.gql("{ __schema { queryType { name } } }", {})["data"]
    exported = server.meta({"type": "export_metadata", "args": {}}).json()
    assert exported["graphql_schema_introspection"] == {"disabled_for_roles": ["user"]}


def test_default_depth_limit_refuses_the_cycle(server: Server) -> None:
    """Issue 11, finding 1: a relationship cycle 50 deep as `user`, body under 1 KB."""
    query = cycle(50)
    assert len(query) < 1024
    error = refused(server, query, USER, "depth-limit-exceeded")
    assert "depth 50" in error["message"] and "limit 20" in error["message"]
    assert "data" in server.gql(cycle(12), USER)
    # the standard introspection query's depth (12) is under the default
    assert "data" in server.gql(cycle(20), USER)
    refused(server, cycle(21), {}, "depth-limit-exceeded")  # the default binds admin too


def test_metadata_round_trip_and_bad_arguments(server: Server) -> None:
    limits = {
        "depth_limit": {"global": 9, "per_role": {"user": 7}},
        "node_limit": {"global": 50},
        "batch_limit": {"global": 4},
        "time_limit": {"global": 10, "per_role": {"user": 2.5}},
        "rate_limit": {
            "global": {"max_reqs_per_min": 100, "unique_params": "IP"},
            "per_role": {"user": {"max_reqs_per_min": 20, "unique_params": ["x-svc-user-id"]}},
        },
    }
    set_limits(server, limits)
    exported = server.meta({"type": "export_metadata", "args": {}}).json()
    assert exported["api_limits"] == limits
    before = server.meta({"type": "export_metadata", "args": {}}).json()
    bad = [
        ({"depth_limit": {"global": -1}}, "$.args.depth_limit.global"),
        ({"node_limit": {"per_role": {"user": 1}}}, "$.args.node_limit"),
        ({"time_limit": {"global": "soon"}}, "$.args.time_limit.global"),
        (
            {"rate_limit": {"global": {"max_reqs_per_min": 1, "unique_params": "host"}}},
            "$.args.rate_limit.global.unique_params",
        ),
        (
            {"rate_limit": {"global": {"max_reqs_per_min": 1, "unique_params": ["x-svc-role"]}}},
            "$.args.rate_limit.global.unique_params",
        ),
        ({"depth_limt": {"global": 1}}, "$.args"),
    ]
    for args, path in bad:
        r = server.meta({"type": "set_api_limits", "args": args})
        assert r.status_code == 400, r.text
        assert r.json()["code"] == "parse-failed" and r.json()["path"] == path, r.json()
    r = server.meta({"type": "set_graphql_schema_introspection_options", "args": {}})
    assert r.status_code == 400 and r.json()["code"] == "parse-failed", r.text
    assert server.meta({"type": "export_metadata", "args": {}}).json() == before
    # replace_metadata takes the exported document back as it is
    exported["graphql_schema_introspection"] = {"disabled_for_roles": ["other"]}
    r = server.meta({"type": "replace_metadata", "args": exported})
    assert r.status_code == 200, r.text
    again = server.meta({"type": "export_metadata", "args": {}}).json()
    assert again["api_limits"] == limits
    assert again["graphql_schema_introspection"] == {"disabled_for_roles": ["other"]}
    # a bad document is refused whole
    broken = {**exported, "api_limits": {"batch_limit": {"global": 1.5}}}
    r = server.meta({"type": "replace_metadata", "args": broken})
    assert r.status_code == 400 and r.json()["path"] == "$.args.api_limits.batch_limit.global"
    assert server.meta({"type": "export_metadata", "args": {}}).json() == again


def test_metadata_directory_files() -> None:
    """`api_limits.yaml` and `graphql_schema_introspection.yaml` round-trip; a bad value
    is reported with its file and path inside it."""
    doc = {
        "version": 2,
        "api_limits": {
            "depth_limit": {"global": 5, "per_role": {"user": 3}},
            "rate_limit": {"global": {"max_reqs_per_min": 10, "unique_params": "ip"}},
        },
        "graphql_schema_introspection": {"disabled_for_roles": ["user"]},
    }
    md = metadata_from_obj(doc)
    files = metadata_to_files(md)
    assert files["api_limits.yaml"] == (
        "depth_limit:\n  global: 5\n  per_role:\n    user: 3\n"
        "rate_limit:\n  global:\n    max_reqs_per_min: 10\n    unique_params: IP\n"
    )
    assert files["graphql_schema_introspection.yaml"] == "disabled_for_roles:\n  - user\n"
    assert metadata_from_files(files) == md
    with pytest.raises(DirectoryError) as err:
        metadata_from_files({"api_limits.yaml": "node_limit:\n  global: -2\n"})
    assert str(err.value) == "api_limits.yaml: $.node_limit.global: Expected `int` >= 0"


def test_large_document_parsed_off_the_event_loop(pg_url: str) -> None:
    """A 20 MB document (seconds of parsing) leaves `/healthz` answering in < 1 s on the
    same (single) worker."""
    proc = ServerProcess(create_database(pg_url), env={"SVC_GRAPHQL_SERVER_WORKERS": "1"})
    try:
        assert proc.query({"type": "bulk", "args": STEPS}).status_code == 200
        query = "#" + "x" * (20 * 1024 * 1024) + "\n{ author { id } }"
        result: dict[str, Any] = {}

        def post() -> None:
            r = httpx.post(f"{proc.url}/v1/graphql", json={"query": query}, timeout=300)
            result["body"] = r.json()

        worker = threading.Thread(target=post)
        worker.start()
        slowest, probes = 0.0, 0
        while worker.is_alive():
            started = time.monotonic()
            assert proc.client.get("/healthz", timeout=30).status_code == 200
            slowest = max(slowest, time.monotonic() - started)
            probes += 1
            time.sleep(0.1)
        worker.join()
        assert result["body"] == {"data": {"author": [{"id": 1}, {"id": 2}]}}
        assert probes >= 5, probes  # the document took a while
        assert slowest < 1, slowest
    finally:
        proc.stop()
