"""Several Postgres sources (issue 28; `svc/metadata/sources.py`, `svc/ir/source_tables.py`,
`svc/api/source_focus.py`, `svc/api/source_ops.py`), against `svc serve` with its default
worker count.

Followed: the reference's `Hasura.RQL.DDL.Schema.Source` (`runAddSource`: a source that
cannot be reached is refused, "already exists" / "does not exist" messages;
`runDropSource`, `runRenameSource`, `runUpdateSource`: each key given replaces the stored
one), `askSourceInfo` (`source with name "x" does not exist`, 400 `not-exists`), and
`Hasura.GraphQL.Transport.HTTP.runGQ`: a query's root fields of two sources are separate
steps merged into one `data` in field order; a mutation's root fields of two sources run
one after the other, each source's in its own transaction (the reference's
`coalescePostgresMutations` makes one transaction only of a single source's).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.support import ServerProcess, create_database, export_apply_export

pytestmark = pytest.mark.xdist_group("several_sources")


def sql(url: str, text: str) -> Any:
    async def go() -> Any:
        conn = await asyncpg.connect(url)
        try:
            return await conn.execute(text)
        finally:
            await conn.close()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def urls(pg_url: str) -> tuple[str, str, str]:
    main, one, two = (create_database(pg_url, p) for p in ("srcm", "src1", "src2"))
    sql(
        main,
        "CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL);"
        "INSERT INTO author VALUES (1, 'main')",
    )
    sql(
        one,
        "CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL);"
        "INSERT INTO author VALUES (1, 'one'), (2, 'one-b');"
        "CREATE TABLE book (id int PRIMARY KEY, author_id int REFERENCES author, title text);"
        "INSERT INTO book VALUES (10, 1, 'b10'), (11, 1, 'b11')",
    )
    return main, one, two


@pytest.fixture(scope="module")
def srv(urls: tuple[str, str, str]) -> Iterator[ServerProcess]:
    server = ServerProcess(urls[0], env={"SOURCE_ONE": urls[1], "SOURCE_TWO": urls[2]})
    try:
        yield server
    finally:
        server.stop()


def call(srv: ServerProcess, type_: str, args: Any) -> Any:
    return srv.client.post("/v1/metadata", json={"type": type_, "args": args})


def ok(srv: ServerProcess, type_: str, args: Any) -> Any:
    r = call(srv, type_, args)
    assert r.status_code == 200, r.text
    return r.json()


def add_one(srv: ServerProcess) -> None:
    ok(
        srv,
        "pg_add_source",
        {
            "name": "one",
            "configuration": {"connection_info": {"database_url": {"from_env": "SOURCE_ONE"}}},
        },
    )


def add_one_with_tables(srv: ServerProcess) -> None:
    """Source `one` with its `author` (as `one_author`) and `book` tracked."""
    add_one(srv)
    custom = {"custom_name": "one_author"}
    ok(srv, "pg_track_table", {"source": "one", "table": "author", "configuration": custom})
    ok(srv, "pg_track_table", {"source": "one", "table": "book"})


def test_a_second_source_serves_its_tables(srv: ServerProcess) -> None:
    ok(srv, "pg_track_table", {"table": "author"})
    add_one_with_tables(srv)
    ok(
        srv,
        "pg_create_object_relationship",
        {
            "source": "one",
            "table": "book",
            "name": "author",
            "using": {"foreign_key_constraint_on": "author_id"},
        },
    )
    answer = srv.graphql(
        "{ author { name } one_author(order_by: {id: asc}) { name }"
        " book(order_by: {id: asc}) { title author { name } } }"
    )
    assert answer == {
        "data": {
            "author": [{"name": "main"}],
            "one_author": [{"name": "one"}, {"name": "one-b"}],
            "book": [
                {"title": "b10", "author": {"name": "one"}},
                {"title": "b11", "author": {"name": "one"}},
            ],
        }
    }


def test_every_worker_serves_the_new_source(srv: ServerProcess) -> None:
    """Workers that did not run `pg_add_source` connect to it when they load the change."""
    for _ in range(20):
        answer = srv.graphql("{ one_author_by_pk(id: 2) { name } }")
        assert answer == {"data": {"one_author_by_pk": {"name": "one-b"}}}


def test_a_mutation_over_two_sources_runs_each_root_in_its_own_transaction(
    srv: ServerProcess, urls: tuple[str, str, str]
) -> None:
    both = (
        "mutation($a: Int!, $b: Int!) {"
        ' insert_author_one(object: {id: $a, name: "m"}) { id }'
        ' insert_book_one(object: {id: $b, author_id: 2, title: "t"}) { id author { name } } }'
    )
    answer = srv.graphql(both, {"a": 5, "b": 20})
    assert answer == {
        "data": {
            "insert_author_one": {"id": 5},
            "insert_book_one": {"id": 20, "author": {"name": "one-b"}},
        }
    }
    # The second root fails (book 20 exists): the first, another source's, stays written.
    answer = srv.graphql(both, {"a": 6, "b": 20})
    assert answer["errors"][0]["extensions"]["code"] == "constraint-violation", answer
    rows = srv.graphql("{ author_by_pk(id: 6) { id } }")
    assert rows == {"data": {"author_by_pk": {"id": 6}}}
    # One source's roots share one transaction: the second insert failing undoes the first.
    one = (
        'mutation { a: insert_book_one(object: {id: 30, author_id: 1, title: "x"}) { id }'
        ' b: insert_book_one(object: {id: 20, author_id: 1, title: "y"}) { id } }'
    )
    assert "errors" in srv.graphql(one)
    assert srv.graphql("{ book_by_pk(id: 30) { id } }") == {"data": {"book_by_pk": None}}


def test_refusals(srv: ServerProcess) -> None:
    before = ok(srv, "export_metadata", {})
    cases = [
        (
            "pg_track_table",
            {"source": "nope", "table": "author"},
            "not-exists",
            'source with name "nope" does not exist',
        ),
        (
            "pg_add_source",
            {
                "name": "one",
                "configuration": {"connection_info": {"database_url": {"from_env": "SOURCE_ONE"}}},
            },
            "already-exists",
            'source with name "one" already exists',
        ),
        (
            "pg_add_source",
            {
                "name": "gone",
                "configuration": {
                    "connection_info": {"database_url": "postgresql://postgres@127.0.0.1:1/none"}
                },
            },
            "invalid-configuration",
            None,
        ),
        (
            "pg_add_source",
            {
                "name": "unset",
                "configuration": {
                    "connection_info": {"database_url": {"from_env": "NOT_SET_ANYWHERE"}}
                },
            },
            "invalid-configuration",
            None,
        ),
        (
            "pg_drop_source",
            {"name": "nope"},
            "not-exists",
            'source with name "nope" does not exist',
        ),
        (
            "rename_source",
            {"name": "nope", "new_name": "x"},
            "not-exists",
            'Could not find source with name "nope"',
        ),
        (
            "rename_source",
            {"name": "one", "new_name": "default"},
            "already-exists",
            'Source with name "default" already exists',
        ),
        ("pg_drop_source", {"name": "default"}, "not-supported", None),
        # A second `author` type: the reference's fix is a custom name.
        (
            "pg_track_table",
            {"source": "one", "table": "book", "configuration": {"custom_name": "author"}},
            None,
            None,
        ),
    ]
    for type_, args, code, message in cases:
        r = call(srv, type_, args)
        assert r.status_code == 400, (type_, r.text)
        if code is not None:
            assert r.json()["code"] == code, (type_, r.text)
        if message is not None:
            assert r.json()["error"] == message, (type_, r.text)
    assert ok(srv, "export_metadata", {}) == before


def test_run_sql_and_tables_of_a_source(srv: ServerProcess) -> None:
    ok(srv, "run_sql", {"source": "one", "sql": "CREATE TABLE shelf (id int PRIMARY KEY)"})
    tables = ok(srv, "pg_get_source_tables", {"source": "one"})
    assert {"schema": "public", "name": "shelf"} in tables
    assert {"schema": "public", "name": "author"} in tables
    ok(srv, "pg_track_table", {"source": "one", "table": "shelf"})
    ok(srv, "run_sql", {"source": "one", "sql": "INSERT INTO shelf VALUES (7)"})
    assert srv.graphql("{ shelf { id } }") == {"data": {"shelf": [{"id": 7}]}}
    # Dropping the table through run_sql untracks it, as on `default`.
    ok(srv, "run_sql", {"source": "one", "sql": "DROP TABLE shelf", "cascade": True})
    assert "errors" in srv.graphql("{ shelf { id } }")
    consistent = ok(srv, "get_inconsistent_metadata", {})
    assert consistent["is_consistent"] is True, consistent


def test_a_role_reads_another_source_under_its_permissions(srv: ServerProcess) -> None:
    ok(
        srv,
        "pg_create_select_permission",
        {
            "source": "one",
            "table": "book",
            "role": "reader",
            "permission": {"columns": ["id", "title"], "filter": {"id": {"_eq": "X-Svc-Book"}}},
        },
    )
    headers = {"X-Svc-Role": "reader", "X-Svc-Book": "11"}
    answer = srv.graphql("{ book { id title } }", headers=headers)
    assert answer == {"data": {"book": [{"id": 11, "title": "b11"}]}}
    denied = srv.graphql("{ book { author_id } }", headers=headers)
    assert denied["errors"][0]["extensions"]["code"] == "validation-failed"


def test_a_subscription_on_another_source_follows_its_rows(srv: ServerProcess) -> None:
    """Through Python `gql` (graphql-transport-ws): the live query polls that source's
    database and pushes the change a mutation makes there."""
    from gql import Client, gql

    from tests.test_websocket import TRANSPORT, Transport

    async def run() -> list[Any]:
        url = srv.url.replace("http", "ws", 1) + "/v1/graphql"
        transport = Transport(url=url, subprotocols=[TRANSPORT])
        seen: list[Any] = []
        async with Client(transport=transport, fetch_schema_from_transport=False) as session:
            sub = session.subscribe(gql("subscription { one_author_by_pk(id: 3) { name } }"))
            seen.append(await asyncio.wait_for(anext(sub), 10))
            await session.execute(
                gql('mutation { insert_one_author_one(object: {id: 3, name: "live"}) { id } }')
            )
            seen.append(await asyncio.wait_for(anext(sub), 10))
            await sub.aclose()
        return seen

    assert asyncio.run(run()) == [
        {"one_author_by_pk": None},
        {"one_author_by_pk": {"name": "live"}},
    ]
    # A subscription over two sources is refused (one statement is polled).
    both = srv.graphql("subscription { author { id } book { id } }")
    assert "errors" in both


def test_rename_update_and_drop(srv: ServerProcess, urls: tuple[str, str, str]) -> None:
    ok(srv, "rename_source", {"name": "one", "new_name": "uno"})
    assert srv.graphql("{ book_by_pk(id: 10) { title } }") == {
        "data": {"book_by_pk": {"title": "b10"}}
    }
    exported = ok(srv, "export_metadata", {})
    assert [s["name"] for s in exported["sources"]] == ["default", "uno"]
    # Moved to an empty database: its tables are gone there, so they are inconsistent
    # and the other sources keep serving.
    sql(
        urls[2],
        "CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL);"
        "INSERT INTO author VALUES (1, 'two')",
    )
    r = call(
        srv,
        "pg_update_source",
        {
            "name": "uno",
            "configuration": {"connection_info": {"database_url": {"from_env": "SOURCE_TWO"}}},
        },
    )
    assert r.status_code == 400, r.text  # `book` is not in that database
    ok(
        srv,
        "replace_metadata",
        {
            "allow_inconsistent_metadata": True,
            "metadata": {
                **exported,
                "sources": [
                    exported["sources"][0],
                    {
                        **exported["sources"][1],
                        "configuration": {
                            "connection_info": {"database_url": {"from_env": "SOURCE_TWO"}}
                        },
                    },
                ],
            },
        },
    )
    listed = ok(srv, "get_inconsistent_metadata", {})
    assert listed["is_consistent"] is False
    assert {o["type"] for o in listed["inconsistent_objects"]} == {"table"}, listed
    assert srv.graphql("{ one_author { name } author_by_pk(id: 1) { name } }") == {
        "data": {"one_author": [{"name": "two"}], "author_by_pk": {"name": "main"}}
    }
    ok(srv, "pg_drop_source", {"name": "uno", "cascade": True})
    assert "errors" in srv.graphql("{ one_author { name } }")
    assert ok(srv, "get_inconsistent_metadata", {})["is_consistent"] is True
    assert "sources" not in ok(srv, "export_metadata", {})


def test_a_two_source_directory_exports_applies_and_exports_the_same(
    srv: ServerProcess, tmp_path: Path
) -> None:
    """Issue 28's acceptance: `svc metadata export` → `apply` → `export` of a config v3
    directory with two sources gives the same bytes, and the second source is served
    after the apply."""
    add_one_with_tables(srv)
    ok(
        srv,
        "pg_create_array_relationship",
        {
            "source": "one",
            "table": "author",
            "name": "books",
            "using": {"foreign_key_constraint_on": {"table": "book", "column": "author_id"}},
        },
    )
    ok(
        srv,
        "pg_create_select_permission",
        {
            "source": "one",
            "table": "book",
            "role": "reader",
            "permission": {"columns": ["id"], "filter": {}},
        },
    )
    first, second = export_apply_export(srv, tmp_path, "--config-version", "3")
    assert first == second
    assert "databases/one/tables/public_book.yaml" in first
    listing = first["databases/databases.yaml"].decode()
    assert "- name: default" in listing and "- name: one" in listing, listing
    answer = srv.graphql(
        "{ one_author(where: {id: {_eq: 1}}) { books(order_by: {id: asc}) { id } } }"
    )
    assert answer == {"data": {"one_author": [{"books": [{"id": 10}, {"id": 11}]}]}}


def test_connection_settings_are_applied_or_refused(srv: ServerProcess) -> None:
    """`isolation_level` is every connection's `default_transaction_isolation`; a key svc
    does not apply (`ssl_configuration`) or an unknown level refuses the source rather
    than connecting otherwise than its configuration says."""
    info: dict[str, Any] = {
        "database_url": {"from_env": "SOURCE_TWO"},
        "isolation_level": "serializable",
        "pool_settings": {"max_connections": 3, "idle_timeout": 60, "retries": 1},
        "use_prepared_statements": False,
    }
    ok(srv, "pg_add_source", {"name": "iso", "configuration": {"connection_info": info}})
    shown = ok(srv, "run_sql", {"source": "iso", "sql": "SHOW default_transaction_isolation"})
    assert shown["result"] == [["default_transaction_isolation"], ["serializable"]]
    for bad in ({"isolation_level": "chaos"}, {"ssl_configuration": {"sslmode": "verify-full"}}):
        r = call(
            srv,
            "pg_add_source",
            {"name": "iso2", "configuration": {"connection_info": {**info, **bad}}},
        )
        assert (r.status_code, r.json()["code"]) == (400, "invalid-configuration"), r.text
    ok(srv, "pg_drop_source", {"name": "iso"})


def test_a_relationship_to_a_table_of_another_source(srv: ServerProcess) -> None:
    """`author` (default) → `one_author` and `book` (source `one`) and back, as the
    reference's remote source relationships (`to_source`): joined after the owner's
    statement by a query of the other source, under the role's permissions."""

    def to(source: str, table: str, kind: str, mapping: dict[str, str]) -> Any:
        return {
            "to_source": {
                "source": source,
                "table": table,
                "relationship_type": kind,
                "field_mapping": mapping,
            }
        }

    ok(
        srv,
        "pg_create_remote_relationship",
        {
            "table": "author",
            "name": "twin",
            "definition": to("one", "author", "object", {"id": "id"}),
        },
    )
    ok(
        srv,
        "pg_create_remote_relationship",
        {
            "table": "author",
            "name": "books",
            "definition": to("one", "book", "array", {"id": "author_id"}),
        },
    )
    ok(
        srv,
        "pg_create_remote_relationship",
        {
            "source": "one",
            "table": "book",
            "name": "home_author",
            "definition": to("default", "author", "object", {"author_id": "id"}),
        },
    )
    answer = srv.graphql(
        "{ author(order_by: {id: asc}, where: {id: {_eq: 1}}) { name twin { name }"
        " books(order_by: {id: desc}) { title home_author { name } }"
        " books_aggregate { aggregate { count } } } }"
    )
    assert answer == {
        "data": {
            "author": [
                {
                    "name": "main",
                    "twin": {"name": "one"},
                    "books": [
                        {"title": "b11", "home_author": {"name": "main"}},
                        {"title": "b10", "home_author": {"name": "main"}},
                    ],
                    "books_aggregate": {"aggregate": {"count": 2}},
                }
            ]
        }
    }
    # Permissions of the other source apply: `fan` sees book 11 only, and no `author`
    # of `one` at all, so no `twin`. (As for a remote type's relationship to a table, the
    # join filters the target by its mapped columns as the role: they must be ones the
    # role may filter by.)
    ok(
        srv,
        "pg_create_select_permission",
        {
            "table": "author",
            "role": "fan",
            "permission": {"columns": ["id"], "filter": {}},
        },
    )
    ok(
        srv,
        "pg_create_select_permission",
        {
            "source": "one",
            "table": "book",
            "role": "fan",
            "permission": {"columns": ["id", "author_id"], "filter": {"id": {"_eq": "X-Svc-Book"}}},
        },
    )
    headers = {"X-Svc-Role": "fan", "X-Svc-Book": "11"}
    answer = srv.graphql("{ author(where: {id: {_eq: 1}}) { books { id } } }", headers=headers)
    assert answer == {"data": {"author": [{"books": [{"id": 11}]}]}}
    assert "errors" in srv.graphql("{ author { twin { id } } }", headers=headers)
    # What does not resolve is refused with the reference's reasons.
    for definition, message in (
        (
            to("nowhere", "book", "array", {"id": "author_id"}),
            "source with name 'nowhere' not found",
        ),
        (to("one", "shelf", "array", {"id": "id"}), 'table "shelf" is not tracked'),
        (to("one", "book", "array", {"id": "nope"}), 'no such column exists : "nope"'),
    ):
        r = call(
            srv,
            "pg_create_remote_relationship",
            {"table": "author", "name": "bad", "definition": definition},
        )
        assert r.status_code == 400 and message in r.json()["error"], r.text


