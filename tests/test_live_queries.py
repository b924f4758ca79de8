"""Live queries through `Engine.subscribe` in process, on a real Postgres (issue 13): the
first result at once, a change pushed once, nothing when unchanged, permissions per
session, cohorts shared and batched, errors at start, stop releasing the cohort, and an
outage pushing an error and then the result again."""

from __future__ import annotations

import asyncio
import json
import math
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from svc.api.engine import Engine
from svc.config import Config
from svc.embedded import EmbeddedPostgres
from svc.errors import SvcError, TransportError
from tests.support import create_database, free_port, server_with

SQL = """
create table item (id serial primary key, owner text not null, name text not null);
insert into item (owner, name) values ('a', 'one'), ('b', 'two'), ('a', 'three');
create function my_items(hasura_session json) returns setof item language sql stable as
  $$ select * from item where owner = hasura_session ->> 'x-svc-user-id' $$;
"""
STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "item"},
    {
        "type": "track_function",
        "version": 2,
        "args": {"function": "my_items", "configuration": {"session_argument": "hasura_session"}},
    },
    {
        "type": "create_select_permission",
        "args": {
            "table": "item",
            "role": "user",
            "permission": {
                "columns": ["id", "name"],
                "filter": {"owner": "X-Svc-User-Id"},
                "allow_aggregations": True,
            },
        },
    },
]
ITEMS = "subscription { item(order_by: {id: asc}) { name } }"
INTERVAL_MS = 100


def user(name: str) -> dict[str, str]:
    return {"x-svc-role": "user", "x-svc-user-id": name}


class Inbox:
    """What one subscriber was pushed, decoded."""

    def __init__(self) -> None:
        self.got: list[Any] = []
        self.arrived = asyncio.Event()

    async def push(self, body: bytes) -> None:
        self.got.append(json.loads(body))
        self.arrived.set()

    async def next(self, timeout: float = 5.0) -> Any:
        """Wait for a push beyond those already read (by `next`)."""
        seen = getattr(self, "_read", 0)
        while len(self.got) <= seen:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), timeout)
        self._read = seen + 1
        return self.got[seen]


@asynccontextmanager
async def engine(url: str, **options: Any) -> AsyncIterator[Engine]:
    options.setdefault("live_queries_refetch_interval", INTERVAL_MS)
    eng = await Engine.start(Config(database_url=url, log_requests=False, **options))
    try:
        await eng.metadata({"type": "bulk", "args": STEPS}, "admin")
        yield eng
    finally:
        await eng.close()


async def sql(eng: Engine, text: str) -> None:
    await eng.metadata({"type": "run_sql", "args": {"sql": text}}, "admin")


def names(body: Any, field: str = "item") -> list[str]:
    assert "data" in body, body
    return [row["name"] for row in body["data"][field]]


def count_statements(eng: Engine) -> list[str]:
    """Record every multiplexed statement the engine's pollers run from now on."""
    seen: list[str] = []
    real = eng.db.query_json

    async def counted(sql: str, args: list[Any], columns: int, timeout: Any = None) -> Any:
        if "_subs" in sql:
            seen.append(sql)
        return await real(sql, args, columns, timeout)

    eng.db.query_json = counted  # type: ignore[method-assign]
    return seen


def test_first_result_then_each_change_once(new_database: Callable[[], str]) -> None:
    asyncio.run(_first_result_then_each_change_once(new_database()))


async def _first_result_then_each_change_once(url: str) -> None:
    async with engine(url) as eng:
        inbox = Inbox()
        handle = await eng.subscribe({"query": ITEMS}, "admin", {}, inbox.push)
        assert names(await inbox.next(1.0)) == ["one", "two", "three"]  # before any interval
        await asyncio.sleep(5 * INTERVAL_MS / 1000)
        assert len(inbox.got) == 1  # unchanged: nothing more
        await sql(eng, "insert into item (owner, name) values ('b', 'four')")
        assert names(await inbox.next()) == ["one", "two", "three", "four"]
        await sql(eng, "update item set owner = owner")  # rows rewritten, result equal
        await asyncio.sleep(5 * INTERVAL_MS / 1000)
        assert len(inbox.got) == 2
        assert not handle.done.is_set()  # a subscription ends only by stop()
        await handle.stop()


