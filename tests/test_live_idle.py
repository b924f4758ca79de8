"""Idle live queries cost nothing (issue 13 "Beyond the reference"; svc/api/live/watch.py):
with `SVC_GRAPHQL_LIVE_QUERIES_SKIP_IDLE` = `mutations` or `triggers`, a live query whose
tables saw no write since its last poll runs no statement, and a write svc hears of (its
own mutations from any engine on the database; with `triggers`, any writer) is still
pushed. In process (`Engine.subscribe`) on a real Postgres; statements are counted at the
engine's read path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import asyncpg
import pytest
import websockets

from svc.api.engine import Engine
from svc.api.live.watch import named_relations, parse_payload, time_relative
from svc.config import Config
from tests.conformance.runner import CORPUS, SERVER_ARGS, SKIP_REASON, load_yaml
from tests.conformance.test_ws_scenarios import ENV as SCENARIO_ENV
from tests.conformance.test_ws_scenarios import SCENARIO_DIR
from tests.support import ServerProcess, create_database, server_with
from tests.test_live_outage import next_data
from tests.test_live_queries import (
    INTERVAL_MS,
    ITEMS,
    STEPS,
    Inbox,
    count_statements,
    engine,
    names,
    sql,
)
from tests.ws_scenarios import run_scenario

IDLE_S = 10 * INTERVAL_MS / 1000  # ten intervals
INSERT = 'mutation { insert_item(objects: {owner: "a", name: "%s"}) { affected_rows } }'
AUDIT_SQL = """
create table audit (id serial primary key, what text not null);
create function audit_item() returns trigger language plpgsql as
  $$ begin insert into audit (what) values (new.name); return new; end $$;
create trigger audit_item after insert on item for each row execute function audit_item();
"""


async def mutate(eng: Engine, name: str) -> None:
    body = await eng.graphql({"query": INSERT % name}, "admin", {})
    assert json.loads(body) == {"data": {"insert_item": {"affected_rows": 1}}}, body


async def idle_statements(seen: list[str]) -> int:
    """Multiplexed statements run during ten intervals without writes."""
    before = len(seen)
    await asyncio.sleep(IDLE_S)
    return len(seen) - before


def test_off_polls_every_interval(new_database: Callable[[], str]) -> None:
    """The default keeps the reference's polling: about one statement per interval."""
    asyncio.run(_off(new_database()))


async def _off(url: str) -> None:
    async with engine(url) as eng:
        inbox = Inbox()
        handle = await eng.subscribe({"query": ITEMS}, "admin", {}, inbox.push)
        seen = count_statements(eng)
        await inbox.next()
        assert await idle_statements(seen) >= 3  # about 10; 0 when skipping
        await handle.stop()


def test_mutations_mode_skips_idle_and_hears_every_engine(
    new_database: Callable[[], str],
) -> None:
    """`mutations`: no statement while idle; a mutation of this engine, of another engine
    on the database, and a write a user trigger makes in another table are pushed."""
    asyncio.run(_mutations(new_database()))


async def _mutations(url: str) -> None:
    mode = {"live_queries_skip_idle": "mutations"}
    async with engine(url, **mode) as eng:
        other = await Engine.start(Config(database_url=url, log_requests=False, **mode))
        try:
            await _two_engines(eng, other)
        finally:
            await other.close()


async def _two_engines(eng: Engine, other: Engine) -> None:
    if True:
        await sql(eng, AUDIT_SQL)
        await eng.metadata({"type": "track_table", "args": "audit"}, "admin")
        items, audit = Inbox(), Inbox()
        h1 = await eng.subscribe({"query": ITEMS}, "admin", {}, items.push)
        h2 = await eng.subscribe(
            {"query": "subscription { audit { what } }"}, "admin", {}, audit.push
        )
        assert len(names(await items.next())) == 3
        assert (await audit.next())["data"]["audit"] == []
        seen = count_statements(eng)
        await asyncio.sleep(3 * INTERVAL_MS / 1000)  # the tables are looked up once
        assert await idle_statements(seen) == 0
        assert eng.live.skipped() >= 10
        await mutate(eng, "four")
        assert "four" in names(await items.next())
        assert (await audit.next())["data"]["audit"] == [{"what": "four"}]  # a trigger's write
        await mutate(other, "five")  # another instance's mutation
        assert "five" in names(await items.next())
        assert len((await audit.next())["data"]["audit"]) == 2
        assert await idle_statements(seen) <= 4  # the writes' polls, then idle again
        await h1.stop()
        await h2.stop()


def test_triggers_mode_hears_any_writer(new_database: Callable[[], str]) -> None:
    """`triggers`: svc installs `svc_live_notify` on the table read; a write by another
    client (run_sql, a plain connection) is pushed, and idle costs nothing. A write made
    while the listener's connection is down is pushed once it reconnects."""
    asyncio.run(_triggers(new_database()))


