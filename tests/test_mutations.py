"""Mutations over real HTTP (issue 3): nested inserts, upserts, every update operator,
deletes, and all-or-nothing requests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, author_article_steps, server_with

SETUP = """
create table author (id serial primary key, name text not null unique, profile jsonb
  default '{}', tags jsonb default '[]', score int default 0);
create table article (id serial primary key, title text not null check (length(title) < 30),
  author_id int references author(id));
"""


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    steps = [{"type": "run_sql", "args": {"sql": SETUP}}, *author_article_steps()]
    with server_with(pg_url, steps) as s:
        yield s


def rows(s: ServerProcess, sql: str) -> list[list[str]]:
    r = s.query({"type": "run_sql", "args": {"sql": sql}})
    assert r.status_code == 200, r.text
    result: list[list[str]] = r.json()["result"][1:]
    return result


def data(body: dict[str, Any]) -> Any:
    assert "errors" not in body, body
    return body["data"]


def test_nested_object_and_array_inserts(srv: ServerProcess) -> None:
    out = data(
        srv.graphql("""mutation {
      insert_author(objects: [{name: "nested", articles: {data: [{title: "a1"}, {title: "a2"}]}}])
      { affected_rows returning { name articles(order_by: {title: asc}) { title } } }
      insert_article_one(object: {title: "b1", author: {data: {name: "parent"}}})
      { title author { name } }
    }""")
    )
    assert out["insert_author"] == {
        "affected_rows": 3,
        "returning": [{"name": "nested", "articles": [{"title": "a1"}, {"title": "a2"}]}],
    }
    assert out["insert_article_one"] == {"title": "b1", "author": {"name": "parent"}}
    assert rows(
        srv,
        "select a.title from article a join author u on u.id = a.author_id where u.name = 'parent'",
    ) == [["b1"]]


def test_upsert_on_a_unique_constraint(srv: ServerProcess) -> None:
    data(srv.graphql('mutation { insert_author_one(object: {name: "up", score: 1}) { id } }'))
    out = data(
        srv.graphql("""mutation {
      insert_author(objects: [{name: "up", score: 7}],
        on_conflict: {constraint: author_name_key, update_columns: [score]})
      { affected_rows returning { name score } }
    }""")
    )
    assert out["insert_author"] == {"affected_rows": 1, "returning": [{"name": "up", "score": 7}]}
    out = data(
        srv.graphql("""mutation {
      insert_author(objects: [{name: "up", score: 9}],
        on_conflict: {constraint: author_name_key, update_columns: []}) { affected_rows }
    }""")
    )
    assert out["insert_author"] == {"affected_rows": 0}
    assert rows(srv, "select score from author where name = 'up'") == [["7"]]


def test_inc_with_a_variable(srv: ServerProcess) -> None:
    data(srv.graphql('mutation { insert_author_one(object: {name: "inc"}) { id } }'))
    q = (
        'mutation m($by: Int!) { update_author(where: {name: {_eq: "inc"}}, '
        "_inc: {score: $by}) { returning { score } } }"
    )
    assert data(srv.graphql(q, {"by": 5}))["update_author"]["returning"] == [{"score": 5}]
    assert data(srv.graphql(q, {"by": -2}))["update_author"]["returning"] == [{"score": 3}]


@pytest.mark.parametrize(
    ("op", "var_type", "value", "column", "expected"),
    [
        ("_append", "jsonb", {"b": 2}, "profile", {"a": 1, "b": 2}),
        ("_prepend", "jsonb", ["z"], "tags", ["z", "x", "y"]),
        ("_delete_key", "String", "a", "profile", {}),
        ("_delete_elem", "Int", 0, "tags", ["y"]),
        ("_delete_at_path", "[String!]", ["n", "m"], "profile", {"a": 1, "n": {}}),
    ],
)
def test_jsonb_operators(
    srv: ServerProcess, op: str, var_type: str, value: Any, column: str, expected: Any
) -> None:
    name = f"json{op}"
    initial = {"a": 1, "n": {"m": 1}} if op == "_delete_at_path" else {"a": 1}
    data(
        srv.graphql(
            "mutation m($p: jsonb, $t: jsonb, $n: String!) { insert_author_one("
            "object: {name: $n, profile: $p, tags: $t}) { id } }",
            {"p": initial, "t": ["x", "y"], "n": name},
        )
    )
    q = (
        f"mutation m($v: {var_type}) "
        f'{{ update_author(where: {{name: {{_eq: "{name}"}}}}, {op}: {{{column}: $v}}) '
        f"{{ returning {{ {column} }} }} }}"
    )
    out = data(srv.graphql(q, {"v": value}))
    assert out["update_author"]["returning"] == [{column: expected}]


def test_delete_by_pk_of_a_missing_row_is_null(srv: ServerProcess) -> None:
    assert data(srv.graphql("mutation { delete_author_by_pk(id: 99999) { id } }")) == {
        "delete_author_by_pk": None
    }


def test_delete_and_update_by_pk(srv: ServerProcess) -> None:
    new = data(srv.graphql('mutation { insert_author_one(object: {name: "gone"}) { id } }'))
    pk = new["insert_author_one"]["id"]
    out = data(
        srv.graphql(
            f"mutation {{ update_author_by_pk(pk_columns: {{id: {pk}}}, "
            f'_set: {{name: "renamed"}}) {{ name }} '
            f"delete_author_by_pk(id: {pk}) {{ name }} }}"
        )
    )
    assert out == {
        "update_author_by_pk": {"name": "renamed"},
        "delete_author_by_pk": {"name": "renamed"},
    }
    assert rows(srv, f"select count(*) from author where id = {pk}") == [["0"]]


def test_update_many(srv: ServerProcess) -> None:
    data(
        srv.graphql(
            'mutation { insert_author(objects: [{name: "m1"}, {name: "m2"}]) { affected_rows } }'
        )
    )
    out = data(
        srv.graphql("""mutation { update_author_many(updates: [
      {where: {name: {_eq: "m1"}}, _set: {score: 1}},
      {where: {name: {_eq: "m2"}}, _inc: {score: 2}}]) { affected_rows } }""")
    )
    assert out == {"update_author_many": [{"affected_rows": 1}, {"affected_rows": 1}]}


def test_three_mutations_third_fails_leaves_nothing(srv: ServerProcess) -> None:
    before = rows(srv, "select count(*) from author")
    body = srv.graphql("""mutation {
      a: insert_author_one(object: {name: "t1"}) { id }
      b: update_author(where: {}, _inc: {score: 100}) { affected_rows }
      c: insert_article(objects: [{title: "this title is much longer than thirty"}])
      { affected_rows }
    }""")
    assert body["errors"][0]["extensions"]["code"] == "constraint-violation"
    assert "data" not in body
    assert rows(srv, "select count(*) from author") == before
    assert rows(srv, "select count(*) from author where score >= 100") == [["0"]]


def test_not_null_violation_names_the_column(srv: ServerProcess) -> None:
    before = rows(srv, "select count(*) from article")
    body = srv.graphql(
        'mutation { insert_article(objects: [{title: "ok"}, {author_id: 1}]) { affected_rows } }'
    )
    error = body["errors"][0]
    assert error["extensions"]["code"] == "constraint-violation"
    assert '"title"' in error["message"]
    assert rows(srv, "select count(*) from article") == before


def test_explain_refuses_mutations(srv: ServerProcess) -> None:
    r = srv.client.post(
        "/v1/graphql/explain",
        json={"query": {"query": "mutation { delete_author(where: {}) { affected_rows } }"}},
    )
    assert r.status_code == 400
    assert rows(srv, "select count(*) > 0 from author") == [["t"]]
