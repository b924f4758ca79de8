"""The Relay API (`/v1beta1/relay`, `svc.schema.relay`, `svc.plan.relay`, `svc.sql.relay`)
against a real `svc serve`: connections paged forwards and backwards with `where` and
`order_by`, `node`, permissions through both, nested and function connections, the
websocket transports on the Relay path, explain with `is_relay`.

Expected values follow the reference (`Hasura/Backends/Postgres/Translate/Select/
Internal/GenerateSelect.hs` `connectionToSelectWith`: `hasNextPage`/`hasPreviousPage` are
whether rows of the whole ordered selection lie after/before the page).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import websockets

from tests.support import ServerProcess, author_article_steps, server_with

SQL = """
CREATE TABLE author (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE article (
  id serial PRIMARY KEY, title text NOT NULL, rating int, author_id int REFERENCES author(id)
);
CREATE TABLE tag (label text);  -- no primary key: no Node, no connection
INSERT INTO author (name) VALUES ('Ada'), ('Bob'), ('Cy');
INSERT INTO article (title, rating, author_id) VALUES
  ('a1', 5, 1), ('a2', 3, 1), ('a3', 4, 2), ('a4', 1, 2), ('a5', 2, 3), ('a6', 5, 1);
CREATE FUNCTION rated(least_rating int) RETURNS SETOF article AS
  $$ SELECT * FROM article WHERE rating >= least_rating $$ LANGUAGE sql STABLE;
"""
USER = {"X-Svc-Role": "user", "X-Svc-User-Id": "1"}


def steps() -> list[dict[str, Any]]:
    """Tables, relationships, the function and the `user` role's permissions: its own
    articles (by `author_id`), every author, no `tag`."""
    return [
        {"type": "run_sql", "args": {"sql": SQL}},
        *author_article_steps(),
        {"type": "track_table", "args": "tag"},
        {"type": "track_function", "args": "rated"},
        {
            "type": "create_select_permission",
            "args": {
                "table": "article",
                "role": "user",
                "permission": {
                    "columns": ["id", "title", "rating", "author_id"],
                    "filter": {"author_id": {"_eq": "X-Svc-User-Id"}},
                },
            },
        },
        {
            "type": "create_select_permission",
            "args": {
                "table": "author",
                "role": "user",
                "permission": {"columns": ["id", "name"], "filter": {}},
            },
        },
    ]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    with server_with(pg_url, steps()) as s:
        yield s


def relay(s: ServerProcess, query: str, variables: Any = None, **kw: Any) -> Any:
    body: dict[str, Any] = {"query": query}
    if variables is not None:
        body["variables"] = variables
    r = s.client.post("/v1beta1/relay", json=body, **kw)
    assert r.status_code == 200, r.text
    return r.json()


def unb64(text: str) -> Any:
    return json.loads(base64.b64decode(text))


PAGE = """
query ($first: Int, $last: Int, $after: String, $before: String) {
  article_connection(first: $first, last: $last, after: $after, before: $before,
                     where: {rating: {_gte: 2}}, order_by: [{rating: desc}]) {
    pageInfo { startCursor endCursor hasPreviousPage hasNextPage }
    edges { cursor node { id title rating } }
  }
}
"""


def page(s: ServerProcess, **variables: Any) -> tuple[list[str], dict[str, Any], list[Any]]:
    out = relay(s, PAGE, variables)["data"]["article_connection"]
    titles = [e["node"]["title"] for e in out["edges"]]
    return titles, out["pageInfo"], [e["cursor"] for e in out["edges"]]


def test_forward_pages_with_where_and_order_by(srv: ServerProcess) -> None:
    """rating >= 2 ordered by rating desc then id (the key appended): a1 a6 a3 a2 a5 in
    pages of two; each cursor is the order values then the key, as Postgres prints
    `json_build_object`."""
    titles, info, cursors = page(srv, first=2)
    assert titles == ["a1", "a6"]
    assert info["hasNextPage"] is True and info["hasPreviousPage"] is False
    assert base64.b64decode(cursors[0]).decode() == '{"rating" : 5, "id" : 1}'
    assert info["startCursor"] == cursors[0] and info["endCursor"] == cursors[1]
    titles, info, _ = page(srv, first=2, after=info["endCursor"])
    assert titles == ["a3", "a2"]
    assert info["hasNextPage"] is True and info["hasPreviousPage"] is True
    titles, info, _ = page(srv, first=2, after=info["endCursor"])
    assert titles == ["a5"]
    assert info["hasNextPage"] is False and info["hasPreviousPage"] is True
    titles, info, _ = page(srv, first=2, after=info["endCursor"])
    assert titles == []
    assert info == {
        "startCursor": None,
        "endCursor": None,
        "hasPreviousPage": False,
        "hasNextPage": False,
    }


def test_backward_pages(srv: ServerProcess) -> None:
    """`last` counts from the end, `before` walks back; edges stay in the order."""
    titles, info, _ = page(srv, last=2)
    assert titles == ["a2", "a5"]
    assert info["hasPreviousPage"] is True and info["hasNextPage"] is False
    titles, info, _ = page(srv, last=2, before=info["startCursor"])
    assert titles == ["a6", "a3"]
    assert info["hasPreviousPage"] is True and info["hasNextPage"] is True
    titles, info, _ = page(srv, last=2, before=info["startCursor"])
    assert titles == ["a1"]
    assert info["hasPreviousPage"] is False and info["hasNextPage"] is True


def test_node_ids_and_node(srv: ServerProcess) -> None:
    """An id is `[1, "public", "<table>", <key>]` in base64; `node` answers the row of
    the id's table (`__typename`), fragments on other types ignored, null for no row."""
    out = relay(srv, "{ author_connection(first: 1) { edges { node { id name } } } }")
    node = out["data"]["author_connection"]["edges"][0]["node"]
    assert unb64(node["id"]) == [1, "public", "author", 1]
    query = """query ($id: ID!) { node(id: $id) { id __typename
      ... on author { name articles_connection(first: 1, order_by: {id: desc}) {
            edges { node { title } } } }
      ... on article { title } } }"""
    got = relay(srv, query, {"id": node["id"]})["data"]["node"]
    assert got["__typename"] == "author" and got["name"] == "Ada"
    assert got["articles_connection"]["edges"] == [{"node": {"title": "a6"}}]
    assert "title" not in got
    missing = base64.b64encode(b'[1, "public", "article", 99]').decode()
    assert relay(srv, query, {"id": missing})["data"] == {"node": None}


def test_bad_ids_and_arguments(srv: ServerProcess) -> None:
    """The reference's errors: an unknown table, `first` with `last`, a bad cursor."""
    bad = base64.b64encode(b'[1, "public", "nothing", 1]').decode()
    out = relay(srv, "query ($id: ID!) { node(id: $id) { id } }", {"id": bad})
    assert out["errors"][0]["message"] == 'invalid node id: no such table found: "nothing"'
    assert out["errors"][0]["extensions"]["path"] == "$.selectionSet.node.args.id"
    out = relay(srv, "{ article_connection(first: 1, last: 1) { edges { cursor } } }")
    assert out["errors"][0]["message"] == '"first" and "last" are not allowed at once'
    out = relay(srv, '{ article_connection(after: "bm90IGpzb24=") { edges { cursor } } }')
    assert out["errors"][0]["message"] == 'the "after" or "before" cursor is invalid'


def test_schema_shape(srv: ServerProcess) -> None:
    """Only connections and `node` at the root; no connection for a table without key;
    the GraphQL API has no Relay fields."""
    query = (
        "{ __schema { queryType { fields { name } } }"
        ' __type(name: "Node") { possibleTypes { name } } }'
    )
    data = relay(srv, query)["data"]
    roots = {f["name"] for f in data["__schema"]["queryType"]["fields"]}
    assert roots == {"article_connection", "author_connection", "rated_connection", "node"}
    assert {t["name"] for t in data["__type"]["possibleTypes"]} == {"article", "author"}
    plain = srv.graphql("{ article_connection { edges { cursor } } }")
    assert "not found in type" in plain["errors"][0]["message"]


def test_function_and_nested_connections(srv: ServerProcess) -> None:
    query = """{ rated_connection(args: {least_rating: 5}) { edges { node { title } } }
      author_connection(where: {name: {_eq: "Bob"}}) { edges { node { name
        articles_connection(last: 1) { pageInfo { hasPreviousPage } edges { node { title } } }
        articles_aggregate { aggregate { count } } } } } }"""
    data = relay(srv, query)["data"]
    assert [e["node"]["title"] for e in data["rated_connection"]["edges"]] == ["a1", "a6"]
    bob = data["author_connection"]["edges"][0]["node"]
    assert bob["articles_connection"] == {
        "pageInfo": {"hasPreviousPage": True},
        "edges": [{"node": {"title": "a4"}}],
    }
    assert bob["articles_aggregate"] == {"aggregate": {"count": 2}}


def test_permissions_through_connection_and_node(srv: ServerProcess) -> None:
    """`user` 1 sees its own articles only, through connections and `node`; an id of a
    table it cannot select names no table for it."""
    data = relay(srv, "{ article_connection { edges { node { id title } } } }", headers=USER)
    edges = data["data"]["article_connection"]["edges"]
    assert [e["node"]["title"] for e in edges] == ["a1", "a2", "a6"]
    other = base64.b64encode(b'[1, "public", "article", 3]').decode()
    own = edges[0]["node"]["id"]
    query = "query ($id: ID!) { node(id: $id) { ... on article { title } } }"
    assert relay(srv, query, {"id": own}, headers=USER)["data"] == {"node": {"title": "a1"}}
    assert relay(srv, query, {"id": other}, headers=USER)["data"] == {"node": None}
    tag = base64.b64encode(b'[1, "public", "tag", 1]').decode()
    out = relay(srv, query, {"id": tag}, headers=USER)
    assert out["errors"][0]["message"] == 'invalid node id: no such table found: "tag"'


def test_explain_is_relay(srv: ServerProcess) -> None:
    """`/v1/graphql/explain` with `is_relay: true` plans against the Relay schema."""
    body = {
        "query": {"query": "{ article_connection(first: 2) { edges { cursor } } }"},
        "is_relay": True,
    }
    r = srv.client.post("/v1/graphql/explain", json=body)
    assert r.status_code == 200, r.text
    (entry,) = r.json()
    assert entry["field"] == "article_connection"
    assert "row_number() OVER" in entry["sql"] and entry["plan"]
    body["is_relay"] = False
    r = srv.client.post("/v1/graphql/explain", json=body)
    assert "not found in type" in r.text


def test_websockets_on_the_relay_path(srv: ServerProcess) -> None:
    """Both protocols on `/v1beta1/relay`: a query answered once (Apollo `graphql-ws`),
    a subscription to a connection pushed again after an insert (`graphql-transport-ws`)."""
    url = "ws" + srv.url.removeprefix("http") + "/v1beta1/relay"
    query = "{ author_connection(order_by: {id: asc}) { edges { node { name } } } }"

    async def apollo() -> Any:
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            start = {"query": query}
            await ws.send(json.dumps({"id": "1", "type": "start", "payload": start}))
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 15))
                if frame["type"] == "data":
                    return frame["payload"]

    names = [e["node"]["name"] for e in asyncio.run(apollo())["data"]["author_connection"]["edges"]]
    assert names == ["Ada", "Bob", "Cy"]

    async def transport() -> list[Any]:
        async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            sub = {"query": "subscription " + query}
            await ws.send(json.dumps({"id": "s", "type": "subscribe", "payload": sub}))
            pushed: list[Any] = []
            deadline = time.monotonic() + 20
            while len(pushed) < 2 and time.monotonic() < deadline:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 20))
                if frame["type"] == "next":
                    pushed.append(frame["payload"])
                    if len(pushed) == 1:
                        sql = "INSERT INTO author (name) VALUES ('Dee')"
                        r = srv.query({"type": "run_sql", "args": {"sql": sql}})
                        assert r.status_code == 200, r.text
            await ws.send(json.dumps({"id": "s", "type": "complete"}))
            return pushed

    try:
        pushed = asyncio.run(transport())
    finally:
        sql = "DELETE FROM author WHERE name = 'Dee'"
        assert srv.query({"type": "run_sql", "args": {"sql": sql}}).status_code == 200
    assert len(pushed) == 2, pushed
    last = [e["node"]["name"] for e in pushed[1]["data"]["author_connection"]["edges"]]
    assert last == ["Ada", "Bob", "Cy", "Dee"]


