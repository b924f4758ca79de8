"""Query collections, the allow-list and RESTified endpoints (issue 5) over real HTTP.

One server runs with `--enable-allowlist`; a table `item` with a select permission for role
`user`. Pure rules of `svc.metadata.endpoints` are checked without a server at the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from graphql import parse, print_ast

from svc.errors import SvcError
from svc.metadata.collection_model import EndpointDefinition, QueryReference
from svc.metadata.endpoints import CreateRestEndpoint, create_rest_endpoint, endpoint_issues
from svc.metadata.model import Metadata, metadata_from_obj
from svc.metadata.query_text import strip_cached
from tests.support import ServerProcess, server_with

SETUP = """
create table item (id serial primary key, name text, flag boolean, n int);
insert into item (name, flag, n) values ('a/b', true, 1), ('c', false, 2), ('X%20Y', null, 3);
"""
USER = {"x-svc-role": "user"}
QUERIES = {
    "all": "query { item(order_by: {id: asc}) { id name } }",
    "by_name": "query ($name: String!) { item(where: {name: {_eq: $name}}) { id name } }",
    "typed": (
        "query ($flag: Boolean, $n: Int) "
        "{ item(where: {flag: {_eq: $flag}, n: {_eq: $n}}, order_by: {id: asc}) { id } }"
    ),
    "ids": "query ($ids: [Int!]!) { item(where: {id: {_in: $ids}}, order_by: {id: asc}) { id } }",
    "cached": "query @cached(ttl: 7) { item(order_by: {id: asc}) { id } }",
    "add": "mutation ($name: String) { insert_item(objects: {name: $name}) { affected_rows } }",
    "watch": "subscription { item { id } }",
}


def endpoint(name: str, url: str, query: str, methods: list[str] | None = None) -> dict[str, Any]:
    """A `create_rest_endpoint` body for a query of collection `c`."""
    return {
        "type": "create_rest_endpoint",
        "args": {
            "name": name,
            "url": url,
            "methods": methods or ["GET"],
            "definition": {"query": {"collection_name": "c", "query_name": query}},
        },
    }


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    steps: list[dict[str, Any]] = [
        {"type": "run_sql", "args": {"sql": SETUP}},
        {"type": "track_table", "args": {"name": "item"}},
        {
            "type": "create_select_permission",
            "args": {
                "table": "item",
                "role": "user",
                "permission": {"columns": ["id", "name"], "filter": {}},
            },
        },
        {
            "type": "create_query_collection",
            "args": {
                "name": "c",
                "definition": {"queries": [{"name": k, "query": v} for k, v in QUERIES.items()]},
            },
        },
        endpoint("by_name", "item/:name", "by_name"),
        endpoint("typed", "typed", "typed", ["GET", "POST"]),
        endpoint("ids", "ids", "ids", ["POST"]),
        endpoint("cached", "cached", "cached"),
        endpoint("add", "add", "add", ["POST"]),
        endpoint("all", "all", "all"),
    ]
    with server_with(pg_url, steps, "--enable-allowlist") as s:
        yield s


def ok(r: httpx.Response) -> Any:
    assert r.status_code == 200, r.text
    return r.json()


def err(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert (r.status_code, r.json().get("code")) == (status, code), r.text
    body: dict[str, Any] = r.json()
    return body


def export(s: ServerProcess) -> dict[str, Any]:
    out: dict[str, Any] = ok(s.query({"type": "export_metadata", "args": {}}))
    return out


# -- collections --------------------------------------------------------------------------


def test_collection_errors(srv: ServerProcess) -> None:
    create = {"type": "create_query_collection", "args": {"name": "c", "definition": {}}}
    assert "already exists" in err(srv.query(create), 400, "already-exists")["error"]
    dup = {
        "type": "create_query_collection",
        "args": {
            "name": "d",
            "definition": {
                "queries": [{"name": "q", "query": "{a}"}, {"name": "q", "query": "{b}"}]
            },
        },
    }
    err(srv.query(dup), 400, "not-supported")
    bad = {
        "type": "create_query_collection",
        "args": {"name": "d", "definition": {"queries": [{"name": "q", "query": "{ a"}]}},
    }
    assert err(srv.query(bad), 400, "parse-failed")["path"] == "$.args.definition.queries[0].query"
    missing = {"type": "drop_query_collection", "args": {"collection": "nope"}}
    assert err(srv.query(missing), 400, "not-exists")["path"] == "$.args.collection"
    add = {
        "type": "add_query_to_collection",
        "args": {"collection_name": "c", "query_name": "all", "query": "{ item { id } }"},
    }
    err(srv.query(add), 400, "already-exists")
    drop = {
        "type": "drop_query_from_collection",
        "args": {"collection_name": "c", "query_name": "x"},
    }
    err(srv.query(drop), 400, "not-found")


def test_add_and_drop_a_query(srv: ServerProcess) -> None:
    q = "query { item { name } }"
    args = {"collection_name": "c", "query_name": "extra", "query": q}
    ok(srv.query({"type": "add_query_to_collection", "args": args}))
    queries = export(srv)["query_collections"][0]["definition"]["queries"]
    assert queries[-1] == {"name": "extra", "query": q}
    args = {"collection_name": "c", "query_name": "extra"}
    ok(srv.query({"type": "drop_query_from_collection", "args": args}))
    assert [
        x["name"] for x in export(srv)["query_collections"][0]["definition"]["queries"]
    ] == list(QUERIES)


def test_a_query_that_does_not_validate_is_refused(srv: ServerProcess) -> None:
    before = export(srv)
    args = {"collection_name": "c", "query_name": "bad", "query": "{ nope { id } }"}
    body = err(srv.query({"type": "add_query_to_collection", "args": args}), 500, "unexpected")
    assert body["error"] == "cannot continue due to newly found inconsistent metadata"
    assert body["internal"][0]["type"] == "query_collections"
    assert "nope" in body["internal"][0]["reason"]
    assert export(srv) == before


def test_untracking_a_table_a_stored_query_uses_is_refused(srv: ServerProcess) -> None:
    body = err(srv.query({"type": "untrack_table", "args": {"table": "item"}}), 500, "unexpected")
    reasons = " ".join(i["reason"] for i in body["internal"])
    assert "REST endpoint(s)" in reasons
    assert any(t["table"]["name"] == "item" for t in export(srv)["tables"])


def test_dropping_a_collection_with_endpoints_needs_cascade(srv: ServerProcess) -> None:
    r = srv.query({"type": "drop_query_collection", "args": {"collection": "c"}})
    assert "rest_endpoint by_name" in err(r, 400, "dependency-error")["error"]


def test_drop_with_cascade_removes_allowlist_entry_and_endpoints(srv: ServerProcess) -> None:
    steps = [
        {
            "type": "create_query_collection",
            "args": {
                "name": "tmp",
                "definition": {"queries": [{"name": "q", "query": "{ item { id } }"}]},
            },
        },
        {"type": "add_collection_to_allowlist", "args": {"collection": "tmp"}},
        {
            "type": "create_rest_endpoint",
            "args": {
                "name": "tmp",
                "url": "tmp",
                "methods": ["GET"],
                "definition": {"query": {"collection_name": "tmp", "query_name": "q"}},
            },
        },
    ]
    ok(srv.query({"type": "bulk", "args": steps}))
    r = srv.query({"type": "drop_query_collection", "args": {"collection": "tmp"}})
    assert "allowlist" in err(r, 400, "dependency-error")["error"]
    ok(srv.query({"type": "drop_query_collection", "args": {"collection": "tmp", "cascade": True}}))
    md = export(srv)
    assert [c["name"] for c in md["query_collections"]] == ["c"]
    assert all(e.get("collection") != "tmp" for e in md.get("allowlist", []))
    assert all(e["name"] != "tmp" for e in md["rest_endpoints"])


# -- allow-list -----------------------------------------------------------------------------


def test_allowlist(srv: ServerProcess) -> None:
    q = QUERIES["all"]
    denied = srv.graphql(q, headers=USER)
    assert denied["errors"][0]["message"] == "query is not allowed"
    assert denied["errors"][0]["extensions"]["code"] == "validation-failed"
    assert "data" in srv.graphql("query { item { n } }")  # admin is never restricted
    add = {"type": "add_collection_to_allowlist", "args": {"collection": "c"}}
    ok(srv.query(add))
    assert "already exists in the allowlist" in ok(srv.query(add))["message"]
    try:
        assert srv.graphql(q, headers=USER)["data"]["item"][0] == {"id": 1, "name": "a/b"}
        same = "# a comment\nquery {\n  item(order_by: {id: asc}) { __typename id   name }\n}"
        assert "data" in srv.graphql(same, headers=USER)
        other = srv.graphql("query { item { id } }", headers=USER)
        assert other["errors"][0]["message"] == "query is not allowed"
        r = srv.query({"type": "drop_query_collection", "args": {"collection": "c"}})
        err(r, 400, "dependency-error")
    finally:
        drop = {"type": "drop_collection_from_allowlist", "args": {"collection": "c"}}
        ok(srv.query(drop))
    err(srv.query(drop), 400, "not-found")
    assert srv.graphql(q, headers=USER)["errors"][0]["message"] == "query is not allowed"


def test_allowlist_scope_per_role(srv: ServerProcess) -> None:
    q = QUERIES["all"]
    scope = {"global": False, "roles": ["other"]}
    ok(
        srv.query(
            {"type": "add_collection_to_allowlist", "args": {"collection": "c", "scope": scope}}
        )
    )
    try:
        assert export(srv)["allowlist"] == [{"collection": "c", "scope": scope}]
        assert "errors" in srv.graphql(q, headers=USER)
        update = {
            "type": "update_scope_of_collection_in_allowlist",
            "args": {"collection": "c", "scope": {"global": False, "roles": ["user"]}},
        }
        ok(srv.query(update))
        assert "data" in srv.graphql(q, headers=USER)
    finally:
        ok(srv.query({"type": "drop_collection_from_allowlist", "args": {"collection": "c"}}))


# -- REST endpoints: management ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "query", "status", "code", "text"),
    [
        ("", "all", 400, "parse-failed", "empty string not allowed"),
        ("x//y", "all", 400, "invalid-configuration", "Empty segments"),
        ("x/:", "all", 400, "invalid-configuration", "unnamed variables"),
        ("x/", "all", 400, "invalid-configuration", "Empty segments"),
        ("x/:a/:a", "by_name", 400, "invalid-configuration", "Duplicate variables"),
        ("watch", "watch", 400, "invalid-configuration", "is a subscription"),
        ("nope", "nope", 400, "invalid-configuration", "does not exist"),
        (
            ":any",
            "all",
            400,
            "invalid-configuration",
            "Ambiguous URL paths: all, cached, :any, typed",
        ),
    ],
)
def test_endpoint_creation_rules(
    srv: ServerProcess, url: str, query: str, status: int, code: str, text: str
) -> None:
    assert text in err(srv.query(endpoint("new", url, query)), status, code)["error"]


def test_endpoint_name_and_drop(srv: ServerProcess) -> None:
    err(srv.query(endpoint("all", "other", "all")), 400, "already-exists")
    ok(srv.query(endpoint("tmp", "item/:name/x", "by_name")))  # longer path: no conflict
    ok(srv.query({"type": "drop_rest_endpoint", "args": {"name": "tmp"}}))
    r = srv.query({"type": "drop_rest_endpoint", "args": {"name": "tmp"}})
    err(r, 400, "not-exists")
    assert srv.client.get("/api/rest/item/c/x").status_code == 404


def test_a_different_method_is_no_conflict(srv: ServerProcess) -> None:
    ok(srv.query(endpoint("by_name_delete", "item/:name", "by_name", ["DELETE"])))
    try:
        assert ok(srv.client.delete("/api/rest/item/c"))["item"] == [{"id": 2, "name": "c"}]
        body = err(srv.client.put("/api/rest/item/c"), 405, "method-not-allowed")
        assert body["error"] == "Allowed methods: DELETE, GET"
    finally:
        ok(srv.query({"type": "drop_rest_endpoint", "args": {"name": "by_name_delete"}}))


def test_a_path_variable_the_query_does_not_declare_is_unexpected(srv: ServerProcess) -> None:
    ok(srv.query(endpoint("other", "other/:other", "all")))
    try:
        body = err(srv.client.get("/api/rest/other/x"), 400, "bad-request")
        assert body["error"] == "Unexpected variable other"
    finally:
        ok(srv.query({"type": "drop_rest_endpoint", "args": {"name": "other"}}))


# -- REST endpoints: calls ------------------------------------------------------------------


def test_route_segment_is_a_variable(srv: ServerProcess) -> None:
    assert ok(srv.client.get("/api/rest/item/c")) == {"item": [{"id": 2, "name": "c"}]}


def test_encoded_slash_stays_in_a_path_variable(srv: ServerProcess) -> None:
    assert ok(srv.client.get("/api/rest/item/a%2Fb"))["item"] == [{"id": 1, "name": "a/b"}]
    assert ok(srv.client.get("/api/rest/item/X%2520Y"))["item"][0]["id"] == 3


def test_query_string_values_follow_declared_types(srv: ServerProcess) -> None:
    assert ok(srv.client.get("/api/rest/typed?flag"))["item"] == [{"id": 1}]
    assert ok(srv.client.get("/api/rest/typed?flag=false&n=2"))["item"] == [{"id": 2}]
    assert len(ok(srv.client.get("/api/rest/typed?n="))["item"]) == 3  # empty: omitted
    body = err(srv.client.get("/api/rest/typed?n=x"), 400, "validation-failed")
    assert "n" in body["error"]
    assert (
        "Unexpected variable zz"
        in err(srv.client.get("/api/rest/typed?zz=1"), 400, "bad-request")["error"]
    )


def test_body_values(srv: ServerProcess) -> None:
    assert ok(srv.client.post("/api/rest/typed", json={"n": 3}))["item"] == [{"id": 3}]
    assert ok(srv.client.post("/api/rest/typed", data={"n": "3"}))["item"] == [{"id": 3}]
    assert ok(srv.client.post("/api/rest/ids", json={"ids": [3, 1]}))["item"] == [
        {"id": 1},
        {"id": 3},
    ]
    err(srv.client.post("/api/rest/ids?ids=1"), 400, "bad-request")  # no lists in text


def test_missing_variable_wrong_method_and_unknown_path(srv: ServerProcess) -> None:
    err(srv.client.get("/api/rest/typed/extra"), 404, "not-found")
    body = err(srv.client.get("/api/rest/ids"), 405, "method-not-allowed")
    assert body["error"] == "Allowed methods: POST"
    err(srv.client.post("/api/rest/ids", json={}), 400, "validation-failed")


def test_cached_header_mutation_and_role(srv: ServerProcess) -> None:
    r = srv.client.get("/api/rest/cached")
    assert ok(r)["item"][0] == {"id": 1}
    assert r.headers["cache-control"] == "max-age=7"
    assert ok(srv.client.post("/api/rest/add", json={"name": "new"})) == {
        "insert_item": {"affected_rows": 1}
    }
    ok(srv.query({"type": "run_sql", "args": {"sql": "delete from item where name = 'new'"}}))
    # the role's own schema and the allow-list apply, as for /v1/graphql
    body = err(srv.client.get("/api/rest/typed?n=1", headers=USER), 400, "validation-failed")
    assert body["error"] == "query is not allowed"
    ok(srv.query({"type": "add_collection_to_allowlist", "args": {"collection": "c"}}))
    try:
        assert ok(srv.client.get("/api/rest/item/c", headers=USER))["item"] == [
            {"id": 2, "name": "c"}
        ]
        err(srv.client.get("/api/rest/typed?n=1", headers=USER), 400, "validation-failed")
    finally:
        ok(srv.query({"type": "drop_collection_from_allowlist", "args": {"collection": "c"}}))


def test_replace_metadata_round_trips(srv: ServerProcess) -> None:
    md = export(srv)
    ok(srv.query({"type": "replace_metadata", "args": md}))
    assert export(srv) == md
    assert ok(srv.client.get("/api/rest/item/c"))["item"][0]["id"] == 2


# -- pure rules --------------------------------------------------------------------------------


def _md(*endpoints: tuple[str, str, list[str]]) -> Metadata:
    return metadata_from_obj(
        {
            "version": 2,
            "query_collections": [
                {"name": "c", "definition": {"queries": [{"name": "q", "query": "{ a }"}]}}
            ],
            "rest_endpoints": [
                {
                    "name": name,
                    "url": url,
                    "methods": methods,
                    "definition": {"query": {"collection_name": "c", "query_name": "q"}},
                    "comment": None,
                }
                for name, url, methods in endpoints
            ],
        }
    )


def test_ambiguity_needs_a_common_method_and_a_common_path() -> None:
    assert endpoint_issues(_md(("a", "x/:id", ["GET"]), ("b", "x/y", ["POST"]))) == []
    assert endpoint_issues(_md(("a", "x/:id", ["GET"]), ("b", "z/y", ["GET"]))) == []
    assert endpoint_issues(_md(("a", "x/:id", ["GET"]), ("b", "x/y/z", ["GET"]))) == []
    (issue,) = endpoint_issues(_md(("b", "x/y", ["GET"]), ("a", ":p/y", ["GET", "PUT"])))
    assert issue.reason == "Ambiguous URL paths: :p/y, x/y"
    assert issue.endpoints == {"a", "b"}


def test_create_rest_endpoint_reports_only_its_own_issues() -> None:
    md = _md(("a", "x//y", ["GET"]))  # already inconsistent
    args = CreateRestEndpoint(name="b", url="ok", methods=["GET"], definition=_ref())
    out = create_rest_endpoint(md, args)
    assert [e.name for e in out.rest_endpoints] == ["a", "b"]
    with pytest.raises(SvcError) as info:
        create_rest_endpoint(
            out, CreateRestEndpoint(name="c", url="ok", methods=["GET"], definition=_ref())
        )
    assert info.value.code == "invalid-configuration"


def _ref() -> EndpointDefinition:
    return EndpointDefinition(query=QueryReference(collection_name="c", query_name="q"))


def test_strip_cached() -> None:
    doc, ttl = strip_cached(parse("query Q @cached { a }"))
    assert (print_ast(doc), ttl) == ("query Q {\n  a\n}", 60)
    doc, ttl = strip_cached(parse("query @cached(ttl: 5, refresh: true) { a }"))
    assert ttl == 5 and "cached" not in print_ast(doc)
    assert strip_cached(parse("{ a }"))[1] is None
