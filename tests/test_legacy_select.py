"""The legacy `/v1/query` `select` (Hasura v1 `SelectQuery`: `table`, `columns`, `where`,
`order_by`, `limit`, `offset`): `where` and the window were dropped (every row answered,
issue 31); an unknown key is refused rather than dropped. A role's permission filter and
row limit still apply on top of the caller's `where`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, server_with

SQL = """
CREATE TABLE book (id int PRIMARY KEY, title text, year int);
INSERT INTO book VALUES (1, 'a', 2001), (2, 'b', 1999), (3, 'c', NULL), (4, 'd', 2010);
"""
ROLE = {"x-svc-role": "reader"}


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    permission = {"columns": ["id", "year"], "filter": {"id": {"_lt": 4}}, "limit": 2}
    steps: list[Any] = [
        {"type": "run_sql", "args": {"sql": SQL}},
        {"type": "track_table", "args": {"table": "book"}},
        {
            "type": "create_select_permission",
            "args": {"table": "book", "role": "reader", "permission": permission},
        },
    ]
    with server_with(pg_url, steps) as server:
        yield server


def select(srv: ServerProcess, headers: dict[str, str] | None = None, **args: Any) -> Any:
    body = {"type": "select", "args": {"table": "book", "columns": ["id"], **args}}
    r = srv.query(body, headers=headers or {})
    return r.status_code, r.json()


def ids(answer: tuple[int, Any]) -> list[int]:
    status, rows = answer
    assert status == 200, rows
    return [row["id"] for row in rows]


def test_where_order_by_limit_offset(srv: ServerProcess) -> None:
    assert ids(select(srv, where={"year": {"$gt": 2000}}, order_by="-id")) == [4, 1]
    assert ids(select(srv, where={"title": "b"})) == [2]  # implicit _eq
    assert ids(select(srv, order_by=["+year"])) == [2, 1, 4, 3]  # nulls last ascending
    assert ids(select(srv, order_by=[{"column": "year", "type": "desc"}])) == [3, 4, 1, 2]
    ordered = [{"column": "year", "type": "desc", "nulls": "last"}]
    assert ids(select(srv, order_by=ordered)) == [4, 1, 2, 3]
    assert ids(select(srv, order_by="id", limit=2, offset=1)) == [2, 3]


def test_a_roles_filter_and_limit_still_apply(srv: ServerProcess) -> None:
    # reader sees ids 1-3, at most 2 rows
    assert ids(select(srv, ROLE, order_by="-id")) == [3, 2]
    assert ids(select(srv, ROLE, where={"year": {"$gt": 2000}})) == [1]


@pytest.mark.parametrize(
    ("args", "code", "path"),
    [
        ({"wher": {"id": 1}}, "parse-failed", "$.args"),
        ({"where": {"nope": {"$eq": 1}}}, "validation-failed", "$.args.where"),
        ({"order_by": "nope"}, "not-exists", "$.args.order_by[0]"),
        ({"order_by": [{"column": "id", "type": "up"}]}, "parse-failed", "$.args.order_by[0]"),
        ({"limit": -1}, "parse-failed", "$.args.limit"),
    ],
)
def test_bad_arguments_are_refused(
    srv: ServerProcess, args: dict[str, Any], code: str, path: str
) -> None:
    status, body = select(srv, **args)
    assert status == 400, body
    assert (body["code"], body["path"]) == (code, path), body
