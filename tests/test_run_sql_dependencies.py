"""`run_sql` follows the database (spec 4.2, issue 5): drops with and without `cascade`,
type changes under permissions, renamed tables and columns, dropped and overloaded
functions. Every refused change leaves both the database and the metadata as they were."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, author_article_steps, server_with

SETUP = """
create table author (id serial primary key, name text not null);
create table article (id serial primary key, title text not null, published boolean not null
  default false, author_id int references author(id));
insert into author (name) values ('a');
insert into article (title, author_id, published) values ('t', 1, true);
create function search_articles(q text) returns setof article as
  $$ select * from article where title ilike '%' || q || '%' $$ language sql stable;
"""
PERMISSIONS: list[dict[str, Any]] = [
    {
        "type": "create_select_permission",
        "args": {
            "table": "article",
            "role": "user",
            "permission": {
                "columns": ["id", "title", "author_id"],
                "filter": {"published": {"_eq": True}, "author": {"id": "X-Svc-User-Id"}},
            },
        },
    },
    {"type": "track_function", "args": {"schema": "public", "name": "search_articles"}},
]


@pytest.fixture
def srv(pg_url: str) -> Iterator[ServerProcess]:
    steps = [{"type": "run_sql", "args": {"sql": SETUP}}, *author_article_steps(), *PERMISSIONS]
    with server_with(pg_url, steps) as s:
        yield s


def run_sql(s: ServerProcess, sql: str, **extra: Any) -> Any:
    return s.query({"type": "run_sql", "args": {"sql": sql, **extra}})


def exported(s: ServerProcess) -> Any:
    return s.query({"type": "export_metadata", "args": {}}).json()


def column_names(s: ServerProcess, table: str) -> list[str]:
    r = run_sql(
        s,
        "select column_name from information_schema.columns "
        f"where table_name = '{table}' order by ordinal_position",
    )
    return [row[0] for row in r.json()["result"][1:]]


def unchanged(s: ServerProcess, attempt: Callable[[], Any]) -> Any:
    """Run `attempt`; assert the metadata did not change; return its response."""
    before = exported(s)
    response = attempt()
    assert exported(s) == before
    return response


def test_drop_column_used_by_a_relationship_is_refused(srv: ServerProcess) -> None:
    r = unchanged(srv, lambda: run_sql(srv, "alter table article drop column author_id"))
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "dependency-error"
    assert "article.author" in r.json()["error"]
    assert "author_id" in column_names(srv, "article")  # the SQL was rolled back


def test_drop_column_with_cascade_drops_dependents(srv: ServerProcess) -> None:
    r = run_sql(srv, "alter table article drop column author_id cascade", cascade=True)
    assert r.status_code == 200, r.text
    article = next(t for t in exported(srv)["tables"] if t["table"]["name"] == "article")
    assert "object_relationships" not in article and "select_permissions" not in article
    author = next(t for t in exported(srv)["tables"] if t["table"]["name"] == "author")
    assert "array_relationships" not in author
    assert srv.graphql("{ article { title } }") == {"data": {"article": [{"title": "t"}]}}


def test_type_change_under_a_static_value_is_refused(srv: ServerProcess) -> None:
    sql = "alter table article alter column published set data type text"
    r = unchanged(srv, lambda: run_sql(srv, sql))
    assert r.status_code == 400
    body = r.json()
    assert body["code"] == "dependency-error" and body["path"] == "$.args"
    assert 'cannot change type of column "published"' in body["error"]
    assert "permission article.user.select" in body["error"]
    # A column compared only with a session variable may change type.
    ok = run_sql(srv, "alter table author alter column name set data type varchar(100)")
    assert ok.status_code == 200, ok.text


def test_renamed_table_and_column_are_followed(srv: ServerProcess) -> None:
    r = run_sql(
        srv,
        "alter table article rename column title to headline; alter table author rename to writer",
    )
    assert r.status_code == 200, r.text
    names = {t["table"]["name"] for t in exported(srv)["tables"]}
    assert names == {"writer", "article"}
    article = next(t for t in exported(srv)["tables"] if t["table"]["name"] == "article")
    permission = article["select_permissions"][0]["permission"]
    assert permission["columns"] == ["id", "headline", "author_id"]
    as_user = {"X-Svc-Role": "user", "X-Svc-User-Id": "1"}
    # The filter still reaches the renamed table through the relationship.
    body = srv.graphql("{ article { headline } }", headers=as_user)
    assert body == {"data": {"article": [{"headline": "t"}]}}
    as_user["X-Svc-User-Id"] = "2"
    assert srv.graphql("{ article { headline } }", headers=as_user) == {"data": {"article": []}}
    admin = srv.graphql("{ writer { name articles { headline } } }")
    assert admin == {"data": {"writer": [{"name": "a", "articles": [{"headline": "t"}]}]}}


def test_dropped_function_is_untracked_and_overloading_is_refused(srv: ServerProcess) -> None:
    overload = (
        "create function search_articles(q text, n int) returns setof article as "
        "$$ select * from article limit n $$ language sql stable"
    )
    r = unchanged(srv, lambda: run_sql(srv, overload))
    assert r.status_code == 400
    assert "search_articles" in r.json()["error"]
    r = run_sql(srv, "drop function search_articles(text)")
    assert r.status_code == 200, r.text
    assert "functions" not in exported(srv)
    body = srv.graphql('{ search_articles(args: {q: "t"}) { id } }')
    assert body["errors"][0]["extensions"]["code"] == "validation-failed"
