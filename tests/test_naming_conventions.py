"""Naming conventions (`svc/naming.py`, `svc/schema/naming.py`, `svc/ir/source_tables.py`)
against a real `svc serve` with `SVC_GRAPHQL_EXPERIMENTAL_FEATURES=naming_convention`.

Followed (the reference's `Hasura.RQL.Types.SourceCustomization`, at the corpus commit of
`../shared/conformance/naming_conventions`, WAVE3.md section 5): under `graphql-default`
root fields, columns and generated fields and arguments are camelCased, type names
PascalCased (after the source's type name prefix and suffix), `order_by` and enum-table
values upper-cased; a table `custom_name` is converted with the names made from it, custom
root field and column names are verbatim, and the root field prefix and suffix are
concatenated verbatim around the converted name. Relationship names stay verbatim (the
reference's `relationshipField`: `relFieldName` as given, `<rel>_aggregate` converted).
As in the reference, Postgres builds the answer, so an enum column answers the table's
text (`Sunday`), while the enum's values are `SUNDAY`.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import websockets
from graphql import get_introspection_query

from svc.naming import GRAPHQL_DEFAULT, HASURA_DEFAULT, enum_case, field_case, type_case
from tests.support import ROOT, ServerProcess, create_database
from tests.test_ws_node import NODE_DIR, _install

pytestmark = pytest.mark.xdist_group("naming_conventions")

FEATURE = {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "naming_convention"}
GLOBAL = {**FEATURE, "SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION": GRAPHQL_DEFAULT}

SOURCE_SQL = """
CREATE TABLE author_local (id serial PRIMARY KEY, name text UNIQUE, birth_year int);
INSERT INTO author_local (name, birth_year) VALUES ('Author 1', 1970), ('Author 2', 1980);
CREATE TABLE article_local (
  id serial PRIMARY KEY, author_id int REFERENCES author_local, title text, meta jsonb);
INSERT INTO article_local (author_id, title, meta) VALUES
  (1, 'Article 1', '{"a": 1}'), (1, 'Article 2', NULL), (2, 'New Article 1', NULL);
CREATE TABLE days_of_the_week (day_name text PRIMARY KEY);
INSERT INTO days_of_the_week VALUES ('Monday'), ('Friday'), ('Sunday');
CREATE TABLE users (id serial PRIMARY KEY, favourite_day text NOT NULL
  REFERENCES days_of_the_week);
INSERT INTO users (favourite_day) VALUES ('Sunday');
CREATE FUNCTION search_authors(name_prefix text) RETURNS SETOF author_local
  AS $$ SELECT * FROM author_local WHERE name LIKE name_prefix || '%' $$ LANGUAGE sql STABLE;
CREATE FUNCTION title_with(article_row article_local, end_text text) RETURNS text
  AS $$ SELECT article_row.title || end_text $$ LANGUAGE sql STABLE;
