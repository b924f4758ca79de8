"""Variables inside a json/jsonb literal (`{k: $v}`) are read as JSON, as the reference's
`jsonScalar` reads them (`Hasura/GraphQL/Parser/Internal/Scalars.hs`: "'valueToJSON' does
properly unpack variables"): in filters (`_contains`), inserted values and `_append`.
They answered 500 (issue 31). The value is part of the plan, so a second request with
another value must not reuse the first one's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, server_with

SQL = "CREATE TABLE doc (id int PRIMARY KEY, j jsonb NOT NULL DEFAULT '{}')"


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    steps = [
        {"type": "run_sql", "args": {"sql": SQL}},
        {"type": "track_table", "args": {"table": "doc"}},
    ]
    with server_with(pg_url, steps) as server:
        yield server


def data(srv: ServerProcess, query: str, variables: dict[str, Any]) -> Any:
    answer = srv.graphql(query, variables)
    assert "errors" not in answer, answer
    return answer["data"]


INSERT = "mutation($id: Int!, $v: jsonb) { insert_doc_one(object: {id: $id, j: {k: $v}}) { j } }"
CONTAINS = "query($v: jsonb) { doc(where: {j: {_contains: {k: $v}}}, order_by: {id: asc}) { id } }"
APPEND = (
    "mutation($v: jsonb) { update_doc(where: {id: {_eq: 1}}, _append: {j: {a: $v}})"
    " { returning { j } } }"
)


def test_variables_inside_jsonb_literals(srv: ServerProcess) -> None:
    assert data(srv, INSERT, {"id": 1, "v": [1, 2]}) == {"insert_doc_one": {"j": {"k": [1, 2]}}}
    assert data(srv, INSERT, {"id": 2, "v": "two"}) == {"insert_doc_one": {"j": {"k": "two"}}}
    assert data(srv, CONTAINS, {"v": [1]}) == {"doc": [{"id": 1}]}
    assert data(srv, CONTAINS, {"v": "two"}) == {"doc": [{"id": 2}]}  # not the cached [1]
    assert data(srv, CONTAINS, {"v": {"x": 1}}) == {"doc": []}
    appended = data(srv, APPEND, {"v": True})
    assert appended == {"update_doc": {"returning": [{"j": {"k": [1, 2], "a": True}}]}}


def test_an_absent_variable_inside_a_literal_is_null(srv: ServerProcess) -> None:
    query = "query($v: jsonb) { doc(where: {j: {_contains: {k: $v}}}) { id } }"
    assert data(srv, query, {}) == {"doc": []}