def test_distinct_on_and_mutations(srv: ServerProcess) -> None:
    """`distinct_on` without `order_by` orders by its columns (then the key); a mutation
    of the Relay schema answers Relay types (`id` a global id)."""
    query = "{ article_connection(distinct_on: [author_id]) { edges { node { title } } } }"
    edges = relay(srv, query)["data"]["article_connection"]["edges"]
    assert [e["node"]["title"] for e in edges] == ["a1", "a3", "a5"]
    mutation = """mutation { insert_tag_one(object: {label: "x"}) { label }
      update_author_by_pk(pk_columns: {id: 3}, _set: {name: "Cy"}) { id name } }"""
    data = relay(srv, mutation)["data"]
    assert data["insert_tag_one"] == {"label": "x"}
    assert unb64(data["update_author_by_pk"]["id"]) == [1, "public", "author", 3]


def test_large_body_on_the_relay_path(srv: ServerProcess) -> None:
    """A body above the large-body threshold (1 MiB, `svc.server.app.LARGE_BODY`: parsed
    in a worker thread) is still the Relay API's."""
    query = "# " + "x" * 1_100_000 + "\n{ author_connection(first: 1) { edges { node { name } } } }"
    data = relay(srv, query)["data"]
    assert data == {"author_connection": {"edges": [{"node": {"name": "Ada"}}]}}


