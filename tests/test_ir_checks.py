"""Whole-document checks are IR inconsistencies (issue 12, `svc.ir.checks`): the server lists
them in `get_inconsistent_metadata` with `svc compile`'s text, and a metadata write is
refused or accepted exactly as before."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import asyncpg
import pytest

from svc.metadata.model import QualifiedName
from tests.support import ServerProcess, create_database

SQL = """
create table author (id serial primary key, name text);
insert into author (name) values ('a');
create table book (id serial primary key, title text);
"""
PERMISSION = {"role": "user", "permission": {"columns": ["id", "name"], "filter": {}}}


@pytest.fixture(scope="module")
def db_url(pg_url: str) -> str:
    return create_database(pg_url)


@pytest.fixture(scope="module")
def srv(db_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(db_url)
    steps = [
        {"type": "run_sql", "args": {"sql": SQL}},
        {"type": "pg_track_table", "args": {"table": "author"}},
        {"type": "pg_track_table", "args": {"table": "book"}},
    ]
    r = s.query({"type": "bulk", "args": steps})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


def _export(s: ServerProcess) -> dict[str, Any]:
    r = s.query({"type": "export_metadata", "args": {}})
    assert r.status_code == 200, r.text
    md: dict[str, Any] = r.json()
    return md


def _inconsistent(s: ServerProcess) -> list[dict[str, Any]]:
    got = s.query({"type": "get_inconsistent_metadata", "args": {}}).json()
    assert got["is_consistent"] is (not got["inconsistent_objects"])
    objects: list[dict[str, Any]] = got["inconsistent_objects"]
    return objects


def _store(url: str, md: dict[str, Any]) -> None:
    """Write a document around the API (as another tool could)."""

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


def test_a_duplicate_permission_is_listed_not_refused(srv: ServerProcess) -> None:
    before = _export(srv)
    md = copy.deepcopy(before)
    author = next(t for t in md["tables"] if t["table"]["name"] == "author")
    author["select_permissions"] = [PERMISSION, PERMISSION]
    r = srv.query({"type": "replace_metadata", "args": md})
    assert r.status_code == 200, r.text
    assert _inconsistent(srv) == [
        {
            "definition": PERMISSION,
            "reason": 'select permission of role "user" is declared more than once '
            "(also $[0].select_permissions[0])",
            "type": "duplicate_declaration",
        }
    ]
    user = {"X-Svc-Role": "user"}
    r = srv.client.post("/v1/graphql", json={"query": "{ author { name } }"}, headers=user)
    assert r.json() == {"data": {"author": [{"name": "a"}]}}
    r = srv.query({"type": "replace_metadata", "args": before})
    assert r.status_code == 200, r.text
    assert _inconsistent(srv) == []


def test_a_stored_root_field_clash_is_listed(srv: ServerProcess, db_url: str) -> None:
    """A clash the metadata API refuses (`tests/test_metadata_names.py`) but a document
    written around it holds: the server that loads it lists it."""
    before = _export(srv)
    md = copy.deepcopy(before)
    book = next(t for t in md["tables"] if t["table"]["name"] == "book")
    book["configuration"] = {"custom_root_fields": {"select": "author"}}
    _store(db_url, md)
    s = ServerProcess(db_url)
    try:
        found = _inconsistent(s)
    finally:
        s.stop()
        _store(db_url, before)
    assert found == [
        {
            "definition": {"root": "query_root", "field": "author"},
            "reason": 'query_root field "author" of table "book" conflicts with the one '
            'of table "author"',
            "type": "conflicting_root_field",
        }
    ]


def _table(name: str, select: str) -> Any:
    """A stand-in for `svc.ir.model.Table` with what root-field counting reads."""
    names = {
        k: f"{k}_{name}"
        for k in ("insert", "insert_one", "update", "update_by_pk", "update_many", "delete")
    }
    roots = SimpleNamespace(
        select=select,
        select_aggregate=f"{name}_aggregate",
        select_by_pk=f"{name}_by_pk",
        delete_by_pk=f"delete_{name}_by_pk",
        **names,
    )
    return SimpleNamespace(
        name=QualifiedName("public", name),
        gql_name=name,
        root_fields=roots,
        primary_key=("id",),
        insertable=True,
        updatable_rows=True,
        deletable=True,
    )


def test_root_counts_follow_the_tables_that_changed() -> None:
    """`ROOT_COUNTS` recounts only tables whose object changed; it must agree with a
    fresh count after every change."""
    from svc.ir.root_clashes import _RootCounts

    kept = _RootCounts()
    a, b = _table("a", "a"), _table("b", "b")
    steps = [
        ({"a": a, "b": b}, False),
        ({"a": a, "b": _table("b", "a")}, True),  # b's select is now `a`
        ({"a": a, "b": b}, False),
        ({"a": a}, False),
        ({"a": a, "c": _table("c", "a")}, True),
        ({"c": _table("c", "a")}, False),
    ]
    for names, clash in steps:
        tables = {QualifiedName("public", n): t for n, t in names.items()}
        assert kept.any_clash(tables, {}) is clash
        assert _RootCounts().any_clash(tables, {}) is clash