"""
MAIN_SQL = "CREATE TABLE author (id int PRIMARY KEY, full_name text);"
MAIN_SQL += "INSERT INTO author VALUES (1, 'main');"


def sql(url: str, text: str) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(text)
        finally:
            await conn.close()

    asyncio.run(go())


def ok(srv: ServerProcess, type_: str, args: Any, url: str = "/v1/metadata") -> Any:
    r = srv.client.post(url, json={"type": type_, "args": args})
    assert r.status_code == 200, r.text
    return r.json()


def data(srv: ServerProcess, query: str, variables: dict[str, Any] | None = None) -> Any:
    body = srv.graphql(query, variables)
    assert "errors" not in body, body
    return body["data"]


def add_source(srv: ServerProcess, name: str, env: str, customization: dict[str, Any]) -> None:
    info = {"database_url": {"from_env": env}}
    args = {"name": name, "configuration": {"connection_info": info}}
    ok(srv, "pg_add_source", {**args, "customization": customization})


@pytest.fixture(scope="module")
def urls(pg_url: str) -> tuple[str, str, str]:
    main, one, two = (create_database(pg_url, p) for p in ("ncm", "nc1", "nc2"))
    sql(main, MAIN_SQL)
    sql(one, SOURCE_SQL)
    sql(two, SOURCE_SQL)
    return main, one, two


@pytest.fixture(scope="module")
def srv(urls: tuple[str, str, str]) -> Iterator[ServerProcess]:
    """`default` (hasura-default, `author`), `pg1` (graphql-default) and `pg2`
    (graphql-default with custom names, root field and type name affixes)."""
    features = {"SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "naming_convention,group_by_aggregations"}
    env = {**features, "SOURCE_ONE": urls[1], "SOURCE_TWO": urls[2]}
    server = ServerProcess(urls[0], env=env)
    try:
        ok(server, "pg_track_table", {"table": "author"})
        add_source(server, "pg1", "SOURCE_ONE", {"naming_convention": GRAPHQL_DEFAULT})
        for name in ("author_local", "article_local", "users"):
            ok(server, "pg_track_table", {"source": "pg1", "table": name})
        ok(
            server,
            "pg_track_table",
            {"source": "pg1", "table": "days_of_the_week", "is_enum": True},
        )
        rel = {"source": "pg1", "table": "article_local", "name": "author_of_article"}
        ok(
            server,
            "pg_create_object_relationship",
            {**rel, "using": {"foreign_key_constraint_on": "author_id"}},
        )
        fk = {"table": "article_local", "column": "author_id"}
        arr = {"source": "pg1", "table": "author_local", "name": "articles"}
        ok(
            server,
            "pg_create_array_relationship",
            {**arr, "using": {"foreign_key_constraint_on": fk}},
        )
        ok(server, "pg_track_function", {"source": "pg1", "function": "search_authors"})
        definition = {"function": "title_with", "table_argument": "article_row"}
        computed = {"source": "pg1", "table": "article_local", "name": "title_with"}
        ok(server, "pg_add_computed_field", {**computed, "definition": definition})
        custom = {
            "naming_convention": GRAPHQL_DEFAULT,
            "root_fields": {"prefix": "test", "suffix": "Query"},
            "type_names": {"prefix": "t_"},
        }
        add_source(server, "pg2", "SOURCE_TWO", custom)
        configuration = {
            "custom_name": "authorDetails",
            "custom_root_fields": {"select_by_pk": "author_detail", "insert_one": "add_author"},
            "column_config": {"birth_year": {"custom_name": "born_in"}},
        }
        ok(
            server,
            "pg_track_table",
            {"source": "pg2", "table": "author_local", "configuration": configuration},
        )
        spaced = {"naming_convention": GRAPHQL_DEFAULT, "root_fields": {"namespace": "shop"}}
        add_source(server, "pg3", "SOURCE_TWO", spaced)
        shopper = {"source": "pg3", "table": "users", "configuration": {"custom_name": "shopper"}}
        ok(server, "pg_track_table", shopper)
        yield server
    finally:
        server.stop()


def test_the_rule() -> None:
    """`svc.naming`: `fromSnake` words (a leading underscore kept), camel, Pascal, upper;
    `hasura-default` leaves every name as it is; a result that is no GraphQL name is not
    used."""
    assert field_case(GRAPHQL_DEFAULT, "author_local_by_pk") == "authorLocalByPk"
    assert field_case(GRAPHQL_DEFAULT, "_is_null") == "_isNull"
    assert field_case(GRAPHQL_DEFAULT, "authorDetails_by_pk") == "authorDetailsByPk"
    assert field_case(GRAPHQL_DEFAULT, "_set") == "_set"
    assert type_case(GRAPHQL_DEFAULT, "String_comparison_exp") == "StringComparisonExp"
    assert type_case(GRAPHQL_DEFAULT, "t_author_local_bool_exp") == "TAuthorLocalBoolExp"
    assert enum_case(GRAPHQL_DEFAULT, "asc_nulls_first") == "ASC_NULLS_FIRST"
    assert enum_case(GRAPHQL_DEFAULT, "é") == "é"  # not a GraphQL name either way
    for rule in (field_case, type_case, enum_case):
        assert rule(HASURA_DEFAULT, "author_local_by_pk") == "author_local_by_pk"


def test_queries_answer_in_camel_case(srv: ServerProcess) -> None:
    """Root fields, columns, arguments and `<rel>_aggregate` converted; the relationship
    `author_of_article` verbatim; the hasura-default `default` source unchanged."""
    q = """{
      authorLocal(orderBy: {id: ASC}, where: {birthYear: {_gt: 1960}}) {
        __typename id birthYear
        articles(orderBy: {id: DESC}, limit: 1) { title authorId }
        articlesAggregate { aggregate { count } }
      }
      articleLocal(distinctOn: [authorId], orderBy: [{authorId: DESC}, {id: ASC}]) {
        id author_of_article { name }
      }
      authorLocalByPk(id: 2) { name }
      author(where: {full_name: {_is_null: false}}) { full_name __typename }
    }"""
    assert data(srv, q) == {
        "authorLocal": [
            {
                "__typename": "AuthorLocal",
                "id": 1,
                "birthYear": 1970,
                "articles": [{"title": "Article 2", "authorId": 1}],
                "articlesAggregate": {"aggregate": {"count": 2}},
            },
            {
                "__typename": "AuthorLocal",
                "id": 2,
                "birthYear": 1980,
                "articles": [{"title": "New Article 1", "authorId": 2}],
                "articlesAggregate": {"aggregate": {"count": 1}},
            },
        ],
        "articleLocal": [
            {"id": 3, "author_of_article": {"name": "Author 2"}},
            {"id": 1, "author_of_article": {"name": "Author 1"}},
        ],
        "authorLocalByPk": {"name": "Author 2"},
        "author": [{"full_name": "main", "__typename": "author"}],
    }


def test_functions_and_computed_fields(srv: ServerProcess) -> None:
    """A tracked function's root fields and arguments converted (the reference's
    `applyFieldNameCaseCust` of each argument), its `<fn>_args` type PascalCased; a
    computed field's name verbatim, its arguments converted."""
    q = """{
      searchAuthors(args: {namePrefix: "Author 1"}) { id }
      searchAuthorsAggregate(args: {namePrefix: "Author"}) { aggregate { count } }
      articleLocalByPk(id: 1) { title_with(args: {endText: "!"}) }
      fn: __type(name: "SearchAuthorsArgs") { inputFields { name } }
    }"""
    assert data(srv, q) == {
        "searchAuthors": [{"id": 1}],
        "searchAuthorsAggregate": {"aggregate": {"count": 2}},
        "articleLocalByPk": {"title_with": "Article 1!"},
        "fn": {"inputFields": [{"name": "namePrefix"}]},
    }


