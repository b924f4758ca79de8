"""`replace_metadata` accepts the documents the reference's `export_metadata` has produced
(issue 18): version 1 (and no version), version 2, version 3; tables and functions as
plain names or `{schema, name}`. Each is applied to a real server, exported back in svc's
form and serves GraphQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database

SETUP = """
CREATE TABLE author (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE article (id serial PRIMARY KEY, title text, author_id integer REFERENCES author (id));
INSERT INTO author (name) VALUES ('Ada');
INSERT INTO article (title, author_id) VALUES ('Notes', 1);
CREATE FUNCTION search_authors(q text) RETURNS SETOF author AS
  $$ SELECT * FROM author WHERE name ILIKE '%' || q || '%' $$ LANGUAGE sql STABLE;
"""
REL = {"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}

V1 = {
    "version": 1,
    "tables": [
        {"table": "author", "object_relationships": [], "array_relationships": []},
        {"table": "article", "object_relationships": [REL]},
    ],
    "functions": [{"name": "search_authors", "schema": "public"}],
    "query_templates": [],
    "remote_schemas": [],
}
NO_VERSION = {
    "tables": [
        {"table": "author"},
        {"table": {"schema": "public", "name": "article"}, "object_relationships": [REL]},
    ],
    "functions": ["search_authors"],
}
V2 = {
    "version": 2,
    "tables": [
        {"table": {"schema": "public", "name": "author"}},
        {"table": "article", "object_relationships": [REL]},
    ],
    "functions": [{"function": "search_authors", "configuration": {}}],
}
V2_QUALIFIED = {
    "version": 2,
    "tables": [{"table": "author"}, {"table": "article", "object_relationships": [REL]}],
    "functions": [{"function": {"schema": "public", "name": "search_authors"}}],
}
V3 = {
    "version": 3,
    "sources": [
        {
            "name": "default",
            "kind": "postgres",
            "tables": [{"table": "author"}, {"table": "article", "object_relationships": [REL]}],
            "functions": [{"function": "search_authors"}],
            "configuration": {"connection_info": {"database_url": {"from_env": "X"}}},
        }
    ],
}


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url), "--workers", "1")
    try:
        assert s.query({"type": "run_sql", "args": {"sql": SETUP}}).status_code == 200
        yield s
    finally:
        s.stop()


@pytest.mark.parametrize(
    "document",
    [V1, NO_VERSION, V2, V2_QUALIFIED, V3],
    ids=["v1", "no-version", "v2-plain-names", "v2-qualified", "v3"],
)
def test_replace_metadata_reads_reference_exports(srv: ServerProcess, document: Any) -> None:
    assert srv.query({"type": "clear_metadata", "args": {}}).status_code == 200
    r = srv.query({"type": "replace_metadata", "args": document})
    assert r.status_code == 200, r.text
    exported = srv.query({"type": "export_metadata", "args": {}}).json()
    source = exported["sources"][0] if "sources" in exported else exported
    tables = sorted(t["table"]["name"] for t in source["tables"])
    assert tables == ["article", "author"]
    # exported as given (a plain name stays one), as svc exports every key
    functions = [f["function"] for f in source["functions"]]
    assert functions in (["search_authors"], [{"schema": "public", "name": "search_authors"}])
    answer = srv.graphql(
        '{ article { title author { name } } search_authors(args: {q: "a"}) { name } }'
    )
    assert answer == {
        "data": {
            "article": [{"title": "Notes", "author": {"name": "Ada"}}],
            "search_authors": [{"name": "Ada"}],
        }
    }
