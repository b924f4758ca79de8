"""The Relay API (`/v1beta1/relay`) after its review, against a real `svc serve`:

- connections count towards `SVC_GRAPHQL_MAX_ANSWER_ROWS` like the lists of
  `/v1/graphql` (`svc.plan.answer_size`: a connection estimated as a select of its rows
  under `first`/`last` and the permission's limit);
- the query and subscription roots follow the permission's `query_root_fields` and
  `subscription_root_fields` separately (the reference's
  `buildRelayQueryAndSubscriptionFields`: `QRFTSelect` / `SRFTSelect`);
- a table's connection is named after the table's identifier, its custom name or name
  (`mkRelayConnectionField`, `getTableIdentifierName`), not its custom select root;
- cursor and node-id key values are read as their column's type
  (`parseScalarValueColumnType`): `validation-failed` for a cursor (`parseConnectionSplit`),
  `parse-failed` at the node for a node id (the corpus's
  `graphql_query/relay/basic/node_id_errors/invalid_column_value.yaml`); `first`/`last`
  are non-negative (`nonNegativeInt`), by variable too;
- a cursor or node id too long or too deeply nested is the reference's 200
  `validation-failed`, not a 400;
- a role schema conflict `/v1/graphql` survives (a table custom-named like a scalar)
  leaves the Relay schema built without the culprit, as `svc.schema.role_schema` does.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

from svc.metadata.model import QualifiedName
from svc.plan.relay import RelayPlanner, _aeson_decode, decode_node_id
from tests.support import ServerProcess, author_article_steps, create_database, server_with

SQL = """
CREATE TABLE author (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE article (
  id serial PRIMARY KEY, title text NOT NULL, rating int, author_id int REFERENCES author(id)
);
CREATE TABLE item (id serial PRIMARY KEY, label text);
INSERT INTO author (name) SELECT 'a' || g FROM generate_series(1, 3) g;
INSERT INTO article (title, rating, author_id)
  SELECT 't' || g, g % 5, 1 + g % 3 FROM generate_series(1, 60) g;
INSERT INTO item (label) VALUES ('one'), ('two');
ANALYZE;
"""
USER = {"X-Svc-Role": "user"}
NOSUB = {"X-Svc-Role": "nosub"}
SUBONLY = {"X-Svc-Role": "subonly"}


def _select(table: str, role: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "create_select_permission",
        "args": {
            "table": table,
            "role": role,
            "permission": {"columns": "*", "filter": {}, **extra},
        },
    }


def steps() -> list[dict[str, Any]]:
    """`author`/`article` readable by `user`; `article` by `nosub` from the query root
    only and by `subonly` from the subscription root only; `item` custom-named `thing`
    with the select root `things_list`."""
    return [
        {"type": "run_sql", "args": {"sql": SQL}},
        *author_article_steps(),
        {
            "type": "track_table",
            "args": {
                "table": "item",
                "configuration": {
                    "custom_name": "thing",
                    "custom_root_fields": {"select": "things_list"},
                },
            },
        },
        _select("author", "user"),
        _select("article", "user"),
        _select("article", "nosub", query_root_fields=["select"], subscription_root_fields=[]),
        _select("article", "subonly", query_root_fields=[], subscription_root_fields=["select"]),
    ]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    env = {"SVC_GRAPHQL_MAX_ANSWER_ROWS": "1000"}
    with server_with(pg_url, steps(), env=env) as s:
        yield s


def relay(
    s: ServerProcess, query: str, variables: Any = None, headers: Any = None
) -> tuple[int, Any]:
    body: dict[str, Any] = {"query": query}
    if variables is not None:
        body["variables"] = variables
    r = s.client.post("/v1beta1/relay", json=body, headers=headers or {})
    return r.status_code, r.json()


def b64(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


def error(body: Any) -> tuple[str, str, str]:
    """(code, path, message) of the answer's only error."""
    assert "data" not in body, body
    (err,) = body["errors"]
    return err["extensions"]["code"], err["extensions"]["path"], err["message"]


# -- the answer bound -----------------------------------------------------------------

NESTED = (
    "{ article_connection%s { edges { node { author { articles_connection%s { edges {"
    " node { author { articles_connection%s { edges { node { id } } } } } } } } } } } }"
)


def test_a_nested_connection_is_refused_like_its_graphql_list(srv: ServerProcess) -> None:
    """60 articles x 20 per author x 20: about 24,000 rows, over the bound of 1,000, as
    `/v1/graphql`'s `article { author { articles { … } } }` (`svc.plan.answer_size`)."""
    gql = "{ article { author { articles { author { articles { id } } } } } }"
    body = srv.client.post("/v1/graphql", json={"query": gql}, headers=USER).json()
    assert body["errors"][0]["extensions"]["code"] == "answer-limit-exceeded", body
    status, body = relay(srv, NESTED % ("", "", ""), headers=USER)
    assert status == 200
    code, path, message = error(body)
    assert (code, path) == ("answer-limit-exceeded", "$")
    assert "SVC_GRAPHQL_MAX_ANSWER_ROWS" in message


def test_first_and_last_bound_the_estimate(srv: ServerProcess) -> None:
    """The same selection under `first`/`last` (a literal and a variable) is answered."""
    query = "query($m: Int, $n: Int) " + NESTED % ("(first: $m)", "(last: $n)", "(first: 2)")
    status, body = relay(srv, query, {"m": 3, "n": 2}, headers=USER)
    assert status == 200 and "errors" not in body, body
    edges = body["data"]["article_connection"]["edges"]
    assert len(edges) == 3
    assert len(edges[0]["node"]["author"]["articles_connection"]["edges"]) == 2
    status, body = relay(srv, query, {"m": 60, "n": 500}, headers=USER)
    assert error(body)[0] == "answer-limit-exceeded"


# -- roots ----------------------------------------------------------------------------

ROOTS = "{ __schema { queryType { fields { name } } subscriptionType { fields { name } } } }"


def _roots(srv: ServerProcess, headers: Any) -> tuple[set[str], set[str] | None]:
    status, body = relay(srv, ROOTS, headers=headers)
    assert status == 200, body
    schema = body["data"]["__schema"]
    query = {f["name"] for f in schema["queryType"]["fields"]}
    sub = schema["subscriptionType"]
    return query, None if sub is None else {f["name"] for f in sub["fields"]}


def test_subscription_roots_follow_subscription_root_fields(srv: ServerProcess) -> None:
    """`subscription_root_fields: []` hides the connection from subscriptions only;
    `query_root_fields: []` from queries only (`node` stays in both, as the reference's
    `buildRelayRoleContext` adds it to both)."""
    query, sub = _roots(srv, NOSUB)
    assert "article_connection" in query
    assert sub is not None and "article_connection" not in sub and "node" in sub
    query, sub = _roots(srv, SUBONLY)
    assert "article_connection" not in query and "node" in query
    assert sub is not None and "article_connection" in sub
    _, body = relay(srv, "{ article_connection { edges { cursor } } }", headers=SUBONLY)
    assert error(body)[0] == "validation-failed"


def test_the_connection_is_named_after_the_table_identifier(srv: ServerProcess) -> None:
    """`item` custom-named `thing` with the select root `things_list`: `thing_connection`."""
    query, sub = _roots(srv, None)
    assert "thing_connection" in query and "things_list_connection" not in query
    assert sub is not None and "thing_connection" in sub
    _, body = relay(srv, "{ thing_connection { edges { node { label } } } }")
    assert body == {
        "data": {
            "thing_connection": {"edges": [{"node": {"label": "one"}}, {"node": {"label": "two"}}]}
        }
    }


# -- values ---------------------------------------------------------------------------

CONN = "query($a: String) { article_connection(first: 2, after: $a) { edges { node { title } } } }"
ARGS = "$.selectionSet.article_connection.args"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "parsing Int32 failed, expected Number, but encountered Boolean"),
        ("abc", "parsing Int32 failed, expected Number, but encountered String"),
        (1.5, "parsing Int32 failed, unexpected floating number 1.5"),
        (
            2**40,
            "parsing Int32 failed, value is either floating or will cause over or "
            f"underflow {2**40}",
        ),
    ],
)
def test_a_cursor_value_of_the_wrong_type_is_refused(
    srv: ServerProcess, value: Any, message: str
) -> None:
    """A cursor value that does not parse as its column's type: `validation-failed`
    (`parseConnectionSplit` with `parseScalarValueColumnType`), not Postgres's
    `data-exception`."""
    status, body = relay(srv, CONN, {"a": b64({"id": value})})
    assert status == 200
    assert error(body) == ("validation-failed", ARGS, message)