def test_event_triggers_on_another_source(srv: ServerProcess, urls: tuple[str, str, str]) -> None:
    """A trigger on a table of source `one` captures into that database's event log and
    is delivered by that source's event worker; each event once; dropping the source
    drops its capture triggers and event tables (the reference's `postDropSourceHook`)."""
    from tests.webhook_recorder import WebhookRecorder

    with WebhookRecorder() as hook:
        ok(
            srv,
            "pg_create_event_trigger",
            {
                "source": "one",
                "name": "book_added",
                "table": "book",
                "insert": {"columns": "*"},
                "webhook": hook.url("/book"),
            },
        )
        srv.graphql(
            'mutation { insert_book(objects: [{id: 40, author_id: 1, title: "e1"},'
            ' {id: 41, author_id: 2, title: "e2"}]) { affected_rows } }'
        )
        got = [hook.pop(within=20), hook.pop(within=20)]
        bodies = sorted((h.json["event"]["data"]["new"]["id"], h.json) for h in got)
        assert [i for i, _ in bodies] == [40, 41]
        first = bodies[0][1]
        assert first["table"] == {"schema": "public", "name": "book"}
        assert first["trigger"] == {"name": "book_added"}
        assert first["event"]["op"] == "INSERT"
        # The event log is that source's: its database has the events, delivered.
        delivered = "SELECT count(*) FROM hdb_catalog.event_log WHERE delivered"
        deadline = time.monotonic() + 20  # recorded just after the webhook answered
        while sql_rows(urls[1], delivered) != [(2,)]:
            assert time.monotonic() < deadline, sql_rows(urls[1], delivered)
            time.sleep(0.1)
        hook_count = hook.count()
        ok(srv, "pg_drop_source", {"name": "one", "cascade": True})
        left = sql_rows(urls[1], "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'notify_svc%'")
        assert left == [(0,)], left
        assert sql_rows(urls[1], "SELECT to_regclass('hdb_catalog.event_log') IS NULL") == [(True,)]
        assert hook.count() == hook_count == 0


