"""A select permission's `query_root_fields` and `subscription_root_fields` (Hasura v2.8+)
on a real Postgres, in process through `Engine`.

The reference: `server/src-lib/Hasura/RQL/Types/Permission.hs` (`SelPerm`'s parser and
`ToJSON`; `QueryRootFieldType`, `SubscriptionRootFieldType`),
`server/src-lib/Hasura/GraphQL/Schema/Build.hs` (`buildTableQueryAndSubscriptionFields`:
each kind goes to the roots that allow it, `select_stream` to subscriptions) and the
reference's own tests `Test.Auth.Authorization.DisableRootFields.SelectPermission.*`
(`DisableAllRootFieldsSpec`: `no_queries_available` and `subscriptionType: null`;
`EnableAggSpec`: the `select_aggregate` / `allow_aggregations` inconsistency).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from svc.api.engine import Engine
from svc.config import Config
from svc.errors import SvcError

SQL = """
create table author (id int primary key, name text not null);
create table article (id int primary key, author_id int not null references author(id),
  title text not null);
insert into author values (1, 'Ann'), (2, 'Bob');
insert into article values (10, 1, 'A1'), (11, 2, 'B1');
"""


def select(role: str, table: str, **permission: Any) -> dict[str, Any]:
    """A `create_select_permission` step: every column, every row unless `filter`."""
    body = {"columns": "*", "filter": {}, **permission}
    return {
        "type": "create_select_permission",
        "args": {"table": table, "role": role, "permission": body},
    }


STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "author"},
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
            "using": {"foreign_key_constraint_on": {"table": "article", "column": "author_id"}},
        },
    },
    # hidden: author only through article.author
    select("hidden", "author", query_root_fields=[], subscription_root_fields=[]),
    select("hidden", "article"),
    # agg: EnableAggSpec's permission
    select(
        "agg",
        "author",
        allow_aggregations=True,
        query_root_fields=["select_aggregate"],
        subscription_root_fields=["select_aggregate"],
    ),
    # pk: by key in queries, a stream in subscriptions
    select(
        "pk",
        "author",
        query_root_fields=["select_by_pk"],
        subscription_root_fields=["select_stream"],
    ),
    # open: null is every root field, as an absent key
    select(
        "open",
        "author",
        allow_aggregations=True,
        query_root_fields=None,
        subscription_root_fields=None,
    ),
    # nothing: DisableAllRootFieldsSpec's permission, on its only table
    select("nothing", "author", query_root_fields=[], subscription_root_fields=[]),
]

ROOTS = "{ __schema { queryType { fields { name } } subscriptionType { fields { name } } } }"


@asynccontextmanager
async def engine(url: str) -> AsyncIterator[Engine]:
    eng = await Engine.start(Config(database_url=url, log_requests=False, statement_timeout=5.0))
    try:
        await eng.metadata({"type": "bulk", "args": STEPS}, "admin")
        yield eng
    finally:
        await eng.close()


async def ask(eng: Engine, role: str, query: str) -> Any:
    return json.loads(await eng.graphql({"query": query}, role, {"x-svc-role": role}))


async def roots(eng: Engine, role: str) -> tuple[set[str], set[str] | None]:
    """(query_root field names, subscription_root field names or None without one)."""
    schema = (await ask(eng, role, ROOTS))["data"]["__schema"]
    sub = schema["subscriptionType"]
    query = {f["name"] for f in schema["queryType"]["fields"]}
    return query, None if sub is None else {f["name"] for f in sub["fields"]}


def run(test: Callable[[Engine], Any], url: str) -> None:
    async def go() -> None:
        async with engine(url) as eng:
            await test(eng)

    asyncio.run(go())


@pytest.fixture
def url(new_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("SVC_GRAPHQL_EXPERIMENTAL_FEATURES", raising=False)
    return new_database()


def test_roots_per_role(url: str) -> None:
    """Each role's query_root and subscription_root hold exactly the kinds its permission
    allows (streaming on by default); `[]` on the only table leaves `no_queries_available`
    and no subscription root; admin and a null list get every kind."""

    async def check(eng: Engine) -> None:
        assert await roots(eng, "hidden") == (
            {"article", "article_by_pk"},
            {"article", "article_by_pk", "article_stream"},
        )
        assert await roots(eng, "agg") == ({"author_aggregate"}, {"author_aggregate"})
        assert await roots(eng, "pk") == ({"author_by_pk"}, {"author_stream"})
        every = {"author", "author_by_pk", "author_aggregate"}
        assert await roots(eng, "open") == (every, every | {"author_stream"})
        assert await roots(eng, "nothing") == ({"no_queries_available"}, None)
        query, sub = await roots(eng, "admin")
        assert {"author", "author_aggregate", "author_by_pk"} <= query
        assert sub is not None and "author_stream" in sub

    run(check, url)


def test_hidden_root_fields_refused_but_reachable_through_relationships(url: str) -> None:
    """A root field the permission leaves out is not in the schema (validation-failed),
    while the table's rows still arrive through a relationship, with its filter."""

    async def check(eng: Engine) -> None:
        body = await ask(eng, "hidden", "{ author { id } }")
        assert body["errors"][0]["extensions"]["code"] == "validation-failed", body
        assert "author" in body["errors"][0]["message"]
        body = await ask(
            eng, "hidden", "{ article(order_by: {id: asc}) { title author { name } } }"
        )
        assert body == {
            "data": {
                "article": [
                    {"title": "A1", "author": {"name": "Ann"}},
                    {"title": "B1", "author": {"name": "Bob"}},
                ]
            }
        }
        body = await ask(eng, "pk", "{ author_by_pk(id: 2) { name } }")
        assert body == {"data": {"author_by_pk": {"name": "Bob"}}}
        body = await ask(eng, "agg", "{ author_aggregate { aggregate { count } } }")
        assert body == {"data": {"author_aggregate": {"aggregate": {"count": 2}}}}
        body = await ask(eng, "pk", "{ author { name } }")
        assert body["errors"][0]["extensions"]["code"] == "validation-failed", body

    run(check, url)


