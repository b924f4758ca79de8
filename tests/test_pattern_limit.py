"""The longest regular expression a role other than admin may send
(`SVC_GRAPHQL_MAX_PATTERN_LENGTH`, default 1,000; `Operator.pattern`, `Param.max_chars`):
20 anonymous 100,000-character `_iregex` patterns held every connection for 40 s (issue
31). A literal is refused when the query is planned, a variable's value when its
arguments are resolved; both `validation-failed`, no statement sent. Admin is not bound."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import ServerProcess, server_with

LIMIT = 50
ROLE = {"x-svc-role": "user"}
VARIABLE = "query($p: String) { t(where: {name: {_iregex: $p}}) { id } }"


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    sql = "CREATE TABLE t (id int PRIMARY KEY, name text); INSERT INTO t VALUES (1, 'abc')"
    permission = {"columns": ["id", "name"], "filter": {}}
    steps = [
        {"type": "run_sql", "args": {"sql": sql}},
        {"type": "track_table", "args": {"table": "t"}},
        {
            "type": "create_select_permission",
            "args": {"table": "t", "role": "user", "permission": permission},
        },
    ]
    env = {"SVC_GRAPHQL_MAX_PATTERN_LENGTH": str(LIMIT)}
    with server_with(pg_url, steps, env=env) as server:
        yield server


def literal(pattern: str, op: str = "_iregex") -> str:
    return f'{{ t(where: {{name: {{{op}: "{pattern}"}}}}) {{ id }} }}'


def refused(answer: dict[str, object]) -> bool:
    errors = answer.get("errors")
    return (
        isinstance(errors, list)
        and errors[0]["extensions"]["code"] == "validation-failed"
        and "SVC_GRAPHQL_MAX_PATTERN_LENGTH" in errors[0]["message"]
    )


def test_patterns_up_to_the_bound_are_answered(srv: ServerProcess) -> None:
    pattern = "a" + "." * (LIMIT - 2) + "*"
    assert srv.graphql(literal("^a"), headers=ROLE) == {"data": {"t": [{"id": 1}]}}
    assert srv.graphql(VARIABLE, {"p": "b"}, headers=ROLE) == {"data": {"t": [{"id": 1}]}}
    assert "errors" not in srv.graphql(literal(pattern), headers=ROLE)


@pytest.mark.parametrize("op", ["_regex", "_iregex", "_nregex", "_niregex", "_similar"])
def test_longer_patterns_are_refused(srv: ServerProcess, op: str) -> None:
    long = "a" * (LIMIT + 1)
    assert refused(srv.graphql(literal(long, op), headers=ROLE))
    query = f"query($p: String) {{ t(where: {{name: {{{op}: $p}}}}) {{ id }} }}"
    assert "errors" not in srv.graphql(query, {"p": "a"}, headers=ROLE)  # plan cached
    assert refused(srv.graphql(query, {"p": long}, headers=ROLE))  # same plan, longer value


def test_like_is_not_a_pattern_and_admin_is_not_bound(srv: ServerProcess) -> None:
    long = "a" * (LIMIT + 1)
    assert "errors" not in srv.graphql(literal(long, "_like"), headers=ROLE)
    assert srv.graphql(literal(long)) == {"data": {"t": []}}