def sql_rows(url: str, text: str) -> list[tuple[Any, ...]]:
    async def go() -> list[tuple[Any, ...]]:
        conn = await asyncpg.connect(url)
        try:
            return [tuple(r) for r in await conn.fetch(text)]
        finally:
            await conn.close()

    return asyncio.run(go())


def test_a_remote_schemas_type_joins_a_table_of_another_source(srv: ServerProcess) -> None:
    """`create_remote_schema_remote_relationship` with `to_source` naming a served source
    other than `default`: the remote's `Message` gets that source's `book` rows."""
    from tests.fixture_servers.remote_graphql import GraphQLHttp
    from tests.fixture_servers.remote_node import _apollo, node_4000
    from tests.support import free_port

    node = GraphQLHttp(free_port(), _apollo(node_4000()))
    node.start()
    try:
        add_one(srv)
        ok(srv, "pg_track_table", {"source": "one", "table": "book"})
        url = f"http://localhost:{node.port}"
        ok(srv, "add_remote_schema", {"name": "msgs", "definition": {"url": url}})
        to_books = {
            "to_source": {
                "source": "one",
                "table": "book",
                "relationship_type": "array",
                "field_mapping": {"id": "author_id"},
            }
        }
        ok(
            srv,
            "create_remote_schema_remote_relationship",
            {
                "remote_schema": "msgs",
                "type_name": "Message",
                "name": "books",
                "definition": to_books,
            },
        )
        answer = srv.graphql(
            "{ messages(where: {id: {eq: 1}}) { id books(order_by: {id: asc}) { id } } }"
        )
        assert answer == {
            "data": {"messages": [{"id": 1, "books": [{"id": 10}, {"id": 11}, {"id": 40}]}]}
        }
        missing = {"to_source": {**to_books["to_source"], "table": "nowhere"}}
        r = call(
            srv,
            "create_remote_schema_remote_relationship",
            {
                "remote_schema": "msgs",
                "type_name": "Message",
                "name": "bad",
                "definition": missing,
            },
        )
        assert r.status_code == 400, r.text
        assert r.json()["error"] == 'table "nowhere" is not tracked'
        ok(srv, "remove_remote_schema", {"name": "msgs"})
        ok(srv, "pg_drop_source", {"name": "one", "cascade": True})
    finally:
        node.stop()