def test_export_round_trip(url: str) -> None:
    """`export_metadata` gives the lists as created (`[]` too) and leaves out a null one,
    as the reference's `ToJSON` leaves out `ARFAllowAllRootFields`; `replace_metadata`
    with the export changes nothing."""

    async def check(eng: Engine) -> None:
        md = await eng.metadata({"type": "export_metadata", "args": {}}, "admin")
        author = next(t for t in md["tables"] if t["table"]["name"] == "author")
        perms = {p["role"]: p["permission"] for p in author["select_permissions"]}
        assert perms["pk"]["query_root_fields"] == ["select_by_pk"]
        assert perms["pk"]["subscription_root_fields"] == ["select_stream"]
        assert perms["hidden"]["query_root_fields"] == []
        assert "query_root_fields" not in perms["open"]
        assert "subscription_root_fields" not in perms["open"]
        await eng.metadata({"type": "replace_metadata", "args": md}, "admin")
        assert await eng.metadata({"type": "export_metadata", "args": {}}, "admin") == md
        assert await roots(eng, "pk") == ({"author_by_pk"}, {"author_stream"})

    run(check, url)


def refused(eng: Engine, body: dict[str, Any]) -> Any:
    async def go() -> SvcError:
        with pytest.raises(SvcError) as caught:
            await eng.metadata(body, "admin")
        return caught.value

    return go()


