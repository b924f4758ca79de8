"""Streaming subscriptions `x_stream` (issue 13) on a real Postgres: in process through
`Engine.subscribe` (batches after the cursor, then only new rows, DESC, permissions,
`batch_size` bounds, cohorts, explain = the poller's statement) and over real websockets
with Python `gql` against `svc serve`."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from gql import Client, gql
from gql.transport.exceptions import TransportConnectionFailed
from graphql import (
    GraphQLInputObjectType,
    GraphQLNonNull,
    get_introspection_query,
    get_named_type,
    graphql_sync,
    print_schema,
    validate_schema,
)

from svc.api.engine import Engine
from svc.config import Config
from svc.embedded import EmbeddedPostgres
from svc.errors import SvcError
from svc.schema.build import SchemaBuilder, build_schema
from svc.schema.stream import streaming_enabled
from svc.schema.types import CheckedTypes
from tests.support import ServerProcess, create_database, free_port
from tests.test_schema_build import _assert_same, _unvalidated
from tests.test_websocket import Transport, ws_url

FEATURE = {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "streaming_subscriptions"}
INTERVAL_MS = 100
SQL = """
create table item (id serial primary key, owner text not null, name text not null);
insert into item (owner, name) values ('a', 'i1'), ('b', 'i2'), ('a', 'i3'), ('a', 'i4'),
  ('b', 'i5');