def test_a_cursor_of_the_right_type_pages(srv: ServerProcess) -> None:
    """A whole-number cursor value (`2`, `2.0`) pages; a null one ends the pages."""
    for value in (2, 2.0):
        _, body = relay(srv, CONN, {"a": b64({"id": value})})
        assert body == {
            "data": {
                "article_connection": {
                    "edges": [{"node": {"title": "t3"}}, {"node": {"title": "t4"}}]
                }
            }
        }
    _, body = relay(srv, CONN, {"a": b64({"id": None})})
    assert body == {"data": {"article_connection": {"edges": []}}}


def test_a_negative_first_or_last_by_variable_is_refused(srv: ServerProcess) -> None:
    """`first`/`last` are non-negative (`nonNegativeInt`) also by variable, before
    Postgres's "LIMIT must not be negative"; a later non-negative value is answered."""
    for name in ("first", "last"):
        query = f"query($n: Int) {{ article_connection({name}: $n) {{ edges {{ cursor }} }} }}"
        status, body = relay(srv, query, {"n": -1})
        assert status == 200
        code, _, message = error(body)
        assert (code, message) == ("validation-failed", f"unexpected negative value for {name}")
        status, body = relay(srv, query, {"n": 1})
        assert len(body["data"]["article_connection"]["edges"]) == 1, body


