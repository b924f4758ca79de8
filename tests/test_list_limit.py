"""The most list items a request's variables may hold (`SVC_GRAPHQL_MAX_LIST_ITEMS`,
default 100,000; `svc/api/request.py` `coerce_variables`): an anonymous `_in` list of
millions of ids grew a worker by ~14x the body before (issue 31); past the bound the
request is refused before coercion, `validation-failed` at `$.variableValues`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import ServerProcess, server_with

LIMIT = 1000
QUERY = "query($ids: [Int!]) { t(where: {id: {_in: $ids}}) { id } }"
NESTED = "query($w: t_bool_exp) { t(where: $w) { id } }"


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    sql = "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 5)"
    steps = [
        {"type": "run_sql", "args": {"sql": sql}},
        {"type": "track_table", "args": {"table": "t"}},
    ]
    with server_with(pg_url, steps, env={"SVC_GRAPHQL_MAX_LIST_ITEMS": str(LIMIT)}) as server:
        yield server


def test_lists_up_to_the_bound_are_answered(srv: ServerProcess) -> None:
    ids = list(range(1, LIMIT + 1))
    answer = srv.graphql(QUERY, {"ids": ids})
    assert answer == {"data": {"t": [{"id": i} for i in range(1, 6)]}}


def test_more_items_are_refused_before_coercion(srv: ServerProcess) -> None:
    for query, variables in [
        (QUERY, {"ids": list(range(LIMIT + 1))}),
        # counted across every list of the variables, nested ones included
        (NESTED, {"w": {"_or": [{"id": {"_in": list(range(LIMIT // 2 + 1))}}] * 2}}),
    ]:
        answer = srv.graphql(query, variables)
        [error] = answer["errors"]
        assert error["extensions"] == {"code": "validation-failed", "path": "$.variableValues"}
        assert "SVC_GRAPHQL_MAX_LIST_ITEMS" in error["message"]
    assert srv.graphql("{ __typename }") == {"data": {"__typename": "query_root"}}