def test_aggregates_operators_and_variables(srv: ServerProcess) -> None:
    q = """query ($w: ArticleLocalBoolExp!, $o: [ArticleLocalOrderBy!]) {
      articleLocalAggregate(where: $w, orderBy: $o) {
        __typename
        aggregate { __typename count max { id } stddevPop { id } varSamp { authorId } }
        nodes { id meta(path: "a") }
      }
    }"""
    variables = {"w": {"meta": {"_isNull": False}}, "o": [{"authorId": "ASC"}]}
    assert data(srv, q, variables) == {
        "articleLocalAggregate": {
            "__typename": "ArticleLocalAggregate",
            "aggregate": {
                "__typename": "ArticleLocalAggregateFields",
                "count": 1,
                "max": {"id": 1},
                "stddevPop": {"id": 0},
                "varSamp": {"authorId": None},
            },
            "nodes": [{"id": 1, "meta": 1}],
        }
    }
    # the generated names are not there: the hasura-default spellings are refused
    body = srv.graphql("{ articleLocal(order_by: {id: asc}) { id } }")
    assert body["errors"][0]["extensions"]["code"] == "validation-failed"
    body = srv.graphql("{ article_local { id } }")
    assert body["errors"][0]["extensions"]["code"] == "validation-failed"


def test_mutations(srv: ServerProcess) -> None:
    q = """mutation {
      insertAuthorLocal(
        objects: [{id: 10, name: "Author 10", birthYear: 1999,
                   articles: {data: [{title: "A10"}]}}],
        onConflict: {constraint: author_local_pkey, updateColumns: [name]}
      ) { __typename affectedRows returning { __typename id birthYear } }
      updateAuthorLocalByPk(pkColumns: {id: 10}, _inc: {birthYear: 1}) { birthYear }
      updateAuthorLocal(where: {id: {_eq: 10}}, _set: {name: "Ten"}) { affectedRows }
      deleteArticleLocal(where: {title: {_eq: "A10"}}) { affectedRows }
      deleteAuthorLocalByPk(id: 10) { name }
    }"""
    assert data(srv, q) == {
        "insertAuthorLocal": {
            "__typename": "AuthorLocalMutationResponse",
            "affectedRows": 2,
            "returning": [{"__typename": "AuthorLocal", "id": 10, "birthYear": 1999}],
        },
        "updateAuthorLocalByPk": {"birthYear": 2000},
        "updateAuthorLocal": {"affectedRows": 1},
        "deleteArticleLocal": {"affectedRows": 1},
        "deleteAuthorLocalByPk": {"name": "Ten"},
    }


