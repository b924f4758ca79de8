"""Names that are not GraphQL names, or that collide with generated ones, are refused by
every metadata operation, by `replace_metadata` and by `svc compile`, with the reference's
error, and the metadata stays as it was; `replace_metadata` reads only versions 2 and 3; a
document stored with a bad name (written around the API) still gets JSON answers (issue 11,
findings 4 and 12). Real Postgres, real servers."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import yaml

from svc.metadata.directory import metadata_to_files
from svc.metadata.model import metadata_from_obj
from tests.support import ROOT, ServerProcess, author_article_steps, create_database

SETUP = """
create table author (id serial primary key, name text not null);
create table article (id serial primary key, title text, author_id int references author(id));
create table tag (id serial primary key, label text);
insert into author (name) values ('Ada'), ('Bob');
insert into article (title, author_id) values ('a', 1), ('b', 2);
create function author_upper(a author) returns text language sql stable
  as $$ select upper(a.name) $$;
create function search_articles(q text) returns setof article language sql stable
  as $$ select * from article where title ilike '%' || q || '%' $$;
"""

IDENTIFIER = (
    'cannot include "{}" in the GraphQL schema because  it is not a valid GraphQL identifier'
)
CONFLICT = (
    "Encountered conflicting definitions in the selection set for '{}' for field '{}'{}. "
    "Fields must not be defined more than once across all sources."
)


@pytest.fixture(scope="module")
def db_url(pg_url: str) -> str:
    return create_database(pg_url)


@pytest.fixture(scope="module")
def srv(db_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(db_url)
    try:
        assert s.query({"type": "run_sql", "args": {"sql": SETUP}}).status_code == 200
        r = s.query({"type": "bulk", "args": author_article_steps()})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def export(s: ServerProcess) -> tuple[int, dict[str, Any]]:
    """(resource_version, metadata in the version 2 shape): the operation's version 2
    answers the version number (its document is in the version 3 shape), version 1 the
    document these tests edit."""
    r = s.query({"type": "export_metadata", "version": 2, "args": {}})
    assert r.status_code == 200, r.text
    document = s.query({"type": "export_metadata", "args": {}})
    assert document.status_code == 200, document.text
    return r.json()["resource_version"], document.json()


def still_serving(s: ServerProcess) -> None:
    """Admin `{ __typename }` and a query over a relationship answer 200 with data."""
    r = s.client.post("/v1/graphql", json={"query": "{ __typename }"})
    assert r.status_code == 200 and r.json() == {"data": {"__typename": "query_root"}}, r.text
    r = s.client.post(
        "/v1/graphql", json={"query": "{ author(order_by: {id: asc}) { name articles { title } } }"}
    )
    assert r.status_code == 200, r.text
    assert r.json() == {
        "data": {
            "author": [
                {"name": "Ada", "articles": [{"title": "a"}]},
                {"name": "Bob", "articles": [{"title": "b"}]},
            ]
        }
    }


def customize(table: str, **configuration: Any) -> dict[str, Any]:
    return {
        "type": "set_table_customization",
        "args": {"table": table, "configuration": configuration},
    }


def relationship(kind: str, table: str, name: str) -> dict[str, Any]:
    fk: Any = "author_id" if kind == "object" else {"table": "article", "column": "author_id"}
    return {
        "type": f"create_{kind}_relationship",
        "args": {"table": table, "name": name, "using": {"foreign_key_constraint_on": fk}},
    }


# (id, body, status, code, path, message)
OPERATION_CASES: list[tuple[str, dict[str, Any], int, str, str, str]] = [
    (
        "object relationship with a space",
        relationship("object", "article", "bad name"),
        400,
        "validation-failed",
        "$.args",
        IDENTIFIER.format("bad name"),
    ),
    (
        "array relationship starting with __",
        relationship("array", "author", "__x"),
        400,
        "validation-failed",
        "$.args",
        IDENTIFIER.format("__x"),
    ),
    (
        "array relationship _ (its aggregate field would be __aggregate)",
        relationship("array", "author", "_"),
        400,
        "validation-failed",
        "$.args",
        IDENTIFIER.format("__aggregate"),
    ),
    (
        "rename_relationship to a bad name",
        {
            "type": "rename_relationship",
            "args": {"table": "author", "name": "articles", "new_name": "x y"},
        },
        400,
        "validation-failed",
        "$.args",
        IDENTIFIER.format("x y"),
    ),
    (
        "custom_name starting with __",
        customize("author", custom_name="__x"),
        400,
        "parse-failed",
        "$.args.configuration.custom_name",
        "__x is not valid GraphQL name: names starting with __ are reserved",
    ),
    (
        "custom_name _ (its types would be __bool_exp, __aggregate, ...)",
        customize("author", custom_name="_"),
        400,
        "validation-failed",
        "$.args",
        IDENTIFIER.format("__aggregate"),
    ),
    (
        "custom_name starting with a digit",
        customize("author", custom_name="1author"),
        400,
        "parse-failed",
        "$.args.configuration.custom_name",
        "1author is not valid GraphQL name",
    ),
    (
        "custom root field with a space",
        customize("author", custom_root_fields={"select": "x y"}),
        400,
        "parse-failed",
        "$.args.configuration.custom_root_fields.select",
        "x y is not valid GraphQL name",
    ),
    (
        "duplicate custom root fields",
        customize("author", custom_root_fields={"select": "a", "select_aggregate": "a"}),
        400,
        "parse-failed",
        "$.args.configuration.custom_root_fields",
        "the following custom root field names are duplicated: a",
    ),
    (
        "custom column name with a dash",
        customize("author", custom_column_names={"name": "full-name"}),
        400,
        "parse-failed",
        "$.args.configuration.custom_column_names.name",
        "full-name is not valid GraphQL name",
    ),
    (
        "column_config custom_name",
        customize("author", column_config={"name": {"custom_name": "é"}}),
        400,
        "parse-failed",
        "$.args.configuration.column_config.name.custom_name",
        "é is not valid GraphQL name",
    ),
    (
        "track_table v2 with a bad custom_name",
        {
            "type": "track_table",
            "version": 2,
            "args": {"table": "tag", "configuration": {"custom_name": "my tag"}},
        },
        400,
        "parse-failed",
        "$.args.configuration.custom_name",
        "my tag is not valid GraphQL name",
    ),
    (
        "set_table_custom_fields with a bad root field",
        {
            "type": "set_table_custom_fields",
            "version": 2,
            "args": {"table": "author", "custom_root_fields": {"select_by_pk": "by pk"}},
        },
        400,
        "parse-failed",
        "$.args.custom_root_fields.select_by_pk",
        "by pk is not valid GraphQL name",
    ),
    (
        "set_table_custom_fields with a bad column name",
        {
            "type": "set_table_custom_fields",
            "version": 2,
            "args": {"table": "author", "custom_column_names": {"id": "__id"}},
        },
        400,
        "parse-failed",
        "$.args.custom_column_names.id",
        "__id is not valid GraphQL name: names starting with __ are reserved",
    ),
    (
        "computed field with a bad name",
        {
            "type": "add_computed_field",
            "args": {
                "table": "author",
                "name": "upper name",
                "definition": {"function": "author_upper"},
            },
        },
        400,
        "not-supported",
        "$.args",
        'the computed field "upper name" cannot be added to table "author" because '
        '"upper name" is not valid GraphQL name',
    ),
    (
        "track_function with a bad custom_name",
        {
            "type": "track_function",
            "version": 2,
            "args": {"function": "search_articles", "configuration": {"custom_name": "find it"}},
        },
        400,
        "parse-failed",
        "$.args.configuration.custom_name",
        "find it is not valid GraphQL name",
    ),
    (
        "custom root field equal to another table's root field",
        customize("article", custom_root_fields={"select": "author"}),
        500,
        "unexpected",
        "$.args",
        CONFLICT.format(
            "query_root",
            "author",
            " defined in [table author in source default, table article in source default]",
        ),
    ),
    (
        "two columns with one custom name",
        customize("author", custom_column_names={"name": "id"}),
        500,
        "unexpected",
        "$.args",
        CONFLICT.format("author", "id", ""),
    ),
    (
        "custom_name equal to another table's type",
        customize("article", custom_name="author"),
        500,
        "unexpected",
        "$.args",
        "Found conflicting definitions for GraphQL type 'author'. "
        "Types must not be defined more than once across all sources.",
    ),
    (
        "custom column name equal to a relationship",
        customize("author", custom_column_names={"name": "articles"}),
        400,
        "already-exists",
        "$.args",
        'Inconsistent object: in table "author": in relationship "articles": '
        'custom column name "articles" of table "author" already exists',
    ),
]


@pytest.mark.parametrize(
    ("body", "status", "code", "path", "message"),
    [case[1:] for case in OPERATION_CASES],
    ids=[case[0] for case in OPERATION_CASES],
)
def test_operation_refuses_bad_name(
    srv: ServerProcess,
    body: dict[str, Any],
    status: int,
    code: str,
    path: str,
    message: str,
) -> None:
    version, before = export(srv)
    r = srv.query(body)
    assert r.status_code == status, r.text
    got = r.json()
    assert (got["code"], got["path"], got["error"]) == (code, path, message)
    assert export(srv) == (version, before)
    still_serving(srv)
    inconsistent = srv.query({"type": "get_inconsistent_metadata", "args": {}}).json()
    assert inconsistent["is_consistent"] is True


def test_relationship_named_like_a_custom_column(srv: ServerProcess) -> None:
    """Within one bulk: the custom column is set, the relationship refused, both undone."""
    version, before = export(srv)
    steps = [
        customize("author", custom_column_names={"name": "writer"}),
        relationship("array", "author", "writer"),
    ]
    r = srv.query({"type": "bulk", "args": steps})
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "already-exists"
    assert 'custom column name "writer" of table "author" already exists' in r.json()["error"]
    assert export(srv) == (version, before)
    still_serving(srv)


def test_good_names_still_accepted(srv: ServerProcess) -> None:
    """`_x`, a single letter and names with digits pass; undone afterwards."""
    version, before = export(srv)
    r = srv.query(
        customize(
            "author",
            custom_name="_writer1",
            custom_root_fields={"select": "w", "select_by_pk": "W_by_pk"},
            custom_column_names={"name": "n2"},
        )
    )
    assert r.status_code == 200, r.text
    got = srv.graphql("{ w(order_by: {id: asc}) { n2 } }")
    assert got == {"data": {"w": [{"n2": "Ada"}, {"n2": "Bob"}]}}
    r = srv.query({"type": "replace_metadata", "args": before})
    assert r.status_code == 200, r.text
    assert export(srv)[0] == version + 2
    still_serving(srv)


def _tables(md: dict[str, Any]) -> list[dict[str, Any]]:
    tables: list[dict[str, Any]] = md["tables"]
    return tables


def _entry(md: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in _tables(md) if t["table"]["name"] == name)


def _bad_relationship(md: dict[str, Any]) -> tuple[str, str]:
    entry = _entry(md, "article")
    entry["object_relationships"][0]["name"] = "bad name"
    i = _tables(md).index(entry)
    return f"tables[{i}].object_relationships[0].name", IDENTIFIER.format("bad name")


def _bad_custom_name(md: dict[str, Any]) -> tuple[str, str]:
    entry = _entry(md, "author")
    entry["configuration"] = {"custom_name": "__x"}
    i = _tables(md).index(entry)
    return (
        f"tables[{i}].configuration.custom_name",
        "__x is not valid GraphQL name: names starting with __ are reserved",
    )


def _bad_root_field(md: dict[str, Any]) -> tuple[str, str]:
    entry = _entry(md, "author")
    entry["configuration"] = {"custom_root_fields": {"select": "x y"}}
    i = _tables(md).index(entry)
    return f"tables[{i}].configuration.custom_root_fields.select", "x y is not valid GraphQL name"


@pytest.mark.parametrize("edit", [_bad_relationship, _bad_custom_name, _bad_root_field])
@pytest.mark.parametrize("form", ["v2", "v3", "wrapped"])
def test_replace_metadata_refuses_bad_name(srv: ServerProcess, edit: Any, form: str) -> None:
    version, before = export(srv)
    md = copy.deepcopy(before)
    where, message = edit(md)
    if form == "v2":
        args: dict[str, Any] = md
        path = f"$.args.{where}"
    elif form == "v3":
        source = {"name": "default", "kind": "postgres", "tables": md.pop("tables")}
        args = {**md, "version": 3, "sources": [source]}
        path = f"$.args.sources[0].{where}"
    else:
        args = {"metadata": md, "allow_inconsistent_metadata": True}
        path = f"$.args.metadata.{where}"
    r = srv.query({"type": "replace_metadata", "args": args})
    assert r.status_code == 400, r.text
    got = r.json()
    assert got["path"] == path and got["error"] == message, got
    assert export(srv) == (version, before)
    still_serving(srv)


def test_replace_metadata_refuses_root_field_clash(srv: ServerProcess) -> None:
    version, before = export(srv)
    md = copy.deepcopy(before)
    _entry(md, "article")["configuration"] = {"custom_root_fields": {"select_aggregate": "author"}}
    r = srv.query({"type": "replace_metadata", "args": md})
    assert r.status_code == 500, r.text
    assert r.json()["code"] == "unexpected"
    assert r.json()["error"].startswith(
        "Encountered conflicting definitions in the selection set for 'query_root' for field "
        "'author'"
    )
    assert export(srv) == (version, before)
    still_serving(srv)


@pytest.mark.parametrize(
    ("version", "shown"),
    [
        (99999999999999999999, "99999999999999999999"),
        (-1, "-1"),
        (4, "4"),
        (0, "0"),
        ("2", '"2"'),
        (True, "true"),
        (2.5, "2.5"),
        (None, "null"),
    ],
)
def test_replace_metadata_refuses_unknown_version(
    srv: ServerProcess, version: Any, shown: str
) -> None:
    before = export(srv)
    r = srv.query({"type": "replace_metadata", "args": {"version": version, "sources": []}})
    assert r.status_code == 400, r.text
    assert r.json() == {
        "code": "parse-failed",
        "path": "$.args.version",
        "error": f"expected 1, 2 or 3, encountered {shown}",
    }
    assert export(srv) == before
    still_serving(srv)


def test_replace_metadata_refuses_a_source_that_is_not_an_object(srv: ServerProcess) -> None:
    before = export(srv)
    r = srv.query({"type": "replace_metadata", "args": {"version": 3, "sources": [1]}})
    assert r.status_code == 400, r.text
    assert (r.json()["code"], r.json()["path"]) == ("parse-failed", "$.args.sources[0]")
    assert export(srv) == before


@pytest.mark.parametrize("version", [2, 3])
def test_replace_metadata_reads_versions_2_and_3(srv: ServerProcess, version: int) -> None:
    number, before = export(srv)
    if version == 2:
        args: dict[str, Any] = before
    else:
        md = copy.deepcopy(before)
        source = {"name": "default", "kind": "postgres", "tables": md.pop("tables")}
        args = {**md, "version": 3, "sources": [source]}
    r = srv.query({"type": "replace_metadata", "args": args})
    assert r.status_code == 200, r.text
    assert export(srv) == (number + 1, before)
    still_serving(srv)


# -- around the API ------------------------------------------------------------------------


def _store(url: str, md: dict[str, Any]) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(
                "UPDATE hdb_catalog.hdb_metadata SET metadata = $1::json, "
                "resource_version = resource_version + 1 WHERE id = 1",
                json.dumps(md),
            )
        finally:
            await conn.close()

    asyncio.run(go())


def test_stored_bad_names_still_answer_json(srv: ServerProcess, db_url: str) -> None:
    """A document written around the API (before names were checked): the bad relationship
    is reported inconsistent and left out; a custom name the schema cannot take leaves its
    table out of the schema (`svc.schema.role_schema`), reported inconsistent, while
    the rest is served."""
    _, before = export(srv)
    md = copy.deepcopy(before)
    _bad_relationship(md)
    _store(db_url, md)
    s = ServerProcess(db_url)
    try:
        got = s.query({"type": "get_inconsistent_metadata", "args": {}}).json()
        assert got["is_consistent"] is False
        assert [i["type"] for i in got["inconsistent_objects"]] == ["object_relation"]
        assert IDENTIFIER.format("bad name") in got["inconsistent_objects"][0]["reason"]
        assert s.graphql("{ article(order_by: {id: asc}) { title } }") == {
            "data": {"article": [{"title": "a"}, {"title": "b"}]}
        }
    finally:
        s.stop()
    md = copy.deepcopy(before)
    _entry(md, "author")["configuration"] = {"custom_name": "_"}  # types `__bool_exp`, …
    _store(db_url, md)
    s = ServerProcess(db_url)
    try:
        r = s.client.post("/v1/graphql", json={"query": "{ article { title } }"})
        assert r.json() == {"data": {"article": [{"title": "a"}, {"title": "b"}]}}
        got = s.query({"type": "get_inconsistent_metadata", "args": {}}).json()
        (issue,) = got["inconsistent_objects"]
        assert issue["type"] == "table"
        assert issue["definition"] == {"name": "author", "schema": "public"}
        assert 'the GraphQL schema of role "admin"' in issue["reason"]
        assert s.client.get("/healthz").text == "WARN: inconsistent objects in schema"
        # and the metadata API still works: putting the document back repairs it
        r = s.query({"type": "replace_metadata", "args": before})
        assert r.status_code == 200, r.text
        still_serving(s)
    finally:
        s.stop()


# -- svc compile ---------------------------------------------------------------------------


def test_compile_refuses_bad_name(srv: ServerProcess, db_url: str, tmp_path: Path) -> None:
    _, before = export(srv)
    good = tmp_path / "good"
    good.mkdir()
    for name, text in metadata_to_files(metadata_from_obj(before)).items():
        (good / name).write_text(text)
    ok = _compile(good, db_url)
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in (p.name for p in good.iterdir()):
        (bad / name).write_text((good / name).read_text())
    tables = (bad / "tables.yaml").read_text()
    assert "name: author\n" in tables
    (bad / "tables.yaml").write_text(tables.replace("name: articles", "name: my articles"))
    r = _compile(bad, db_url)
    assert r.returncode == 2, r.stderr
    entries = yaml.safe_load(tables)  # the file's own order
    i = next(i for i, t in enumerate(entries) if t["table"]["name"] == "author")
    expected = f"{bad / 'tables.yaml'}: $[{i}].array_relationships[0].name: " + IDENTIFIER.format(
        "my articles"
    )
    assert expected in r.stderr


def _compile(directory: Path, db_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "svc", "compile", "--dir", str(directory), "--database-url", db_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