def test_sessions_see_only_their_rows(new_database: Callable[[], str]) -> None:
    asyncio.run(_sessions_see_only_their_rows(new_database()))


async def _sessions_see_only_their_rows(url: str) -> None:
    async with engine(url) as eng:
        a, b = Inbox(), Inbox()
        ha = await eng.subscribe({"query": ITEMS}, "user", user("a"), a.push)
        hb = await eng.subscribe({"query": ITEMS}, "user", user("b"), b.push)
        assert names(await a.next()) == ["one", "three"]
        assert names(await b.next()) == ["two"]
        assert eng.live.counts() == (1, 2, 2)  # one statement, two cohorts
        await sql(eng, "insert into item (owner, name) values ('b', 'five')")
        assert names(await b.next()) == ["two", "five"]
        await asyncio.sleep(3 * INTERVAL_MS / 1000)
        assert len(a.got) == 1  # a's rows did not change
        for h in (ha, hb):
            await h.stop()


def test_aggregate_by_pk_and_session_function(new_database: Callable[[], str]) -> None:
    asyncio.run(_aggregate_by_pk_and_session_function(new_database()))


async def _aggregate_by_pk_and_session_function(url: str) -> None:
    async with engine(url) as eng:
        agg, pk, mine = Inbox(), Inbox(), Inbox()
        q_agg = "subscription { item_aggregate { aggregate { count } } }"
        q_pk = "subscription ($id: Int!) { item_by_pk(id: $id) { name } }"
        q_fn = "subscription { my_items(order_by: {id: asc}) { name } }"
        handles = [
            await eng.subscribe({"query": q_agg}, "user", user("a"), agg.push),
            await eng.subscribe({"query": q_pk, "variables": {"id": 2}}, "admin", {}, pk.push),
            await eng.subscribe({"query": q_fn}, "user", user("a"), mine.push),
        ]
        assert (await agg.next())["data"]["item_aggregate"]["aggregate"]["count"] == 2
        assert (await pk.next())["data"]["item_by_pk"] == {"name": "two"}
        assert names(await mine.next(), "my_items") == ["one", "three"]
        await sql(eng, "update item set name = 'deux' where id = 2")
        assert (await pk.next())["data"]["item_by_pk"] == {"name": "deux"}
        await sql(eng, "insert into item (owner, name) values ('a', 'six')")
        assert (await agg.next())["data"]["item_aggregate"]["aggregate"]["count"] == 3
        assert names(await mine.next(), "my_items") == ["one", "three", "six"]
        for h in handles:
            await h.stop()


def test_cohorts_shared_and_batched(new_database: Callable[[], str]) -> None:
    asyncio.run(_cohorts_shared_and_batched(new_database()))


async def _cohorts_shared_and_batched(url: str) -> None:
    """40 subscribers, 10% distinct variables: 4 cohorts, each fetched by one statement
    per batch of 3: ceil(4 / 3) = 2 statements per interval."""
    async with engine(url, live_queries_batch_size=3) as eng:
        query = "subscription ($o: String!) { item(where: {owner: {_eq: $o}}) { id } }"
        inboxes = [Inbox() for _ in range(40)]
        handles = []
        for i, inbox in enumerate(inboxes):
            raw = {"query": query, "variables": {"o": f"owner{i % 4}"}}
            handles.append(await eng.subscribe(raw, "admin", {}, inbox.push))
        for inbox in inboxes:
            assert (await inbox.next())["data"] == {"item": []}
        assert eng.live.counts() == (1, 4, 40)
        seen = count_statements(eng)
        intervals = 5
        await asyncio.sleep(intervals * INTERVAL_MS / 1000 + 0.05)
        per_interval = math.ceil(4 / 3)
        assert per_interval * (intervals - 1) <= len(seen) <= per_interval * (intervals + 1)
        await sql(eng, "insert into item (owner, name) values ('owner1', 'x')")
        for i, inbox in enumerate(inboxes):
            if i % 4 == 1:
                assert len((await inbox.next())["data"]["item"]) == 1
        await asyncio.sleep(2 * INTERVAL_MS / 1000)
        assert all(len(inbox.got) == (2 if i % 4 == 1 else 1) for i, inbox in enumerate(inboxes))
        for h in handles:
            await h.stop()
        assert eng.live.counts() == (0, 0, 0)