def test_a_naming_convention_is_accepted_with_or_without_the_feature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A source's `naming_convention` is read with or without the experimental feature
    (served by `svc.naming`; `tests/test_naming_conventions.py`); a value other than the
    two is the reference's 400 `parse-failed` (`parseNamingConventionFromText`)."""
    from svc.errors import SvcError
    from svc.metadata.model import metadata_from_obj

    def doc(convention: str) -> dict[str, object]:
        source = {"name": "default", "kind": "postgres", "tables": []}
        custom = {"naming_convention": convention}
        return {"version": 3, "sources": [{**source, "customization": custom}]}

    for features in ("streaming_subscriptions", "naming_convention"):
        monkeypatch.setenv("SVC_GRAPHQL_EXPERIMENTAL_FEATURES", features)
        assert metadata_from_obj(doc("graphql-default")).default_source is not None
        with pytest.raises(SvcError) as caught:
            metadata_from_obj(doc("camelCase"))
        assert caught.value.code == "parse-failed"
        assert caught.value.path == "$.args.sources[0].customization.naming_convention"


def test_read_replicas_of_another_source(srv: ServerProcess) -> None:
    """A source's own `read_replicas` (a stand-in: the third database, holding `author`
    with other rows): its queries read the replica, its mutations the primary."""
    replica = {"database_url": {"from_env": "SOURCE_TWO"}}
    info = {"database_url": {"from_env": "SOURCE_ONE"}, "read_replicas": [replica]}
    ok(srv, "pg_add_source", {"name": "rep", "configuration": {"connection_info": info}})
    ok(
        srv,
        "pg_track_table",
        {"source": "rep", "table": "author", "configuration": {"custom_name": "rep_author"}},
    )
    for _ in range(10):  # every worker
        answer = srv.graphql("{ rep_author_by_pk(id: 1) { name } }")
        assert answer == {"data": {"rep_author_by_pk": {"name": "two"}}}
    written = srv.graphql('mutation { insert_rep_author_one(object: {id: 9, name: "w"}) { name } }')
    assert written == {"data": {"insert_rep_author_one": {"name": "w"}}}
    assert srv.graphql("{ rep_author_by_pk(id: 9) { name } }") == {
        "data": {"rep_author_by_pk": None}  # not replicated: a stand-in
    }
    bad = {**info, "read_replicas": [{"database_url": {"from_env": "NOT_SET_HERE"}}]}
    r = call(srv, "pg_update_source", {"name": "rep", "configuration": {"connection_info": bad}})
    assert (r.status_code, r.json()["code"]) == (400, "invalid-configuration"), r.text
    ok(srv, "pg_drop_source", {"name": "rep"})


