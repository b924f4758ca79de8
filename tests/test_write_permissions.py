"""Insert, update and delete permissions over real HTTP (issue 4): role schemas, presets from
session variables, checks that roll the whole request back, filters on writes; and tracked
functions and computed fields in a role's schema (issue 5)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, author_article_steps, server_with

SETUP = """
create table author (id serial primary key, name text not null unique);
create table article (id serial primary key, title text not null, author_id int not null
  references author(id), is_published boolean not null default false, rating int default 0);
insert into author (name) values ('one'), ('two');
insert into article (title, author_id, is_published) values
  ('a1', 1, true), ('a2', 1, false), ('b1', 2, true);
create function search_articles(search text) returns setof article as $$
  select * from article where title ilike '%' || search || '%' $$ language sql stable;
create function title_upper(a article) returns text as $$ select upper(a.title) $$
  language sql stable;
create function article_of(a author, hasura_session json) returns setof article as $$
  select * from article where author_id = a.id
    and author_id = (hasura_session ->> 'x-svc-user-id')::int $$ language sql stable;
"""


def perm(kind: str, table: str, permission: dict[str, Any], role: str = "user") -> dict[str, Any]:
    return {
        "type": f"create_{kind}_permission",
        "args": {"table": table, "role": role, "permission": permission},
    }


OWN = {"author_id": {"_eq": "X-Svc-User-Id"}}
STEPS: list[dict[str, Any]] = [
    perm("select", "author", {"columns": ["id", "name"], "filter": {}}),
    perm(
        "select",
        "article",
        {
            "columns": ["id", "title", "author_id", "is_published"],
            "filter": {"_or": [OWN, {"is_published": {"_eq": True}}]},
            "computed_fields": ["title_upper"],
        },
    ),
    perm(
        "insert",
        "article",
        {"columns": ["title", "is_published"], "check": OWN, "set": {"author_id": "X-Svc-User-Id"}},
    ),
    perm(
        "update",
        "article",
        {"columns": ["title"], "filter": OWN, "check": {"title": {"_neq": "bad"}}},
    ),
    perm("delete", "article", {"filter": OWN}),
    perm("insert", "author", {"columns": ["name"], "check": {}}, role="writer"),
    {
        "type": "add_computed_field",
        "args": {
            "table": "article",
            "name": "title_upper",
            "definition": {"function": "title_upper", "table_argument": "a"},
        },
    },
    {
        "type": "add_computed_field",
        "args": {
            "table": "author",
            "name": "my_articles",
            "definition": {
                "function": "article_of",
                "table_argument": "a",
                "session_argument": "hasura_session",
            },
        },
    },
    {"type": "track_function", "args": {"schema": "public", "name": "search_articles"}},
]


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    steps = [{"type": "run_sql", "args": {"sql": SETUP}}, *author_article_steps()]
    # Computed fields first: the select permission names one.
    with server_with(pg_url, [*steps, *STEPS[6:], *STEPS[:6]]) as s:
        yield s


def as_user(user: int | str, role: str = "user") -> dict[str, Any]:
    return {"headers": {"X-Svc-Role": role, "X-Svc-User-Id": str(user)}}


def titles(s: ServerProcess) -> list[str]:
    r = s.query({"type": "run_sql", "args": {"sql": "select title from article order by id"}})
    return [row[0] for row in r.json()["result"][1:]]


def test_role_schema_has_only_permitted_writes(srv: ServerProcess) -> None:
    body = srv.graphql(
        "{ __schema { mutationType { fields { name } } } "
        '__type(name: "article_insert_input") { inputFields { name } } }',
        **as_user(1),
    )
    fields = {f["name"] for f in body["data"]["__schema"]["mutationType"]["fields"]}
    assert {"insert_article", "insert_article_one", "update_article", "delete_article"} <= fields
    assert "insert_author" not in fields and "update_author" not in fields
    # author_id is preset from the session, so the role cannot give it.
    inputs = {f["name"] for f in body["data"]["__type"]["inputFields"]}
    assert inputs == {"title", "is_published"}
    writer = srv.graphql(
        "{ __schema { mutationType { fields { name } } } }", **as_user(1, "writer")
    )
    names = {f["name"] for f in writer["data"]["__schema"]["mutationType"]["fields"]}
    # No select permission: no insert_author_one, and the response has no `returning`.
    assert names == {"insert_author"}
    out = srv.graphql(
        'mutation { insert_author(objects: [{name: "w"}]) { returning { id } } }',
        **as_user(1, "writer"),
    )
    assert out["errors"][0]["extensions"]["code"] == "validation-failed"


def test_insert_preset_from_session_and_check(srv: ServerProcess) -> None:
    out = srv.graphql(
        'mutation { insert_article_one(object: {title: "mine"}) { title author_id } }',
        **as_user(2),
    )
    assert out == {"data": {"insert_article_one": {"title": "mine", "author_id": 2}}}
    bad = srv.graphql(
        'mutation { insert_article(objects: [{title: "x", author_id: 1}]) { affected_rows } }',
        **as_user(2),
    )
    assert bad["errors"][0]["extensions"]["code"] == "validation-failed"


def test_failed_check_rolls_back_the_whole_request(srv: ServerProcess) -> None:
    before = titles(srv)
    out = srv.graphql(
        'mutation { a: insert_article_one(object: {title: "first"}) { id } '
        'b: update_article(where: {title: {_eq: "a1"}}, _set: {title: "bad"}) '
        "{ affected_rows } }",
        **as_user(1),
    )
    assert out["errors"][0]["extensions"]["code"] == "permission-error"
    assert "update permission" in out["errors"][0]["message"]
    assert titles(srv) == before


def test_update_and_delete_only_own_rows(srv: ServerProcess) -> None:
    out = srv.graphql(
        'mutation { update_article(where: {}, _set: {title: "t"}) { affected_rows } }',
        **as_user(99),
    )
    assert out == {"data": {"update_article": {"affected_rows": 0}}}
    out = srv.graphql(
        'mutation { delete_article(where: {title: {_eq: "b1"}}) { affected_rows } }', **as_user(1)
    )
    assert out == {"data": {"delete_article": {"affected_rows": 0}}}
    assert "b1" in titles(srv)
    out = srv.graphql(
        'mutation { update_article(where: {title: {_eq: "a2"}}, _set: {title: "a2x"}) '
        "{ affected_rows returning { title } } }",
        **as_user(1),
    )
    assert out == {
        "data": {"update_article": {"affected_rows": 1, "returning": [{"title": "a2x"}]}}
    }


def test_tracked_function_applies_the_select_filter(srv: ServerProcess) -> None:
    query = '{ search_articles(args: {search: "b"}, order_by: {id: asc}) { title } }'
    admin = srv.graphql(query)
    assert [r["title"] for r in admin["data"]["search_articles"]] == ["b1"]
    # User 1 sees b1 (published) but not an unpublished article of user 2.
    srv.query(
        {
            "type": "run_sql",
            "args": {"sql": "insert into article (title, author_id) values ('hidden b', 2)"},
        }
    )
    mine = srv.graphql(query, **as_user(1))
    assert [r["title"] for r in mine["data"]["search_articles"]] == ["b1"]
    theirs = srv.graphql(query, **as_user(2))
    assert [r["title"] for r in theirs["data"]["search_articles"]] == ["b1", "hidden b"]


def test_computed_fields_scalar_and_session_set(srv: ServerProcess) -> None:
    out = srv.graphql(
        '{ article(where: {title_upper: {_eq: "A1"}}) { title title_upper } '
        "author(order_by: {id: asc}) { name my_articles(order_by: {id: asc}) { title } } }",
        **as_user(2),
    )
    assert out["data"]["article"] == [{"title": "a1", "title_upper": "A1"}]
    authors = out["data"]["author"]
    assert authors[0] == {"name": "one", "my_articles": []}
    assert {"title": "b1"} in authors[1]["my_articles"]