def test_enum_tables_and_generated_enums(srv: ServerProcess) -> None:
    q = """query ($d: DaysOfTheWeekEnum!) {
      users(where: {favouriteDay: {_eq: SUNDAY}}) { favouriteDay }
      none: users(where: {favouriteDay: {_eq: $d}}) { id }
      days: __type(name: "DaysOfTheWeekEnum") { enumValues { name } }
      order: __type(name: "OrderBy") { enumValues { name } }
      plain: __type(name: "order_by") { enumValues { name } }
      cmp: __type(name: "StringComparisonExp") { inputFields { name } }
      old: __type(name: "String_comparison_exp") { inputFields { name } }
      columns: __type(name: "AuthorLocalSelectColumn") { enumValues { name } }
    }"""
    got = data(srv, q, {"d": "FRIDAY"})
    assert got["users"] == [{"favouriteDay": "Sunday"}]  # the table's text, as the reference
    assert got["none"] == []
    assert [v["name"] for v in got["days"]["enumValues"]] == ["FRIDAY", "MONDAY", "SUNDAY"]
    assert [v["name"] for v in got["order"]["enumValues"]] == [
        "ASC",
        "ASC_NULLS_FIRST",
        "ASC_NULLS_LAST",
        "DESC",
        "DESC_NULLS_FIRST",
        "DESC_NULLS_LAST",
    ]
    assert "asc_nulls_first" in [v["name"] for v in got["plain"]["enumValues"]]
    new = {f["name"] for f in got["cmp"]["inputFields"]}
    assert {"_isNull", "_nilike", "_eq"} <= new and "_is_null" not in new
    assert "_is_null" in {f["name"] for f in got["old"]["inputFields"]}
    assert {v["name"] for v in got["columns"]["enumValues"]} == {"id", "name", "birthYear"}
    # an enum value of a variable reaches Postgres as the table's text
    inserted = data(
        srv,
        "mutation ($d: DaysOfTheWeekEnum!) "
        "{ insertUsersOne(object: {favouriteDay: $d}) { favouriteDay } }",
        {"d": "FRIDAY"},
    )
    assert inserted == {"insertUsersOne": {"favouriteDay": "Friday"}}