def test_list_variables_reach_postgres_intact(new_database: Callable[[], str]) -> None:
    asyncio.run(_list_variables(new_database()))


async def _list_variables(url: str) -> None:
    async with engine(url) as eng:
        await sql(
            eng,
            """insert into item (owner, name) values ('c', 'a b'), ('c', 'NULL'),
                          ('c', 'q"'), ('c', 'x\\y'), ('c', '{z}')""",
        )
        query = "subscription ($n: [String!]!) { item(where: {name: {_in: $n}}) { name } }"
        wanted = ["a b", "NULL", 'q"', "x\\y", "{z}", "one"]
        inbox = Inbox()
        handle = await eng.subscribe(
            {"query": query, "variables": {"n": wanted}}, "admin", {}, inbox.push
        )
        assert sorted(names(await inbox.next())) == sorted(wanted)
        await handle.stop()


def test_errors_before_start(new_database: Callable[[], str]) -> None:
    asyncio.run(_errors_before_start(new_database()))


async def _errors_before_start(url: str) -> None:
    async with engine(url) as eng:
        inbox = Inbox()
        cases = [
            ({"query": ITEMS}, "user", {"x-svc-role": "user"}, "not-found"),
            ({"query": "subscription { item { id } b: item { id } }"}, "admin", {}, None),
            ({"query": "subscription { nope }"}, "admin", {}, "validation-failed"),
            ({"variables": {}}, "admin", {}, "parse-failed"),
        ]
        for raw, role, session, code in cases:
            with pytest.raises(SvcError) as caught:
                await eng.subscribe(raw, role, session, inbox.push)
            if code is None:
                assert caught.value.message == "subscriptions must select one top level field"
            else:
                assert caught.value.code == code, caught.value
        assert inbox.got == [] and eng.live.counts() == (0, 0, 0)
        multiple = "subscription @_multiple_top_level_fields { a: item { id } b: item { id } }"
        handle = await eng.subscribe({"query": multiple}, "admin", {}, inbox.push)
        body = await inbox.next()
        assert len(body["data"]["a"]) == len(body["data"]["b"]) == 3
        await handle.stop()


def test_query_and_mutation_answer_once(new_database: Callable[[], str]) -> None:
    asyncio.run(_query_and_mutation_answer_once(new_database()))


async def _query_and_mutation_answer_once(url: str) -> None:
    async with engine(url) as eng:
        inbox = Inbox()
        one = "{ item_by_pk(id: 1) { name } }"
        q = await eng.subscribe({"query": one}, "admin", {}, inbox.push)
        assert q.done.is_set() and (await inbox.next())["data"] == {"item_by_pk": {"name": "one"}}
        m = "mutation { delete_item(where: {id: {_eq: 3}}) { affected_rows } }"
        h = await eng.subscribe({"query": m}, "admin", {}, inbox.push)
        assert h.done.is_set()
        assert (await inbox.next())["data"] == {"delete_item": {"affected_rows": 1}}
        assert eng.live.counts() == (0, 0, 0)


def test_stop_ends_pushes_and_releases(new_database: Callable[[], str]) -> None:
    asyncio.run(_stop_ends_pushes_and_releases(new_database()))


async def _stop_ends_pushes_and_releases(url: str) -> None:
    async with engine(url) as eng:
        a, b = Inbox(), Inbox()
        ha = await eng.subscribe({"query": ITEMS}, "admin", {}, a.push)
        hb = await eng.subscribe({"query": ITEMS}, "admin", {}, b.push)
        await a.next()
        await b.next()
        assert eng.live.counts() == (1, 1, 2)
        await ha.stop()
        await ha.stop()  # idempotent
        assert eng.live.counts() == (1, 1, 1)
        await sql(eng, "insert into item (owner, name) values ('a', 'seven')")
        assert "seven" in names(await b.next())
        await asyncio.sleep(3 * INTERVAL_MS / 1000)
        assert len(a.got) == 1
        await hb.stop()
        assert eng.live.counts() == (0, 0, 0)
        assert [t for t in asyncio.all_tasks() if "LiveQuery" in repr(t.get_coro())] == []


