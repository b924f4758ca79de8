"""Golden SQL of the Relay API (`svc.sql.relay`): connection pagination forwards and
backwards, cursors over an aggregate order, a nested connection and `node`, kept in
`golden/relay_*.sql` as reviewed snapshots (syrupy; the schema and metadata of
`tests/test_golden.py`). Refresh with
`uv run pytest tests/test_golden_relay.py --snapshot-update`.

As there, a snapshot is sqlglot's pretty rendering of the statement
(`tests.sql_oracle.pretty`); the text svc rendered runs against Postgres and the pretty
form must give the same answer, which is checked here too."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from svc.api.graphql import GraphQLRequest, GraphQLService
from svc.api.state import State
from svc.execute.db import Database
from svc.execute.params import resolve
from tests.sql_oracle import pretty
from tests.test_golden import GoldenSQL, compiled_env  # noqa: F401 (the module fixture)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


PAGE = (
    "{ edges { cursor node { id title } } "
    "pageInfo { startCursor endCursor hasPreviousPage hasNextPage } }"
)
CASES: dict[str, tuple[str, Any]] = {
    "relay_first": ("{ article_connection(first: 2) " + PAGE + " }", None),
    "relay_after_where_order_by": (
        "query q($after: String) { article_connection(first: 1, after: $after, "
        "where: {published: {_eq: true}}, order_by: {views: desc}) " + PAGE + " }",
        {"after": _b64('{"views" : 10, "id" : 1}')},
    ),
    "relay_last_before": (
        '{ article_connection(last: 1, before: "' + _b64('{"id" : 3}') + '") ' + PAGE + " }",
        None,
    ),
    "relay_aggregate_order_cursor": (
        "{ author_connection(first: 1, after: "
        f'"{_b64("""{"articles_aggregate" : {"count" : 2}, "id" : 1}""")}", '
        "order_by: {articles_aggregate: {count: desc}}) { edges { cursor node { name } } } }",
        None,
    ),
    "relay_nested_connection": (
        "{ author_connection { edges { node { id name articles_connection(last: 1) "
        "{ edges { cursor node { title } } pageInfo { hasPreviousPage } } } } } }",
        None,
    ),
    "relay_node": (
        "query q($id: ID!) { node(id: $id) { id ... on article { title author { id } } } }",
        {"id": _b64('[1, "public", "article", 2]')},
    ),
}
EXPECTED = {
    "relay_first": '"hasNextPage":true',
    "relay_after_where_order_by": '"title":"Three"',
    "relay_last_before": '"title":"Two"',
    "relay_aggregate_order_cursor": '"name":"Bob"',
    "relay_nested_connection": '"hasPreviousPage":true',
    "relay_node": '"title":"Two"',
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_relay_sql(
    compiled_env: tuple[State, Database, asyncio.AbstractEventLoop],  # noqa: F811
    case: str,
    snapshot: Any,
) -> None:
    state, db, loop = compiled_env
    relay = state.relay_state()
    query, variables = CASES[case]
    service = GraphQLService(db, stringify=False)
    _, compiled, coerced = service.compile(relay, "admin", GraphQLRequest(query, variables))
    stmt = compiled.statement
    text = f"-- {query}\n-- variables: {variables}\n{pretty(stmt.sql)};\n"
    assert text == snapshot(extension_class=GoldenSQL)
    args = resolve(stmt.params, coerced, {})
    values = loop.run_until_complete(db.query_json(stmt.sql, args, len(compiled.aliases)))
    assert EXPECTED[case] in json.dumps(json.loads(values[0]), separators=(",", ":")), values
    as_reviewed = pretty(stmt.sql)
    assert (
        loop.run_until_complete(db.query_json(as_reviewed, args, len(compiled.aliases))) == values
    )
