"""Property test (issue 11 acceptance): random bodies on every POST endpoint of one server.

2,000 requests of random byte strings, random JSON shapes (objects, arrays, strings,
numbers, nested) and near-valid bodies (`{"query": …}`, `{"type": …, "args": …}` whose
type is never an operation that changes metadata) to `/v1/graphql`, `/v1/query`,
`/v1/metadata`, `/v1/graphql/explain` and `/api/rest/…`: every answer has a non-empty
JSON body, none is a 5xx, and the metadata's `resource_version` is unchanged.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from svc.api.metadata import OPERATIONS, READ_ONLY
from tests.support import ServerProcess, server_with

EXAMPLES = 2_000
SETUP = """
create table author (id serial primary key, name text not null, born date);
insert into author (name, born) values ('ann', '1970-01-01'), ('bob', null);
"""
QUERY = "query ($id: Int) { author(where: {id: {_eq: $id}}) { id name born } }"
PATHS = ["/v1/graphql", "/v1/query", "/v1/metadata", "/v1/graphql/explain", "/api/rest/"]
# Operation names a fuzzed `type` may take: anything but the ones that write metadata.
WRITES = frozenset(OPERATIONS) - READ_ONLY - {"bulk", "concurrent_bulk"}

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=25,
)
graphql_text = st.one_of(
    st.text(max_size=80),
    st.sampled_from(
        [
            "{ author { id } }",
            QUERY,
            "{ author(where: $x) { id } }",
            "query { __schema { types { name } } }",
            "subscription { author { id } }",
            "{ author_by_pk(id: 1) { name } }",
            '{ author(limit: -1, offset: "x") { id } }',
            "query ($d: date) { author(where: {born: {_gt: $d}}) { id } }",
        ]
    ),
)
safe_type = st.one_of(
    st.text(max_size=30),
    st.sampled_from(sorted(READ_ONLY | {"bulk", "select", "count", "insert", "nope"})),
).filter(lambda t: t not in WRITES)


@st.composite
def near_valid(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["graphql", "batch", "operation", "bulk", "explain"]))
    if kind == "graphql":
        body = {"query": draw(graphql_text)}
        if draw(st.booleans()):
            body["variables"] = draw(json_values)
        if draw(st.booleans()):
            body["operationName"] = draw(st.text(max_size=10) | st.none())
        return body
    if kind == "batch":
        return [{"query": draw(graphql_text), "variables": draw(json_values)}]
    if kind == "operation":
        return {"type": draw(safe_type), "args": draw(json_values)}
    if kind == "bulk":
        steps = st.fixed_dictionaries({"type": safe_type, "args": json_values})
        return {"type": "bulk", "args": draw(st.lists(steps, max_size=3))}
    return {"query": {"query": draw(graphql_text), "variables": draw(json_values)}}


def _encoded(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(_encoded),
    near_valid().map(_encoded),
    # JSON with bytes that are not UTF-8 inside a string.
    st.tuples(st.text(max_size=10), st.binary(min_size=1, max_size=8)).map(
        lambda p: b'{"query": "' + p[0].encode() + b"\xff" + p[1] + b'"}'
    ),
)
requests = st.tuples(
    st.sampled_from(PATHS),
    st.sampled_from(["authors", "authors/x", "nowhere", ""]),
    bodies,
    st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded"]),
)


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    steps: list[dict[str, Any]] = [
        {"type": "run_sql", "args": {"sql": SETUP}},
        {"type": "track_table", "args": {"name": "author"}},
        {
            "type": "create_query_collection",
            "args": {"name": "c", "definition": {"queries": [{"name": "q", "query": QUERY}]}},
        },
        {
            "type": "create_rest_endpoint",
            "args": {
                "name": "authors",
                "url": "authors",
                "methods": ["GET", "POST"],
                "definition": {"query": {"collection_name": "c", "query_name": "q"}},
            },
        },
    ]
    with server_with(pg_url, steps, env={"SVC_GRAPHQL_SERVER_WORKERS": "2"}) as s:
        yield s


def _version(srv: ServerProcess) -> int:
    r = srv.query({"type": "export_metadata", "version": 2, "args": {}})
    assert r.status_code == 200, r.text
    version: int = r.json()["resource_version"]
    return version


def test_random_bodies_never_break_an_endpoint(srv: ServerProcess) -> None:
    before = _version(srv)
    statuses: Counter[int] = Counter()
    failures: list[str] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.generate],  # a failure is reported as found: no shrinking time
        suppress_health_check=list(HealthCheck),
    )
    @given(requests)
    def post(request: tuple[str, str, bytes, str]) -> None:
        path, rest, body, content_type = request
        url = path + rest if path == "/api/rest/" else path
        r = srv.client.post(url, content=body, headers={"content-type": content_type})
        statuses[r.status_code] += 1
        problem = None
        if not r.content:
            problem = "empty body"
        elif r.status_code >= 500:
            problem = f"status {r.status_code}"
        else:
            try:
                json.loads(r.content)
            except ValueError:
                problem = "body is not JSON"
        if problem is not None:
            failures.append(f"{problem}: POST {url} {body[:200]!r} -> {r.text[:300]}")
        assert problem is None, failures[-1]

    try:
        post()
    except httpx.HTTPError as exc:
        pytest.fail(f"transport error {exc!r}; statuses so far {dict(statuses)}")
    assert sum(statuses.values()) == EXAMPLES
    assert not failures
    assert _version(srv) == before
    # The fuzzing reached past the parsers: some requests were answered successfully.
    assert statuses[200] > 0 and sum(n for s, n in statuses.items() if 400 <= s < 500) > 0