def test_a_function_of_another_source(srv: ServerProcess) -> None:
    """`pg_track_function` with `source`: the function's root field runs on its source."""
    info = {"database_url": {"from_env": "SOURCE_ONE"}}
    ok(srv, "pg_add_source", {"name": "fns", "configuration": {"connection_info": info}})
    body = (
        "CREATE FUNCTION titled(prefix text) RETURNS SETOF book LANGUAGE sql STABLE AS "
        "$$ SELECT * FROM book WHERE title LIKE prefix || '%' ORDER BY id $$"
    )
    ok(srv, "run_sql", {"source": "fns", "sql": body})
    ok(srv, "pg_track_table", {"source": "fns", "table": "book"})
    ok(srv, "pg_track_function", {"source": "fns", "function": "titled"})
    answer = srv.graphql('{ titled(args: {prefix: "b1"}) { id title } }')
    assert answer == {"data": {"titled": [{"id": 10, "title": "b10"}, {"id": 11, "title": "b11"}]}}
    ok(srv, "pg_drop_source", {"name": "fns"})
    assert "errors" in srv.graphql('{ titled(args: {prefix: "b"}) { id } }')


def test_customized_root_field_and_type_names(srv: ServerProcess) -> None:
    """A source's `customization.root_fields` and `type_names` prefixes and suffixes, as the
    reference's `pg_source_customization` and `pg_source_prefix_query` tests answer them:
    every root field (functions' and aggregates' too) and every type generated for its
    tables and functions, `__typename` included; shared types (`order_by`,
    `String_comparison_exp`) stay."""
    info = {"database_url": {"from_env": "SOURCE_ONE"}}
    custom = {
        "root_fields": {"prefix": "fpref_", "suffix": "_fsuff"},
        "type_names": {"prefix": "tpref_", "suffix": "_tsuff"},
    }
    ok(
        srv,
        "pg_add_source",
        {"name": "cust", "configuration": {"connection_info": info}, "customization": custom},
    )
    ok(srv, "pg_track_table", {"source": "cust", "table": "book"})
    ok(srv, "pg_track_function", {"source": "cust", "function": "titled"})
    answer = srv.graphql(
        "{ fpref_book_by_pk_fsuff(id: 10) { __typename title }"
        " fpref_book_aggregate_fsuff { __typename aggregate { __typename count } }"
        ' fpref_titled_fsuff(args: {prefix: "b11"}) { __typename id }'
        ' args: __type(name: "tpref_titled_args_tsuff") { name }'
        ' exp: __type(name: "tpref_book_bool_exp_tsuff") { inputFields { name type { name } } } }'
    )
    assert "errors" not in answer, answer
    data = answer["data"]
    assert data["fpref_book_by_pk_fsuff"] == {"__typename": "tpref_book_tsuff", "title": "b10"}
    agg = data["fpref_book_aggregate_fsuff"]
    assert agg["__typename"] == "tpref_book_aggregate_tsuff"
    assert agg["aggregate"]["__typename"] == "tpref_book_aggregate_fields_tsuff"
    assert data["fpref_titled_fsuff"] == [{"__typename": "tpref_book_tsuff", "id": 11}]
    assert data["args"] == {"name": "tpref_titled_args_tsuff"}
    types = {f["name"]: f["type"]["name"] for f in data["exp"]["inputFields"]}
    assert types["title"] == "String_comparison_exp"  # shared, not customized
    inserted = srv.graphql(
        'mutation { fpref_insert_book_fsuff(objects: [{id: 50, author_id: 1, title: "c"}])'
        " { __typename affected_rows } }"
    )
    assert inserted == {
        "data": {
            "fpref_insert_book_fsuff": {
                "__typename": "tpref_book_mutation_response_tsuff",
                "affected_rows": 1,
            }
        }
    }
    ok(srv, "pg_drop_source", {"name": "cust"})


