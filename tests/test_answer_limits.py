"""The answer bounds for roles other than admin (issue 31; `svc/api/answer_limits.py`,
`svc/plan/answer_size.py`), replaying the finding: one authenticated query alternating
`posts → author → posts` over 62 posts answered 436 MB at depth 7 and grew Postgres by
4.2 GB at depth 9, while depth and node limits did not bound it.

Now the estimate (`SVC_GRAPHQL_MAX_ANSWER_ROWS`, default 100,000) refuses it before it
runs, an answer the estimate lets through is still bounded in bytes
(`SVC_GRAPHQL_MAX_RESPONSE_BYTES`), both as `answer-limit-exceeded`; admin is not bounded;
and an admin `{ __typename }` probe is answered throughout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from svc.execute.table_stats import TableStats, from_rows
from svc.metadata.model import QualifiedName
from svc.plan.answer_size import estimate_rows
from svc.plan.nodes import Const, Param, QueryPlan, RelField, RootField, Rows, Select
from tests.probe import AdminProbe
from tests.support import ServerProcess, server_with

USER = {"x-svc-role": "user"}
SQL = """
CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE post (id int PRIMARY KEY, title text NOT NULL,
                   author_id int NOT NULL REFERENCES author (id));
INSERT INTO author SELECT g, 'author ' || g FROM generate_series(1, 3) g;
INSERT INTO post SELECT g, repeat('x', 200) || g, 1 + g % 3 FROM generate_series(1, 62) g;
ANALYZE author; ANALYZE post;
"""


def _select(table: str) -> dict[str, Any]:
    return {
        "type": "create_select_permission",
        "args": {"table": table, "role": "user", "permission": {"columns": "*", "filter": {}}},
    }


STEPS: list[dict[str, Any]] = [
    {"type": "run_sql", "args": {"sql": SQL}},
    {"type": "track_table", "args": "author"},
    {"type": "track_table", "args": "post"},
    {
        "type": "create_object_relationship",
        "args": {
            "table": "post",
            "name": "author",
            "using": {"foreign_key_constraint_on": "author_id"},
        },
    },
    {
        "type": "create_array_relationship",
        "args": {
            "table": "author",
            "name": "posts",
            "using": {"foreign_key_constraint_on": {"table": "post", "column": "author_id"}},
        },
    },
    _select("author"),
    _select("post"),
]


def alternating(depth: int) -> str:
    """`posts { author { posts { … title } } }` with `depth` levels of `posts`."""
    inner = "id title"
    for _ in range(depth - 1):
        inner = f"id author {{ posts {{ {inner} }} }}"
    return f"{{ post {{ {inner} }} }}"


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    env = {"SVC_GRAPHQL_MAX_RESPONSE_BYTES": str(4_000_000)}
    with server_with(pg_url, STEPS, env=env) as server:
        yield server


def test_the_finding_is_refused_before_it_runs(srv: ServerProcess) -> None:
    probe = AdminProbe(srv.url, "")
    with probe:
        started = time.monotonic()
        for depth in (7, 9):
            answer = srv.graphql(alternating(depth), headers=USER)
            [error] = answer["errors"]
            assert error["extensions"]["code"] == "answer-limit-exceeded", answer
            assert "SVC_GRAPHQL_MAX_ANSWER_ROWS" in error["message"]
        refused_in = time.monotonic() - started
    print(f"2 refusals in {refused_in:.2f} s; probe median {probe.result.median:.1f} ms")
    assert refused_in < 5  # never ran: a depth-9 answer took 60 s before
    assert probe.result.median < 100
    # Shallower forms of the same query are answered, their size is in the bound.
    answer = srv.graphql(alternating(2), headers=USER)
    assert len(answer["data"]["post"]) == 62
    # admin is not bounded by either limit
    assert "errors" not in srv.graphql(alternating(4))


def test_limits_make_a_deep_query_acceptable(srv: ServerProcess) -> None:
    """Each list's `limit` is counted: the same depth with small limits is answered."""
    inner = "id"
    for _ in range(8):
        inner = f"id author {{ posts(limit: 2) {{ {inner} }} }}"
    answer = srv.graphql(f"{{ post(limit: 2) {{ {inner} }} }}", headers=USER)
    assert "errors" not in answer, answer


def test_an_answer_over_the_byte_bound_is_refused(srv: ServerProcess) -> None:
    """Depth 3 is within the row estimate (62 x (1 + 21 x (1 + 1 + 21)) ≈ 30,000 rows) but
    its answer (~6 MB of titles) is over the 4 MB bound of this server."""
    answer = srv.graphql(alternating(3), headers=USER)
    [error] = answer["errors"]
    assert error["extensions"]["code"] == "answer-limit-exceeded", error
    assert "SVC_GRAPHQL_MAX_RESPONSE_BYTES" in error["message"]
    # The same request again takes the seen-request path: refused alike.
    again = srv.graphql(alternating(3), headers=USER)
    assert again["errors"][0]["extensions"]["code"] == "answer-limit-exceeded"


def test_the_estimate_follows_fan_out_and_limits() -> None:
    """`estimate_rows` on a plan: rows x (1 + fan-out per relationship level), with
    limits applied (no server)."""
    post, author = QualifiedName("post"), QualifiedName("author")
    stats = from_rows(
        [("public", "post", 62.0), ("public", "author", 3.0)],
        [("public", "post", "author_id", 3.0), ("public", "author", "id", -1.0)],
    )
    posts_of_author = RelField((("id", "author_id"),), Select(Rows(post), (("id", _col("id")),)))
    author_of_post = RelField(
        (("author_id", "id"),),
        Select(Rows(author), (("posts", posts_of_author),), single=True),
        unique=True,
    )
    plan = QueryPlan(
        "query", (RootField("post", Select(Rows(post), (("author", author_of_post),))),)
    )
    # 62 posts x (1 + 1 author x (1 + 62/3 posts))
    assert estimate_rows(plan, stats, {}) == pytest.approx(62 * (1 + 1 * (1 + 62 / 3)))
    limited = QueryPlan(
        "query",
        (RootField("post", Select(Rows(post, limit=Param(Const(5), "int")), ())),),
    )
    assert estimate_rows(limited, stats, {}) == 5
    assert estimate_rows(limited, TableStats(), {}) == 5  # no statistics: the limit holds


def _col(name: str) -> Any:
    from svc.plan.nodes import ColumnField

    return ColumnField(name)