"""
STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "item"},
    {
        "type": "create_select_permission",
        "args": {
            "table": "item",
            "role": "user",
            "permission": {"columns": ["id", "name"], "filter": {"owner": "X-Svc-User-Id"}},
        },
    },
    {
        "type": "create_select_permission",
        "args": {
            "table": "item",
            "role": "capped",
            "permission": {"columns": ["id", "name"], "filter": {}, "limit": 1},
        },
    },
]
STREAM = (
    "subscription ($size: Int!, $from: Int!) { s: item_stream(batch_size: $size, "
    "cursor: {initial_value: {id: $from}}) { id name } }"
)


def user(name: str) -> dict[str, str]:
    return {"x-svc-role": "user", "x-svc-user-id": name}


class Inbox:
    """What one subscriber was pushed, decoded, in order."""

    def __init__(self) -> None:
        self.got: list[Any] = []
        self.arrived = asyncio.Event()
        self.read = 0

    async def push(self, body: bytes) -> None:
        self.got.append(json.loads(body))
        self.arrived.set()

    async def next(self, timeout: float = 5.0) -> Any:
        while len(self.got) <= self.read:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), timeout)
        self.read += 1
        return self.got[self.read - 1]

    async def ids(self, field: str = "s") -> list[int]:
        body = await self.next()
        assert "data" in body, body
        return [row["id"] for row in body["data"][field]]

    async def silent(self, intervals: int = 4) -> None:
        await asyncio.sleep(intervals * INTERVAL_MS / 1000)
        assert len(self.got) == self.read, self.got[self.read :]


@asynccontextmanager
async def engine(url: str, setup: bool = True, **options: Any) -> AsyncIterator[Engine]:
    config = Config(
        database_url=url,
        log_requests=False,
        streaming_queries_refetch_interval=INTERVAL_MS,
        statement_timeout=5.0,
        **options,
    )
    eng = await Engine.start(config)
    try:
        if setup:
            await eng.metadata({"type": "bulk", "args": STEPS}, "admin")
        yield eng
    finally:
        await eng.close()


async def insert(eng: Engine, owner: str, *names: str) -> None:
    values = ", ".join(f"('{owner}', '{n}')" for n in names)
    await eng.metadata(
        {"type": "run_sql", "args": {"sql": f"insert into item (owner, name) values {values}"}},
        "admin",
    )


def run(coro: Callable[[str], Any], url: str) -> None:
    asyncio.run(coro(url))


@pytest.fixture
def streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    """The experimental feature on, as the conformance environment sets it."""
    for k, v in FEATURE.items():
        monkeypatch.setenv(k, v)


def test_feature_flag_parsing() -> None:
    """Streaming fields are on by default since Hasura v2.11.0 (CHANGELOG: "server: enable
    streaming subscriptions by default"); `streaming_subscriptions` is accepted and changes
    nothing; `hide_stream_fields` (any case, among others) hides them (Hasura
    `server/src-lib/Hasura/GraphQL/Schema.hs`, `soIncludeStreamFields`)."""
    assert streaming_enabled({})
    assert streaming_enabled({"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "a, streaming_subscriptions"})
    assert streaming_enabled({"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "hide_stream"})
    assert not streaming_enabled({"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "x, Hide_Stream_Fields "})
    assert not streaming_enabled(
        {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "streaming_subscriptions,hide_stream_fields"}
    )


def test_schema_without_the_feature(
    new_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run(lambda url: _schema_without_the_feature(url, monkeypatch), new_database())


async def _schema_without_the_feature(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `SVC_GRAPHQL_EXPERIMENTAL_FEATURES` the role gets `item_stream`;
    `hide_stream_fields` takes it (and its types) away; `streaming_subscriptions` shows
    the same schema as no variable."""
    monkeypatch.setenv("SVC_GRAPHQL_EXPERIMENTAL_FEATURES", "hide_stream_fields")
    async with engine(url) as eng:
        plain = eng.state.schema("user")
        assert plain.subscription_type is not None
        assert "item_stream" not in plain.subscription_type.fields
        assert "item" in plain.subscription_type.fields
        assert plain.get_type("cursor_ordering") is None
    monkeypatch.delenv("SVC_GRAPHQL_EXPERIMENTAL_FEATURES")
    async with engine(url, setup=False) as eng:
        default = print_schema(eng.state.schema("user"))
    monkeypatch.setenv(*next(iter(FEATURE.items())))
    async with engine(url, setup=False) as eng:
        schema = eng.state.schema("user")
        assert print_schema(schema) == default
        assert schema.subscription_type is not None and schema.query_type is not None
        assert "item_stream" not in schema.query_type.fields  # subscriptions only
        field = schema.subscription_type.fields["item_stream"]
        assert set(field.args) == {"batch_size", "cursor", "where"}
        assert str(field.args["batch_size"].type) == "Int!"
        assert str(field.args["cursor"].type) == "[item_stream_cursor_input]!"
        assert str(field.type) == "[item!]!"
        cursor = schema.get_type("item_stream_cursor_input")
        assert isinstance(cursor, GraphQLInputObjectType)
        assert isinstance(cursor.fields["initial_value"].type, GraphQLNonNull)
        assert str(cursor.fields["ordering"].type) == "cursor_ordering"
        value = get_named_type(cursor.fields["initial_value"].type)
        assert isinstance(value, GraphQLInputObjectType)
        assert set(value.fields) == {"id", "name"}  # the role's columns, not owner
        assert set(eng.state.schema("admin").get_type("item_stream_cursor_value_input").fields) == {  # type: ignore[union-attr]
            "id",
            "owner",
            "name",
        }
        ordering = schema.get_type("cursor_ordering")
        assert set(ordering.values) == {"ASC", "DESC"}  # type: ignore[union-attr]


def test_streaming_schema_is_valid_and_checked(new_database: Callable[[], str]) -> None:
    run(_streaming_schema_is_valid_and_checked, new_database())


async def _streaming_schema_is_valid_and_checked(url: str) -> None:
    """The fast type construction equals graphql-core's own with `x_stream` too, graphql-core
    finds the schema valid, and the introspection query runs on it."""
    async with engine(url) as eng:
        clash = "create table item_stream (id int primary key)"
        await eng.metadata(
            {
                "type": "bulk",
                "args": [
                    {"type": "run_sql", "args": {"sql": clash}},
                    {"type": "track_table", "args": "item_stream"},
                ],
            },
            "admin",
        )
        ir = eng.state.ir
        admin = build_schema(ir, "admin", streaming=True).subscription_type
        assert admin is not None  # the table item_stream keeps its field; it streams too
        assert admin.fields["item_stream"].extensions["svc"].kind == "select"
        assert admin.fields["item_stream_stream"].extensions["svc"].kind == "select_stream"
        custom = {"custom_root_fields": {"select_stream": "feed"}}
        await eng.metadata(
            {
                "type": "set_table_customization",
                "args": {"table": "item", "configuration": custom},
            },
            "admin",
        )
        ir = eng.state.ir
        roots = build_schema(ir, "user", streaming=True).subscription_type
        assert roots is not None and "item_stream" not in roots.fields
        assert roots.fields["feed"].extensions["svc"].kind == "select_stream"
        for role in ("admin", "user", "capped"):
            fast = build_schema(ir, role, streaming=True)
            assert validate_schema(_unvalidated(fast)) == []
            checked = SchemaBuilder(ir, role, types=CheckedTypes(), streaming=True).build()
            assert print_schema(fast) == print_schema(checked)
            for name, named in fast.type_map.items():
                _assert_same(named, checked.type_map[name], name)
            assert "item_stream" in print_schema(fast)
            result = graphql_sync(fast, get_introspection_query())
            assert result.errors is None


def test_batches_then_only_new_rows(new_database: Callable[[], str], streaming: None) -> None:
    run(_batches_then_only_new_rows, new_database())


async def _batches_then_only_new_rows(url: str) -> None:
    async with engine(url) as eng:
        inbox = Inbox()
        raw = {"query": STREAM, "variables": {"size": 2, "from": 0}}
        handle = await eng.subscribe(raw, "admin", {}, inbox.push)
        assert await inbox.ids() == [1, 2]
        assert await inbox.ids() == [3, 4]
        assert await inbox.ids() == [5]
        await inbox.silent()  # no rows after the cursor: nothing sent
        await insert(eng, "a", "i6", "i7", "i8")
        assert await inbox.ids() == [6, 7]
        assert await inbox.ids() == [8]
        await inbox.silent()
        await handle.stop()
        await insert(eng, "a", "i9")
        await inbox.silent()  # stopped: nothing more
        assert eng.live.counts() == (0, 0, 0)


def test_desc_and_where(new_database: Callable[[], str], streaming: None) -> None:
    run(_desc_and_where, new_database())


async def _desc_and_where(url: str) -> None:
    async with engine(url) as eng:
        inbox = Inbox()
        q = (
            "subscription { s: item_stream(batch_size: 2, cursor: [{initial_value: {id: 100}, "
            'ordering: DESC}], where: {name: {_neq: "i3"}}) { id } }'
        )
        handle = await eng.subscribe({"query": q}, "admin", {}, inbox.push)
        assert await inbox.ids() == [5, 4]
        assert await inbox.ids() == [2, 1]  # i3 filtered out
        await insert(eng, "a", "i6")  # id 6 is above the cursor: never sent descending
        await inbox.silent()
        await handle.stop()
        whole = Inbox()  # the whole cursor as a variable (the enum's value DESC)
        q = (
            "subscription ($c: [item_stream_cursor_input]!) "
            "{ s: item_stream(batch_size: 4, cursor: $c) { id } }"
        )
        cursor = [{"initial_value": {"id": 3}, "ordering": "DESC"}]
        handle = await eng.subscribe(
            {"query": q, "variables": {"c": cursor}}, "admin", {}, whole.push
        )
        assert await whole.ids() == [2, 1]
        await handle.stop()


@pytest.mark.parametrize("mode", ["off", "triggers"])
def test_slow_client_gets_every_batch_in_order(
    new_database: Callable[[], str], streaming: None, mode: str
) -> None:
    run(lambda url: _slow_client_gets_every_batch_in_order(url, mode), new_database())


async def _slow_client_gets_every_batch_in_order(url: str, mode: str) -> None:
    """Batches are queued, never replaced; a client 4 batches behind pauses its cohort.
    With skip-idle on, rows a batch left behind (and a paused cohort's) are still
    fetched without any further write."""
    async with engine(url, live_queries_skip_idle=mode) as eng:
        await insert(eng, "b", *(f"n{i}" for i in range(10)))  # ids 6..15
        got: list[int] = []
        backlogs: list[int] = []
        done = asyncio.Event()
        handle_box: list[Any] = []

        async def slow_push(body: bytes) -> None:
            await asyncio.sleep(0.25)  # 2.5 poll intervals per message
            got.extend(row["id"] for row in json.loads(body)["data"]["s"])
            backlogs.append(handle_box[0].backlog)
            if len(got) >= 15:
                done.set()

        raw = {"query": STREAM, "variables": {"size": 1, "from": 0}}
        handle = await eng.subscribe(raw, "admin", {}, slow_push)
        handle_box.append(handle)
        await asyncio.wait_for(done.wait(), 20)
        assert got == list(range(1, 16))  # none lost, none twice, in order
        assert max(backlogs) <= 4  # the poll waits for the socket
        await handle.stop()


def test_permissions(new_database: Callable[[], str], streaming: None) -> None:
    run(_permissions, new_database())


async def _permissions(url: str) -> None:
    async with engine(url) as eng:
        a, b, capped = Inbox(), Inbox(), Inbox()
        raw = {"query": STREAM, "variables": {"size": 10, "from": 0}}
        handles = [
            await eng.subscribe(raw, "user", user("a"), a.push),
            await eng.subscribe(raw, "user", user("b"), b.push),
            await eng.subscribe(raw, "capped", {"x-svc-role": "capped"}, capped.push),
        ]
        assert await a.ids() == [1, 3, 4]
        assert await b.ids() == [2, 5]
        assert await capped.ids() == [1]  # the permission's limit caps every batch
        assert await capped.ids() == [2]
        await insert(eng, "b", "i6")
        assert await b.ids() == [6]
        await a.silent()  # not a's row
        assert eng.live.counts()[1] >= 3  # one cohort per session value and position
        hidden = (
            "subscription { item_stream(batch_size: 1, "
            'cursor: {initial_value: {owner: "a"}}) { id } }'
        )
        with pytest.raises(SvcError) as err:  # owner is not the role's column
            await eng.subscribe({"query": hidden}, "user", user("a"), a.push)
        assert err.value.code == "validation-failed"
        with pytest.raises(SvcError) as err:
            await eng.subscribe(raw, "user", {"x-svc-role": "user"}, a.push)
        assert err.value.code == "not-found"  # the filter's session variable is missing
        for h in handles:
            await h.stop()


def test_batch_size_and_cursor_bounds(new_database: Callable[[], str], streaming: None) -> None:
    run(_batch_size_and_cursor_bounds, new_database())


async def _batch_size_and_cursor_bounds(url: str) -> None:
    async with engine(url) as eng:
        inbox = Inbox()

        async def refused(query: str, variables: Any = None) -> str:
            with pytest.raises(SvcError) as err:
                raw = {"query": query, "variables": variables or {}}
                await eng.subscribe(raw, "admin", {}, inbox.push)
            assert err.value.code == "validation-failed", err.value
            return err.value.message

        assert "negative" in await refused(STREAM, {"size": -1, "from": 0})
        literal = (
            "subscription { item_stream(batch_size: -2, cursor: {initial_value: {id: 0}}) { id } }"
        )
        assert "negative" in await refused(literal)
        two = (
            "subscription { item_stream(batch_size: 1, "
            'cursor: {initial_value: {id: 0, name: "x"}}) { id } }'
        )
        assert await refused(two) == "one streaming column field is expected"
        none = "subscription { item_stream(batch_size: 1, cursor: []) { id } }"
        assert await refused(none) == "one streaming column field is expected"
        missing = "subscription { item_stream(cursor: {initial_value: {id: 0}}) { id } }"
        await refused(missing)  # batch_size is required
        both = (
            "subscription @_multiple_top_level_fields { item_stream(batch_size: 1, "
            "cursor: {initial_value: {id: 0}}) { id } item { id } }"
        )
        assert "streaming" in await refused(both)
        zero = await eng.subscribe(
            {"query": STREAM, "variables": {"size": 0, "from": 0}}, "admin", {}, inbox.push
        )
        await inbox.silent()  # batch_size 0: never a row
        await zero.stop()
        big = Inbox()
        handle = await eng.subscribe(
            {"query": STREAM, "variables": {"size": 1000, "from": 2}}, "admin", {}, big.push
        )
        assert await big.ids() == [3, 4, 5]  # strictly after the initial value
        await handle.stop()


def test_cohorts_and_explain(new_database: Callable[[], str], streaming: None) -> None:
    run(_cohorts_and_explain, new_database())


async def _cohorts_and_explain(url: str) -> None:
    async with engine(url) as eng:
        seen: list[str] = []
        real = eng.db.query_json

        async def counted(sql: str, args: list[Any], columns: int, timeout: Any = None) -> Any:
            if "_subs" in sql:
                seen.append(sql)
            return await real(sql, args, columns, timeout)

        eng.db.query_json = counted  # type: ignore[method-assign]
        first, second, late = Inbox(), Inbox(), Inbox()
        raw = {"query": STREAM, "variables": {"size": 3, "from": 0}}
        h1 = await eng.subscribe(raw, "admin", {}, first.push)
        h2 = await eng.subscribe(raw, "admin", {}, second.push)
        assert await first.ids() == [1, 2, 3] and await second.ids() == [1, 2, 3]
        assert eng.live.counts() == (1, 1, 2)  # same position: one cohort
        assert await first.ids() == [4, 5]
        assert await second.ids() == [4, 5]
        h3 = await eng.subscribe(raw, "admin", {}, late.push)
        assert await late.ids() == [1, 2, 3]  # starts at its own initial value
        assert eng.live.counts() == (1, 2, 3)
        assert await late.ids() == [4, 5]
        await asyncio.sleep(3 * INTERVAL_MS / 1000)
        assert eng.live.counts() == (1, 1, 3)  # same position again: merged
        await insert(eng, "a", "i6")
        assert [await i.ids() for i in (first, second, late)] == [[6], [6], [6]]
        assert len(set(seen)) == 1  # every poll ran the one statement
        explained = await eng.explain(
            {"query": {"query": STREAM, "variables": {"size": 3, "from": 7}}, "user": {}}
        )
        assert explained["sql"] == seen[0]
        assert explained["variables"]["cursor"] == {"id": "7"}
        assert explained["variables"]["synthetic"] == ["3"]
        assert explained["plan"]
        for h in (h1, h2, h3):
            await h.stop()
        assert eng.live.counts() == (0, 0, 0)


def test_timestamp_cursor(new_database: Callable[[], str], streaming: None) -> None:
    run(_timestamp_cursor, new_database())


async def _timestamp_cursor(url: str) -> None:
    async with engine(url) as eng:
        await eng.metadata(
            {
                "type": "bulk",
                "args": [
                    {
                        "type": "run_sql",
                        "args": {
                            "sql": "create table log (id serial primary key, at timestamptz "
                            "not null, msg text); insert into log (at, msg) values "
                            "('2021-01-01T10:00:00Z', 'x'), ('2021-01-02T10:00:00Z', 'y')"
                        },
                    },
                    {"type": "track_table", "args": "log"},
                ],
            },
            "admin",
        )
        inbox = Inbox()
        q = (
            "subscription ($t: timestamptz!) { s: log_stream(batch_size: 1, "
            "cursor: [{initial_value: {at: $t}, ordering: ASC}]) { id msg } }"
        )
        raw = {"query": q, "variables": {"t": "2020-01-01"}}
        handle = await eng.subscribe(raw, "admin", {}, inbox.push)
        assert await inbox.ids() == [1]
        assert await inbox.ids() == [2]
        await inbox.silent()
        await handle.stop()


@pytest.mark.parametrize("interface", ["asgi", "rsgi"])
async def test_gql_client_over_websockets(pg_url: str, interface: str) -> None:
    """A real `svc serve` on each interface and gql's transport offering both protocols:
    under ASGI the first batch, then only the rows a mutation adds, then stop; RSGI
    refuses a websocket that asks for a sub-protocol with 501 (it cannot echo one; `svc
    serve`'s default interface is ASGI)."""
    url = await asyncio.to_thread(create_database, pg_url)
    server = await asyncio.to_thread(
        ServerProcess,
        url,
        "--server-interface",
        interface,
        env={**FEATURE, "SVC_GRAPHQL_STREAMING_QUERIES_MULTIPLEXED_REFETCH_INTERVAL": "200"},
    )
    try:
        r = server.query({"type": "bulk", "args": STEPS})
        assert r.status_code == 200, r.text
        if interface == "rsgi":
            with pytest.raises(TransportConnectionFailed) as failed:
                async with Client(transport=Transport(url=ws_url(server))):
                    pass
            assert "HTTP 501" in str(failed.value.__cause__)
            return
        async with Client(
            transport=Transport(url=ws_url(server)), fetch_schema_from_transport=False
        ) as session:
            request = gql(STREAM)
            request.variable_values = {"size": 3, "from": 1}
            sub = session.subscribe(request)
            got = await asyncio.wait_for(anext(sub), 10)
            assert [r["id"] for r in got["s"]] == [2, 3, 4]
            got = await asyncio.wait_for(anext(sub), 10)
            assert [r["id"] for r in got["s"]] == [5]
            added = await session.execute(
                gql(
                    'mutation { insert_item(objects: [{owner: "a", name: "n"}]) { affected_rows } }'
                )
            )
            assert added == {"insert_item": {"affected_rows": 1}}
            got = await asyncio.wait_for(anext(sub), 10)
            assert got == {"s": [{"id": 6, "name": "n"}]}
            await sub.aclose()
    finally:
        await asyncio.to_thread(server.stop)


def test_outages_push_an_error_and_the_stream_resumes_at_its_cursor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Postgres stops twice: each time one error is pushed; back, the stream goes on from
    the last row sent (nothing lost, nothing twice)."""
    monkeypatch.setenv(*next(iter(FEATURE.items())))
    pg = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="svc-stream-pg-")) / "data", free_port())
    try:
        asyncio.run(_outages(pg, create_database(pg.start())))
    finally:
        pg.destroy()


async def _outages(pg: EmbeddedPostgres, url: str) -> None:
    async with engine(url) as eng:
        inbox = Inbox()
        raw = {"query": STREAM, "variables": {"size": 5, "from": 0}}
        # Not admin: the error has no internal detail, so both outages push equal bodies.
        handle = await eng.subscribe(raw, "user", user("a"), inbox.push)
        assert await inbox.ids() == [1, 3, 4]
        for round_ in range(2):
            await asyncio.to_thread(pg.stop)
            error = await inbox.next(15.0)
            assert error["errors"][0]["extensions"]["code"] == "postgres-error", error
            await asyncio.to_thread(pg.start)
            await insert(eng, "a", f"r{round_}")
            assert await inbox.ids() == [6 + round_]
        await inbox.silent()
        await handle.stop()


@pytest.mark.parametrize("mode", ["off", "triggers"])
def test_idle_streams_with_skip_idle(
    new_database: Callable[[], str], streaming: None, mode: str
) -> None:
    run(lambda url: _idle_streams(url, mode), new_database())


async def _idle_streams(url: str, mode: str) -> None:
    """With `SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE=triggers` an idle stream runs no statement
    (off: one per interval), and a plain `INSERT` is still streamed."""
    async with engine(url, live_queries_skip_idle=mode) as eng:
        seen: list[str] = []
        real = eng.db.query_json

        async def counted(sql: str, args: list[Any], columns: int, timeout: Any = None) -> Any:
            if "_subs" in sql:
                seen.append(sql)
            return await real(sql, args, columns, timeout)

        eng.db.query_json = counted  # type: ignore[method-assign]
        inbox = Inbox()
        raw = {"query": STREAM, "variables": {"size": 10, "from": 0}}
        handle = await eng.subscribe(raw, "admin", {}, inbox.push)
        assert await inbox.ids() == [1, 2, 3, 4, 5]
        await asyncio.sleep(5 * INTERVAL_MS / 1000)  # the trigger is installed meanwhile
        before = len(seen)
        await inbox.silent(10)
        idle = len(seen) - before
        assert idle == 0 if mode == "triggers" else idle >= 5, (mode, idle)
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("insert into item (owner, name) values ('a', 'plain')")
        finally:
            await conn.close()
        assert await inbox.ids() == [6]
        await handle.stop()


def test_stream_settings(new_database: Callable[[], str], streaming: None) -> None:
    run(_stream_settings, new_database())


async def _stream_settings(url: str) -> None:
    """`--streaming-queries-multiplexed-*` set the streams' polling (live queries keep
    theirs): batch size 1 → one statement per cohort per poll."""
    env = {
        "SVC_GRAPHQL_STREAMING_QUERIES_MULTIPLEXED_REFETCH_INTERVAL": "250",
        "SVC_GRAPHQL_STREAMING_QUERIES_MULTIPLEXED_BATCH_SIZE": "7",
    }
    config = Config.from_env(env)
    assert (config.streaming_queries_refetch_interval, config.streaming_queries_batch_size) == (
        250,
        7,
    )
    assert (config.live_queries_refetch_interval, config.live_queries_batch_size) == (1000, 100)
    async with engine(url, streaming_queries_batch_size=1) as eng:
        seen: list[str] = []
        real = eng.db.query_json

        async def counted(sql: str, args: list[Any], columns: int, timeout: Any = None) -> Any:
            if "_subs" in sql:
                seen.append(sql)
            return await real(sql, args, columns, timeout)

        eng.db.query_json = counted  # type: ignore[method-assign]
        a, b = Inbox(), Inbox()
        raw = {"query": STREAM, "variables": {"size": 10, "from": 0}}
        handles = [
            await eng.subscribe(raw, "user", user("a"), a.push),
            await eng.subscribe(raw, "user", user("b"), b.push),
        ]
        assert await a.ids() == [1, 3, 4] and await b.ids() == [2, 5]
        before = len(seen)
        await asyncio.sleep(10 * INTERVAL_MS / 1000)
        polls = len(seen) - before
        assert 14 <= polls <= 22, polls  # two cohorts, one statement each, per interval
        for h in handles:
            await h.stop()