def test_custom_names_and_affixes_take_precedence(srv: ServerProcess) -> None:
    """pg2: `custom_name` converted (`authorDetails` -> `AuthorDetails`, after the type
    prefix `t_`: `TAuthorDetails`), custom root fields and the custom column name verbatim,
    the root field prefix and suffix verbatim around the converted generated names."""
    q = """{
      testauthorDetailsQuery(orderBy: {id: ASC}, limit: 1) { __typename id born_in }
      author_detail: testauthor_detailQuery(id: 2) { name }
      testauthorDetailsAggregateQuery { __typename aggregate { count } }
    }"""
    assert data(srv, q) == {
        "testauthorDetailsQuery": [{"__typename": "TAuthorDetails", "id": 1, "born_in": 1970}],
        "author_detail": {"name": "Author 2"},
        "testauthorDetailsAggregateQuery": {
            "__typename": "TAuthorDetailsAggregate",
            "aggregate": {"count": 2},
        },
    }
    added = data(srv, "mutation { testadd_authorQuery(object: {id: 9, born_in: 1}) { id } }")
    assert added == {"testadd_authorQuery": {"id": 9}}


def test_a_namespace_of_a_graphql_default_source(srv: ServerProcess) -> None:
    """The namespace field is verbatim, its type PascalCased (`shop_query` -> `ShopQuery`,
    the reference's `mkTypename` of the namespace type)."""
    q = "{ shop { __typename shopperByPk(id: 1) { favouriteDay } } }"
    assert data(srv, q) == {
        "shop": {"__typename": "ShopQuery", "shopperByPk": {"favouriteDay": "Sunday"}}
    }


def test_subscriptions_answer_in_camel_case(srv: ServerProcess) -> None:
    async def run() -> list[Any]:
        url = srv.url.replace("http", "ws", 1) + "/v1/graphql"
        async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "connection_ack"
            out = []
            for n, query in enumerate(
                (
                    "subscription { authorLocalByPk(id: 1) { birthYear } }",
                    "subscription ($w: AuthorLocalBoolExp!, $o: OrderBy!) "
                    "{ authorLocal(where: $w, orderBy: {birthYear: $o}) { birthYear } }",
                    "subscription { authorLocalStream(batchSize: 1, cursor: "
                    "{initialValue: {birthYear: 1975}, ordering: ASC}) { id birthYear } }",
                )
            ):
                variables = {"w": {"birthYear": {"_isNull": False}}, "o": "DESC_NULLS_LAST"}
                payload = {"query": query, "variables": variables if "$w" in query else {}}
                msg = {"id": str(n), "type": "subscribe", "payload": payload}
                await ws.send(json.dumps(msg))
                out.append(json.loads(await asyncio.wait_for(ws.recv(), 10))["payload"])
            return out

    assert asyncio.run(run()) == [
        {"data": {"authorLocalByPk": {"birthYear": 1970}}},
        {"data": {"authorLocal": [{"birthYear": 1980}, {"birthYear": 1970}]}},
        {"data": {"authorLocalStream": [{"id": 2, "birthYear": 1980}]}},
    ]


def test_the_relay_api_is_named_by_the_convention(srv: ServerProcess) -> None:
    """`/v1beta1/relay` (`svc.schema.relay`) goes through the same rule: the connection
    root camelCased (the reference's `mkRelayConnectionField`), its types PascalCased,
    `orderBy` converted; Relay's own names (`pageInfo`, `hasNextPage`) as they are."""
    q = """{ authorLocalConnection(first: 1, orderBy: {id: DESC}) {
      __typename edges { node { __typename birthYear } } pageInfo { hasNextPage } } }"""
    r = srv.client.post("/v1beta1/relay", json={"query": q})
    assert r.json() == {
        "data": {
            "authorLocalConnection": {
                "__typename": "AuthorLocalConnection",
                "edges": [{"node": {"__typename": "AuthorLocal", "birthYear": 1980}}],
                "pageInfo": {"hasNextPage": True},
            }
        }
    }