def test_request_errors_are_graphql_errors(srv: ServerProcess) -> None:
    """A body that is not JSON answers `{"errors": …}` on the Relay path, as on
    `/v1/graphql`."""
    r = srv.client.post(
        "/v1beta1/relay", content=b"{nope", headers={"content-type": "application/json"}
    )
    plain = srv.client.post(
        "/v1/graphql", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert r.status_code == plain.status_code
    assert r.json()["errors"][0]["extensions"]["code"] == "invalid-json"


def test_cursor_through_an_object_relationship(srv: ServerProcess) -> None:
    """Ordered by the author's name: the cursor nests the value under the relationship
    (`getPathFromOrderBy`), and `after` it continues past ties by the key."""
    query = """query ($after: String) { article_connection(first: 2, after: $after,
      order_by: [{author: {name: desc}}]) { edges { cursor node { title } } } }"""
    edges = relay(srv, query)["data"]["article_connection"]["edges"]
    assert [e["node"]["title"] for e in edges] == ["a5", "a3"]
    cursor = base64.b64decode(edges[1]["cursor"]).decode()
    assert cursor == '{"author" : {"name" : "Bob"}, "id" : 3}'
    after = relay(srv, query, {"after": edges[1]["cursor"]})["data"]["article_connection"]
    assert [e["node"]["title"] for e in after["edges"]] == ["a4", "a1"]