async def _triggers(url: str) -> None:
    async with engine(url, live_queries_skip_idle="triggers") as eng:
        inbox = Inbox()
        handle = await eng.subscribe({"query": ITEMS}, "admin", {}, inbox.push)
        assert len(names(await inbox.next())) == 3
        seen = count_statements(eng)
        await asyncio.sleep(3 * INTERVAL_MS / 1000)
        assert await idle_statements(seen) == 0
        conn = await asyncpg.connect(url)
        try:
            tg = "select count(*) from pg_trigger where tgname = 'svc_live_notify'"
            assert await conn.fetchval(tg) == 1
            await conn.execute("insert into item (owner, name) values ('b', 'six')")
            assert "six" in names(await inbox.next())
            await conn.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity "
                "where application_name = 'svc-listen' and datname = current_database()"
            )
            await conn.execute("delete from item where name = 'six'")
            assert "six" not in names(await inbox.next())
        finally:
            await conn.close()
        await asyncio.sleep(3 * INTERVAL_MS / 1000)
        assert await idle_statements(seen) == 0  # listening again: idle again
        await handle.stop()


def test_functions_keep_polling(new_database: Callable[[], str]) -> None:
    """A live query calling a function (here a tracked session-argument function) reads
    tables svc cannot name: it polls every interval even with `triggers`."""
    asyncio.run(_functions(new_database()))


async def _functions(url: str) -> None:
    async with engine(url, live_queries_skip_idle="triggers") as eng:
        inbox = Inbox()
        query = {"query": "subscription { my_items { name } }"}
        session = {"x-svc-role": "user", "x-svc-user-id": "a"}
        handle = await eng.subscribe(query, "user", session, inbox.push)
        assert names(await inbox.next(), "my_items") == ["one", "three"]
        seen = count_statements(eng)
        assert await idle_statements(seen) >= 3  # about 10; 0 when skipping
        await handle.stop()


@pytest.mark.parametrize(
    ("sql_text", "expected"),
    [
        (
            'SELECT 1 FROM "public"."item" AS "_t1" WHERE "_t1"."a""b" = 1',
            {("public", "item"), ("_t1", 'a"b')},
        ),
        ('SELECT "s"."f"("_t1") FROM "s"."t" AS "_t1"', None),
        ("SELECT 1", set()),
    ],
)
def test_named_relations(sql_text: str, expected: set[tuple[str, str]] | None) -> None:
    """Every quoted pair is a candidate relation; a qualified call makes the reads unknown."""
    assert named_relations(sql_text) == (None if expected is None else frozenset(expected))


def test_payloads_and_clock_words() -> None:
    """Notification payloads: pairs, or anything (None) for `"*"` and foreign payloads;
    variables naming a time-relative date read the clock."""
    assert parse_payload('[["public","item"],["s","t"]]') == {("public", "item"), ("s", "t")}
    assert parse_payload('"*"') is None
    assert parse_payload("item") is None
    assert parse_payload('[["public"]]') is None
    assert time_relative('{"synthetic":["now()"]}')
    assert time_relative('{"synthetic":["Today"]}')
    assert not time_relative('{"synthetic":["2024-01-01","nowhere"]}')


def test_serve_flag_pushes_mutations_across_workers(pg_url: str) -> None:
    """`svc serve --live-queries-skip-idle mutations` (default worker count): websocket
    subscribers spread over the workers each get a mutation POSTed to any worker."""
    with server_with(pg_url, STEPS, "--live-queries-skip-idle", "mutations") as server:
        asyncio.run(_across_workers(server))


async def _across_workers(server: ServerProcess) -> None:
    url = server.url.replace("http://", "ws://") + "/v1/graphql"
    sockets = []
    try:
        for _ in range(4):
            ws = await websockets.connect(url, subprotocols=["graphql-ws"])  # type: ignore[list-item]
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            await ws.send(json.dumps({"id": "1", "type": "start", "payload": {"query": ITEMS}}))
            assert len(names(await next_data(ws, 10))) == 3
            sockets.append(ws)
        await asyncio.sleep(2)  # idle: several intervals skipped
        for name in ("p1", "p2"):
            r = await asyncio.to_thread(server.graphql, INSERT % name)
            assert "errors" not in r, r
            for ws in sockets:
                assert names(await next_data(ws, 10))[-1] == name
    finally:
        for ws in sockets:
            await ws.close()


CHANGING = ("live_queries_apollo.yaml", "udf_session_args.yaml")  # results that change


@pytest.mark.skipif(not SCENARIO_DIR.is_dir(), reason=SKIP_REASON)
@pytest.mark.parametrize(
    "files",
    [pytest.param(CHANGING, id="changing"), pytest.param(None, id="all", marks=pytest.mark.slow)],
)
def test_scenarios_pass_with_triggers(pg_url: str, files: tuple[str, ...] | None) -> None:
    """The corpus's subscription scenario files pass unchanged under ASGI with
    `--live-queries-skip-idle triggers`: skipping idle polls loses no push. In CI the
    files whose results change (mutations over the socket, a session function); all
    five (both protocols, ~50 s) with `-m slow`."""
    args = (*SERVER_ARGS, "--server-interface", "asgi", "--live-queries-skip-idle", "triggers")
    server = ServerProcess(create_database(pg_url, prefix="wsidle"), *args, env=SCENARIO_ENV)
    try:
        assert server.query(load_yaml(CORPUS / "clear_db.yaml")).status_code == 200
        failed = {}
        paths = sorted(SCENARIO_DIR.glob("*.yaml"))
        for path in [p for p in paths if files is None or p.name in files]:
            for test, result in run_scenario(server.url, path).items():
                if result != "pass":
                    failed[f"{path.name}::{test}"] = result
        assert failed == {}
    finally:
        server.stop()