NODE = "query($i: ID!) { node(id: $i) { id ... on author { name } } }"


def test_a_node_id_key_value_is_read_as_its_type(srv: ServerProcess) -> None:
    """`1.5` for an integer key: `parse-failed` at the node, as the corpus's
    `invalid_column_value.yaml` answers a value of the wrong JSON type."""
    status, body = relay(srv, NODE, {"i": b64([1, "public", "author", 1.5])})
    assert status == 200
    assert error(body) == (
        "parse-failed",
        "$.selectionSet.node",
        'value of column "id" in node id: parsing Int32 failed, unexpected floating number 1.5',
    )
    status, body = relay(srv, NODE, {"i": b64([1, "public", "author", 1])})
    assert body["data"]["node"]["name"] == "a1"


def test_a_deep_or_long_cursor_or_node_id_is_a_validation_error(srv: ServerProcess) -> None:
    """200,000 nested `[` (base64): the reference's 200 `validation-failed`, not 400."""
    deep = base64.b64encode(b"[" * 200_000).decode()
    status, body = relay(srv, CONN, {"a": deep})
    assert status == 200
    assert error(body) == (
        "validation-failed",
        ARGS,
        'the "after" or "before" cursor is invalid',
    )
    inner = base64.b64encode(b'{"id":' + b"[" * 200_000).decode()
    status, body = relay(srv, CONN, {"a": inner})
    assert (status, error(body)[0]) == (200, "validation-failed")
    status, body = relay(srv, NODE, {"i": base64.b64encode(b"[1," + b"[" * 200_000).decode()})
    assert status == 200
    code, path, message = error(body)
    assert (code, path) == ("validation-failed", "$.selectionSet.node.args.id")
    assert message.startswith("invalid node id: Error in $: ")