def test_subscription_over_http_is_refused(new_database: Callable[[], str]) -> None:
    asyncio.run(_subscription_over_http_is_refused(new_database()))


async def _subscription_over_http_is_refused(url: str) -> None:
    async with engine(url) as eng:
        with pytest.raises(TransportError) as info:  # the server answers it with HTTP 400
            await eng.graphql({"query": ITEMS}, "admin", {})
        assert (info.value.status, info.value.code) == (400, "unexpected-payload")
        assert info.value.message == (
            "subscriptions are not supported over HTTP, use websockets instead"
        )


def test_postgres_outage_pushes_an_error_then_resumes() -> None:
    """Postgres stops: the subscriber gets one error; back: the result, and changes again."""
    pg = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="svc-live-pg-")) / "data", free_port())
    try:
        asyncio.run(_outage(pg, create_database(pg.start())))
    finally:
        pg.destroy()


async def _outage(pg: EmbeddedPostgres, url: str) -> None:
    if True:
        async with engine(url, statement_timeout=5.0) as eng:
            inbox = Inbox()
            handle = await eng.subscribe({"query": ITEMS}, "admin", {}, inbox.push)
            assert len(names(await inbox.next())) == 3
            await asyncio.to_thread(pg.stop)
            error = await inbox.next(15.0)
            assert error["errors"][0]["extensions"]["code"] == "postgres-error", error
            await asyncio.sleep(3 * INTERVAL_MS / 1000)
            assert len(inbox.got) == 2  # the same error is not pushed again
            await asyncio.to_thread(pg.start)
            assert len(names(await inbox.next(15.0))) == 3
            await sql(eng, "insert into item (owner, name) values ('a', 'eight')")
            assert len(names(await inbox.next(15.0))) == 4
            await handle.stop()


def test_subscription_over_post_answers_400(pg_url: str) -> None:
    """A subscription POSTed to a GraphQL endpoint is HTTP 400 `unexpected-payload` (issue
    13; the message is Hasura's runGQ's), on both interfaces; a query on the same server is
    still 200."""
    refused = {
        "errors": [
            {
                "extensions": {"path": "$", "code": "unexpected-payload"},
                "message": "subscriptions are not supported over HTTP, use websockets instead",
            }
        ]
    }
    for interface in ("rsgi", "asgi"):
        with server_with(pg_url, STEPS, "--server-interface", interface) as server:
            for path in ("/v1/graphql", "/v1alpha1/graphql"):
                r = server.client.post(path, json={"query": ITEMS})
                assert (r.status_code, r.json()) == (400, refused), (interface, path)
            query = ITEMS.replace("subscription", "query")
            r = server.client.post("/v1/graphql", json={"query": query})
            assert r.status_code == 200 and len(names(r.json())) == 3
            # In a batch each item is answered on its own, as Hasura's batches are.
            r = server.client.post("/v1/graphql", json=[{"query": ITEMS}])
            assert (r.status_code, r.json()) == (200, [refused])


def test_options_reported_by_config(pg_url: str) -> None:
    """`--live-queries-multiplexed-*` reach `/v1alpha1/config` (refetch_delay in seconds,
    as the reference reports its default: 1)."""
    args = ("--live-queries-multiplexed-refetch-interval", "250")
    env = {"SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_BATCH_SIZE": "7"}
    with server_with(pg_url, STEPS, *args, env=env) as server:
        live = server.client.get("/v1alpha1/config").json()["live_queries"]
        assert live == {"batch_size": 7, "refetch_delay": 0.25}
    with server_with(pg_url, STEPS) as server:
        live = server.client.get("/v1alpha1/config").json()["live_queries"]
        assert live == {"batch_size": 100, "refetch_delay": 1}