def test_a_namespaced_source(srv: ServerProcess) -> None:
    """`customization.root_fields.namespace`: the source's root fields inside one field,
    of type `<type prefix><namespace>_query` (`_mutation_frontend`), as the reference's
    `pg_source_namespace_query` and `pg_source_customization` tests answer (the
    namespace field itself without the root field prefix)."""
    info = {"database_url": {"from_env": "SOURCE_ONE"}}
    custom = {
        "root_fields": {"namespace": "my_source", "prefix": "fpref_"},
        "type_names": {"prefix": "tpref_"},
    }
    ok(
        srv,
        "pg_add_source",
        {"name": "nsd", "configuration": {"connection_info": info}, "customization": custom},
    )
    ok(srv, "pg_track_table", {"source": "nsd", "table": "book"})
    call(srv, "pg_track_table", {"table": "author"})  # tracked already when run in order
    query = (
        "{ my_source { __typename fpref_book_by_pk(id: 10) { __typename title }"
        " n: fpref_book_aggregate { aggregate { count } } } }"
    )
    answer = srv.graphql(query)
    space = answer["data"]["my_source"]
    assert list(space) == ["__typename", "fpref_book_by_pk", "n"], answer
    assert space["__typename"] == "tpref_my_source_query"
    assert space["fpref_book_by_pk"] == {"__typename": "tpref_book", "title": "b10"}
    assert space["n"]["aggregate"]["count"] >= 2
    assert srv.graphql(query) == answer  # the repeated-request path
    # With another source's field (two steps) and aliases on the namespace.
    both = "{ a: my_source { x: fpref_book_by_pk(id: 11) { id } } author_by_pk(id: 1) { name } }"
    assert srv.graphql(both) == {"data": {"a": {"x": {"id": 11}}, "author_by_pk": {"name": "main"}}}
    written = srv.graphql(
        "mutation { my_source { __typename fpref_insert_book_one(object: {id: 60, author_id: 1,"
        ' title: "ns"}) { id } } }'
    )
    assert written == {
        "data": {
            "my_source": {
                "__typename": "tpref_my_source_mutation_frontend",
                "fpref_insert_book_one": {"id": 60},
            }
        }
    }
    assert "errors" in srv.graphql("{ fpref_book { id } }")  # not at the root any more
    live = first_pushed(
        srv, "subscription { my_source { __typename b: fpref_book_by_pk(id: 60) { title } } }"
    )
    assert live == {
        "my_source": {"__typename": "tpref_my_source_subscription", "b": {"title": "ns"}}
    }
    streamed = first_pushed(
        srv,
        "subscription { my_source { fpref_book_stream(batch_size: 1, cursor: {initial_value:"
        " {id: 59}}) { id } } }",
    )
    assert streamed == {"my_source": {"fpref_book_stream": [{"id": 60}]}}
    ok(srv, "pg_drop_source", {"name": "nsd"})


def first_pushed(srv: ServerProcess, query: str) -> Any:
    """The first answer a subscription is pushed (through Python `gql`)."""
    from gql import Client, gql

    from tests.test_websocket import TRANSPORT, Transport

    async def run() -> Any:
        url = srv.url.replace("http", "ws", 1) + "/v1/graphql"
        transport = Transport(url=url, subprotocols=[TRANSPORT])
        async with Client(transport=transport, fetch_schema_from_transport=False) as session:
            sub = session.subscribe(gql(query))
            first = await asyncio.wait_for(anext(sub), 10)
            await sub.aclose()
            return first

    return asyncio.run(run())