def test_json_nested_deeper_than_python_recurses_is_a_value_error() -> None:
    """`_aeson_decode` turns `RecursionError` into the reference's message (a text within
    the length bound can still be too deep for a smaller recursion limit)."""
    with pytest.raises(ValueError, match=r"^Error in \$: Failed reading"):
        _aeson_decode(b"[" * 200_000)
    with pytest.raises(ValueError, match=r"^Error in \$: Failed reading"):
        decode_node_id("W" * 9000)


class _View:
    """A role view whose table list must not be built (`_node_table` looks one up)."""

    def __init__(self, allowed: set[QualifiedName]) -> None:
        self.allowed = allowed

    def tables(self) -> Any:
        raise AssertionError("view.tables() built for one node id")

    def selectable(self, name: QualifiedName) -> bool:
        return name in self.allowed


class _Table:
    primary_key = ("id",)
    gql_name = "author"


def test_the_node_table_is_one_lookup() -> None:
    """`_node_table` asks the view about the id's table alone."""
    seen, hidden = QualifiedName("author"), QualifiedName("secret")
    planner: Any = object.__new__(RelayPlanner)
    planner.tables = {seen: _Table(), hidden: _Table()}
    planner.view = _View({seen})
    assert RelayPlanner._node_table(planner, seen) is planner.tables[seen]
    assert RelayPlanner._node_table(planner, hidden) is None
    assert RelayPlanner._node_table(planner, QualifiedName("absent")) is None


# -- a schema conflict ----------------------------------------------------------------


def _execute(url: str, sql: str) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(go())


def test_a_schema_conflict_leaves_the_culprit_out_of_relay_too(pg_url: str) -> None:
    """A table custom-named `numeric` once another table gains a `numeric` column (the
    case of `tests/test_nothing_silent.py`): `/v1/graphql` serves the role without the
    culprit, and so does `/v1beta1/relay` (`svc.schema.role_schema` with `relay`), no
    500 for every request of the role."""
    url = create_database(pg_url)
    _execute(
        url,
        "CREATE TABLE author (id int PRIMARY KEY, name text);"
        "CREATE TABLE article (id int PRIMARY KEY, title text);"
        "INSERT INTO author VALUES (1, 'ann'); INSERT INTO article VALUES (7, 't');",
    )
    srv = ServerProcess(url)
    try:
        every = {"columns": "*", "filter": {}}
        doc = {
            "version": 2,
            "tables": [
                {
                    "table": {"schema": "public", "name": "author"},
                    "select_permissions": [{"role": "user", "permission": every}],
                },
                {
                    "table": {"schema": "public", "name": "article"},
                    "configuration": {"custom_name": "numeric"},
                    "select_permissions": [{"role": "user", "permission": every}],
                },
            ],
        }
        body = {
            "type": "replace_metadata",
            "version": 2,
            "args": {"metadata": doc, "allow_inconsistent_metadata": False},
        }
        assert srv.query(body).status_code == 200
        _execute(url, "ALTER TABLE author ADD COLUMN price numeric DEFAULT 2.5")
        assert srv.query({"type": "reload_metadata", "args": {}}).status_code == 200
        query = "{ author_connection { edges { node { name price } } } }"
        want = {"data": {"author_connection": {"edges": [{"node": {"name": "ann", "price": 2.5}}]}}}
        for headers in ({}, USER):
            gql = srv.client.post(
                "/v1/graphql", json={"query": "{ author { price } }"}, headers=headers
            )
            assert gql.json() == {"data": {"author": [{"price": 2.5}]}}
            r = srv.client.post("/v1beta1/relay", json={"query": query}, headers=headers)
            assert (r.status_code, r.json()) == (200, want)
            missing = relay(srv, "{ numeric_connection { edges { cursor } } }", headers=headers)
            assert error(missing[1])[0] == "validation-failed"
    finally:
        srv.stop()