def test_bad_values_get_the_references_errors(url: str) -> None:
    """An unknown kind, a non-string entry or a non-list is 400 `parse-failed` with
    aeson's message at its path (the reference parses generic enums); `select_stream` is no
    query root field; `select_aggregate` without `allow_aggregations` is the reference's
    `invalid-configuration` inconsistency. Nothing is stored."""

    async def check(eng: Engine) -> None:
        qtype = "Hasura.RQL.Types.Permission.QueryRootFieldType"
        cases = [
            (
                {"query_root_fields": ["select", "select_stream"]},
                f'parsing {qtype} failed, expected one of the tags ["select","select_by_pk",'
                '"select_aggregate"], but found tag "select_stream"',
                "$.args.permission.query_root_fields[1]",
            ),
            (
                {"subscription_root_fields": ["stream"]},
                "parsing Hasura.RQL.Types.Permission.SubscriptionRootFieldType failed, expected "
                'one of the tags ["select","select_by_pk","select_aggregate","select_stream"], '
                'but found tag "stream"',
                "$.args.permission.subscription_root_fields[0]",
            ),
            (
                {"query_root_fields": [1]},
                f"parsing {qtype} failed, expected String, but encountered Number",
                "$.args.permission.query_root_fields[0]",
            ),
            (
                {"query_root_fields": "select"},
                "parsing [] failed, expected Array, but encountered String",
                "$.args.permission.query_root_fields",
            ),
        ]
        for permission, message, path in cases:
            err = await refused(eng, select("bad", "article", **permission))
            assert (err.code, err.message, err.path) == ("parse-failed", message, path)
        err = await refused(
            eng,
            select(
                "bad", "author", columns=["name"], query_root_fields=["select", "select_aggregate"]
            ),
        )
        assert err.code == "invalid-configuration" and err.path == "$.args"
        assert err.message == (
            'Inconsistent object: in table "author": in permission for role "bad": '
            'The "select_aggregate" root field can only be enabled in the query_root_fields '
            'or  the subscription_root_fields when "allow_aggregations" is set to true'
        )
        err = await refused(
            eng, select("bad", "author", subscription_root_fields=["select_aggregate"])
        )
        assert err.code == "invalid-configuration"
        md = await eng.metadata({"type": "export_metadata", "args": {}}, "admin")
        assert "bad" not in json.dumps(md)
        # the whole document is checked the same way, at the entry's path
        article = next(t for t in md["tables"] if t["table"]["name"] == "article")
        k = md["tables"].index(article)
        article["select_permissions"][0]["permission"]["query_root_fields"] = ["selects"]
        err = await refused(eng, {"type": "replace_metadata", "args": md})
        assert err.code == "parse-failed"
        assert err.path == (
            f"$.args.tables[{k}].select_permissions[0].permission.query_root_fields[0]"
        )
        assert 'but found tag "selects"' in err.message

    run(check, url)


def test_subscriptions_follow_subscription_root_fields(url: str) -> None:
    """Through `Engine.subscribe` (what the websocket transports call): `pk` streams
    authors with `author_stream` but may not subscribe to `author`; `nothing` has no
    subscription root: 400 `validation-failed` "no subscriptions exist" (Hasura
    `Hasura.GraphQL.Execute`, `throwVE "no subscriptions exist"`)."""

    async def check(eng: Engine) -> None:
        got: list[Any] = []

        async def push(body: bytes) -> None:
            got.append(json.loads(body))

        live = "subscription { author { id } }"
        with pytest.raises(SvcError) as caught:
            await eng.subscribe({"query": live}, "nothing", {"x-svc-role": "nothing"}, push)
        assert (caught.value.code, caught.value.message) == (
            "validation-failed",
            "no subscriptions exist",
        )
        with pytest.raises(SvcError) as caught:
            await eng.subscribe({"query": live}, "pk", {"x-svc-role": "pk"}, push)
        assert caught.value.code == "validation-failed"
        stream = (
            "subscription { author_stream(batch_size: 5, cursor: {initial_value: {id: 0}}) "
            "{ id name } }"
        )
        handle = await eng.subscribe({"query": stream}, "pk", {"x-svc-role": "pk"}, push)
        try:
            for _ in range(50):
                if got:
                    break
                await asyncio.sleep(0.1)
            assert got[0] == {
                "data": {"author_stream": [{"id": 1, "name": "Ann"}, {"id": 2, "name": "Bob"}]}
            }
        finally:
            await handle.stop()

    run(check, url)