def test_grouped_aggregates_are_named_by_the_convention(srv: ServerProcess) -> None:
    """`svc.schema.groups` (with `group_by_aggregations`): the root `<select>_groups`
    converted whole, its arguments and types by the same rule."""
    q = """{ articleLocalGroups(groupBy: [authorId], orderBy: {keys: {authorId: ASC}}) {
      __typename keys { authorId } aggregate { count } } }"""
    assert data(srv, q) == {
        "articleLocalGroups": [
            {"__typename": "ArticleLocalGroup", "keys": {"authorId": 1}, "aggregate": {"count": 2}},
            {"__typename": "ArticleLocalGroup", "keys": {"authorId": 2}, "aggregate": {"count": 1}},
        ]
    }


def test_explain_names_the_converted_root(srv: ServerProcess) -> None:
    body = {"query": {"query": "{ a: authorLocal(orderBy: {id: ASC}) { birthYear } }"}}
    r = srv.client.post("/v1/graphql/explain", json=body)
    assert r.status_code == 200, r.text
    [step] = r.json()
    assert step["field"] == "a" and '"author_local"' in step["sql"]


def test_graphql_js_validates_the_schema(srv: ServerProcess) -> None:
    """graphql-js (`tests/node`, `graphql` 16) builds the introspected schema and
    `validateSchema` finds nothing wrong."""
    reason = _install()
    if reason is not None:
        pytest.skip(reason)
    introspection = data(srv, get_introspection_query())
    names = {t["name"] for t in introspection["__schema"]["types"]}
    assert {"AuthorLocal", "ArticleLocalBoolExp", "OrderBy", "TAuthorDetails"} <= names
    assert {"author", "order_by", "String_comparison_exp"} <= names
    script = (
        'import { buildClientSchema, validateSchema } from "graphql";'
        'let text = ""; process.stdin.on("data", (c) => (text += c));'
        'process.stdin.on("end", () => { const s = buildClientSchema(JSON.parse(text));'
        "console.log(JSON.stringify(validateSchema(s).map((e) => e.message))); });"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        input=json.dumps(introspection),
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_the_global_default_and_the_feature(pg_url: str, tmp_path: Path) -> None:
    """`SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION=graphql-default` names every source without
    its own convention (here `default`), only with the experimental feature; `svc compile`
    reads the same environment and plans the same names."""
    main = create_database(pg_url, "ncg")
    sql(main, MAIN_SQL)
    server = ServerProcess(main, env=GLOBAL)
    try:
        ok(server, "pg_track_table", {"table": "author"})
        assert data(server, "{ authorByPk(id: 1) { fullName __typename } }") == {
            "authorByPk": {"fullName": "main", "__typename": "Author"}
        }
        from svc.cli import main as cli

        assert cli(["metadata", "export", "--endpoint", server.url, "--dir", str(tmp_path)]) == 0
    finally:
        server.stop()
    query = tmp_path / "q.graphql"
    query.write_text("{ authorByPk(id: 1) { fullName } }")
    compile_args = ["--dir", str(tmp_path), "--database-url", main, "--print-sql", str(query)]
    compiled = _svc("compile", *compile_args, "--role", "admin", env=GLOBAL)
    assert compiled.returncode == 0, compiled.stderr
    assert '"fullName"' in compiled.stdout and '"full_name"' in compiled.stdout
    without = {**GLOBAL, "SVC_GRAPHQL_EXPERIMENTAL_FEATURES": "streaming_subscriptions"}
    refused = _svc("compile", *compile_args, "--role", "admin", env=without)
    assert refused.returncode == 1
    assert "authorByPk" in refused.stderr
    server = ServerProcess(main, env=without)
    try:
        assert data(server, "{ author_by_pk(id: 1) { full_name } }") == {
            "author_by_pk": {"full_name": "main"}
        }
    finally:
        server.stop()


def test_a_bad_global_default_is_refused_at_start() -> None:
    """A value other than the two conventions stops the server (`Config.from_env`), even
    without the feature; with the feature off a good one is not applied."""
    from svc.config import Config, default_naming_convention

    with pytest.raises(ValueError, match="SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION"):
        Config.from_env({"SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION": "camel"})

    with pytest.raises(ValueError, match="SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION"):
        default_naming_convention({**FEATURE, "SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION": "camel"})
    assert (
        default_naming_convention({"SVC_GRAPHQL_DEFAULT_NAMING_CONVENTION": GRAPHQL_DEFAULT})
        is None
    )


def _svc(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "svc", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_two_types_of_one_converted_name_conflict(srv: ServerProcess) -> None:
    """`author_local` and `"authorLocal"` are two names in `hasura-default` and one
    (`authorLocal`, `AuthorLocal`) in `graphql-default`: tracking the second is refused
    with the reference's conflict (500 `unexpected`), and the schema stays served."""
    create = {"source": "pg1", "sql": 'CREATE TABLE "authorLocal" (id int PRIMARY KEY)'}
    ok(srv, "run_sql", create, url="/v2/query")
    r = srv.client.post(
        "/v1/metadata",
        json={"type": "pg_track_table", "args": {"source": "pg1", "table": "authorLocal"}},
    )
    assert r.status_code == 500, r.text
    assert r.json()["code"] == "unexpected"
    assert "conflicting definitions" in r.json()["error"]
    assert "'authorLocal'" in r.json()["error"]
    assert data(srv, "{ authorLocalByPk(id: 1) { id } }") == {"authorLocalByPk": {"id": 1}}
    ok(srv, "run_sql", {"source": "pg1", "sql": 'DROP TABLE "authorLocal"'}, url="/v2/query")


def test_an_actions_relationships_to_a_graphql_default_table(pg_url: str) -> None:
    """An action's output type keeps its names; its relationships to a table of a
    `graphql-default` source (here `default`, by the global default) are typed and take
    arguments as the table's own fields do (`AuthorLocal`, `orderBy`, `distinctOn`)."""
    from tests.http_fixture import HttpFixture, Reply

    database = create_database(pg_url, "nca")
    sql(database, SOURCE_SQL)
    types = {
        "objects": [
            {
                "name": "Found",
                "fields": [{"name": "author_id", "type": "Int!"}],
                "relationships": [
                    {
                        "name": "author",
                        "type": "object",
                        "remote_table": "author_local",
                        "field_mapping": {"author_id": "id"},
                    },
                    {
                        "name": "articles",
                        "type": "array",
                        "remote_table": "article_local",
                        "field_mapping": {"author_id": "author_id"},
                    },
                ],
            }
        ]
    }
    with HttpFixture() as hook:
        hook.route("/found", lambda req: Reply(200, b'[{"author_id": 1}, {"author_id": 2}]'))
        server = ServerProcess(database, env=GLOBAL)
        try:
            definition = {
                "output_type": "[Found!]!",
                "handler": hook.url("/found"),
                "type": "query",
            }
            steps = [
                {"type": "track_table", "args": {"table": "author_local"}},
                {"type": "track_table", "args": {"table": "article_local"}},
                {"type": "set_custom_types", "args": types},
                {"type": "create_action", "args": {"name": "found", "definition": definition}},
            ]
            r = server.query({"type": "bulk", "args": steps})
            assert r.status_code == 200, r.text
            q = """{ found { __typename author_id author { __typename birthYear }
              articles(orderBy: {id: DESC}, distinctOn: [id]) { id } } }"""
            assert data(server, q) == {
                "found": [
                    {
                        "__typename": "Found",
                        "author_id": 1,
                        "author": {"__typename": "AuthorLocal", "birthYear": 1970},
                        "articles": [{"id": 2}, {"id": 1}],
                    },
                    {
                        "__typename": "Found",
                        "author_id": 2,
                        "author": {"__typename": "AuthorLocal", "birthYear": 1980},
                        "articles": [{"id": 3}],
                    },
                ]
            }
        finally:
            server.stop()
