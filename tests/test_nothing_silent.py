"""Nothing of a metadata document is dropped without a word: every object svc cannot apply
is refused at apply (400, its code and JSON path) or listed by `get_inconsistent_metadata`
with a reason and kept in the stored document (`svc.metadata.unsupported`,
`svc.ir.unsupported_issues`, `svc.schema.role_schema`), on a real `svc serve` and
Postgres.

Reference behaviour followed (hasura/graphql-engine): `server/src-lib/Hasura/RQL/Types/
Metadata/Object.hs` (`InconsistentMetadata`, `MetadataObjId` type names: `table`,
`object_relation`, `<kind>_permission`, `computed_field`, `remote_relationship`,
`function`, `action`, `custom_types`, `remote_schema`, `inherited_role`, …),
`replace_metadata` with and without `allow_inconsistent_metadata` (what `hasura metadata
apply` sends unless `--disallow-inconsistent-metadata`), `Hasura/Server/App.hs`
`healthzAction` (200 `WARN: inconsistent objects in schema`, 500 with `strict=true`),
`Hasura/GraphQL/Schema/Select.hs` Note [Selectability of tables] (a table whose select
permission lists no columns is served as an object type without fields).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

from svc.cli.compile import compile_metadata, introspect
from svc.metadata.directory import DirectoryError, metadata_from_files, metadata_to_files
from svc.metadata.model import metadata_from_obj
from tests.fixture_servers import remote_graphql
from tests.support import ServerProcess, create_database

SQL = """
CREATE TABLE author (id int PRIMARY KEY, name text);
CREATE TABLE article (id int PRIMARY KEY, title text, author_id int REFERENCES author(id));
CREATE TABLE profile (pid int PRIMARY KEY, uid int);
INSERT INTO author VALUES (1, 'ann'), (2, 'bob');
INSERT INTO article VALUES (1, 'a', 1), (2, 'b', 2);
INSERT INTO profile VALUES (10, 1), (20, 2), (30, NULL);
CREATE FUNCTION search_articles(q text) RETURNS SETOF article
  AS $$ SELECT * FROM article WHERE title ILIKE '%' || q || '%' $$ LANGUAGE sql STABLE;
"""
USERS = "http://localhost:5000/user-graphql"
UNREACHABLE = "http://127.0.0.1:9/graphql"


@pytest.fixture(scope="module")
def remotes() -> Iterator[Any]:
    """The corpus's remote GraphQL fixture servers (`tests/fixture_servers/remote_graphql.py`)."""
    with remote_graphql.serve() as servers:
        yield servers


@pytest.fixture(scope="module")
def srv(pg_url: str, remotes: Any) -> Iterator[ServerProcess]:
    server = ServerProcess(create_database(pg_url))
    try:
        assert q(server, {"type": "run_sql", "args": {"sql": SQL}}).status_code == 200
        yield server
    finally:
        server.stop()


def q(srv: ServerProcess, body: dict[str, Any], **kw: Any) -> Any:
    return srv.client.post("/v1/query", json=body, **kw)


def ok(srv: ServerProcess, body: dict[str, Any]) -> Any:
    r = q(srv, body)
    assert r.status_code == 200, r.text
    return r.json()


def gql(srv: ServerProcess, query: str, role: str | None = None) -> Any:
    headers = {"x-svc-role": role} if role else {}
    r = srv.client.post("/v1/graphql", json={"query": query}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def base() -> dict[str, Any]:
    """A consistent document every case adds one object to."""
    return {
        "version": 2,
        "tables": [
            {"table": {"schema": "public", "name": "author"}},
            {
                "table": {"schema": "public", "name": "article"},
                "object_relationships": [
                    {"name": "author", "using": {"foreign_key_constraint_on": "author_id"}}
                ],
            },
            {"table": {"schema": "public", "name": "profile"}},
        ],
    }


def table(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(t for t in doc["tables"] if t["table"]["name"] == name)
    return found


def apply(srv: ServerProcess, doc: dict[str, Any], allow: bool = True) -> Any:
    body = {
        "type": "replace_metadata",
        "version": 2,
        "args": {"metadata": doc, "allow_inconsistent_metadata": allow},
    }
    return q(srv, body)


def inconsistent(srv: ServerProcess) -> list[dict[str, Any]]:
    got = ok(srv, {"type": "get_inconsistent_metadata", "args": {}})
    assert got["is_consistent"] is (not got["inconsistent_objects"])
    objects: list[dict[str, Any]] = got["inconsistent_objects"]
    return objects


def exported(srv: ServerProcess) -> Any:
    return ok(srv, {"type": "export_metadata", "args": {}})


# -- one object of every type that svc cannot apply -----------------------------------


def _perm(kind: str, permission: dict[str, Any]) -> Any:
    def add(doc: dict[str, Any]) -> None:
        table(doc, "author")[f"{kind}_permissions"] = [{"role": "user", "permission": permission}]

    return add


def _set(key: str, value: Any) -> Any:
    def add(doc: dict[str, Any]) -> None:
        doc[key] = value

    return add


def _on_author(key: str, value: Any) -> Any:
    def add(doc: dict[str, Any]) -> None:
        table(doc, "author")[key] = value

    return add


OUTPUT = {"name": "Out", "fields": [{"name": "id", "type": "Int"}]}

# (object type, how to add it, the inconsistency type, a words of its reason)
INCONSISTENT = [
    (
        "table",
        lambda d: d["tables"].append({"table": {"schema": "public", "name": "missing"}}),
        "table",
        "no such table",
    ),
    (
        "object relationship",
        _on_author(
            "object_relationships", [{"name": "x", "using": {"foreign_key_constraint_on": "nope"}}]
        ),
        "object_relation",
        "nope",
    ),
    (
        "array relationship",
        _on_author(
            "array_relationships",
            [
                {
                    "name": "xs",
                    "using": {"foreign_key_constraint_on": {"table": "article", "column": "nope"}},
                }
            ],
        ),
        "array_relation",
        "nope",
    ),
    (
        "computed field",
        _on_author(
            "computed_fields", [{"name": "shout", "definition": {"function": "no_such_function"}}]
        ),
        "computed_field",
        "no_such_function",
    ),
    (
        "remote relationship",
        _on_author(
            "remote_relationships",
            [
                {
                    "name": "who",
                    "definition": {
                        "remote_schema": "absent",
                        "hasura_fields": ["id"],
                        "remote_field": {"user": {"arguments": {"id": "$id"}}},
                    },
                }
            ],
        ),
        "remote_relationship",
        "absent",
    ),
    (
        "remote relationship to a database",
        _on_author(
            "remote_relationships",
            [
                {
                    "name": "db",
                    "definition": {
                        "to_source": {
                            "source": "other",
                            "table": "t",
                            "relationship_type": "object",
                            "field_mapping": {"id": "id"},
                        }
                    },
                }
            ],
        ),
        "remote_relationship",
        "source with name 'other' not found",
    ),
    (
        "remote schema's relationship to a table that is not tracked",
        _set(
            "remote_schemas",
            [
                {
                    "name": "users",
                    "definition": {"url": USERS},
                    "remote_relationships": [
                        {
                            "type_name": "User",
                            "relationships": [
                                {
                                    "name": "t",
                                    "definition": {
                                        "to_source": {
                                            "source": "default",
                                            "table": "nowhere",
                                            "relationship_type": "object",
                                            "field_mapping": {"id": "id"},
                                        }
                                    },
                                }
                            ],
                        }
                    ],
                }
            ],
        ),
        "remote_schema_remote_relationship",
        '"nowhere" is not tracked',
    ),
    (
        "select permission",
        _perm("select", {"columns": ["nope"], "filter": {}}),
        "select_permission",
        "nope",
    ),
    (
        "insert permission",
        _perm("insert", {"columns": ["nope"], "check": {}}),
        "insert_permission",
        "nope",
    ),
    (
        "update permission",
        _perm("update", {"columns": ["nope"], "filter": {}}),
        "update_permission",
        "nope",
    ),
    (
        "delete permission",
        _perm("delete", {"filter": {"nope": {"_eq": 1}}}),
        "delete_permission",
        "nope",
    ),
    (
        "input validation of a permission of a type svc does not call",
        _perm(
            "insert",
            {
                "columns": ["id"],
                "check": {},
                "validate_input": {"type": "grpc", "definition": {"url": "http://x"}},
            },
        ),
        "insert_permission",
        "validate_input",
    ),
    (
        "event trigger",
        _on_author(
            "event_triggers",
            [
                {
                    "name": "on_author",
                    "definition": {"update": {"columns": ["nope"]}},
                    "webhook": "http://127.0.0.1:9",
                }
            ],
        ),
        "event_trigger",
        "nope",
    ),
    (
        "function",
        _set("functions", [{"function": {"schema": "public", "name": "no_such_function"}}]),
        "function",
        "no_such_function",
    ),
    (
        "action",
        _set(
            "actions",
            [
                {
                    "name": "act",
                    "definition": {
                        "handler": "http://127.0.0.1:9",
                        "output_type": "Missing",
                        "type": "mutation",
                        "kind": "synchronous",
                    },
                }
            ],
        ),
        "action",
        "Missing",
    ),
    (
        "custom types",
        _set(
            "custom_types",
            {"objects": [{"name": "Out", "fields": [{"name": "id", "type": "Nowhere"}]}]},
        ),
        "custom_types",
        "Nowhere",
    ),
    (
        "remote schema",
        _set("remote_schemas", [{"name": "down", "definition": {"url": UNREACHABLE}}]),
        "remote_schema",
        "",
    ),
    (
        "query collection",
        _set(
            "query_collections",
            [{"name": "c", "definition": {"queries": [{"name": "q", "query": "query {"}]}}],
        ),
        "query_collection",
        "Syntax Error",
    ),
    ("allow-list entry", _set("allowlist", [{"collection": "none"}]), "allowlist", "none"),
    (
        "REST endpoint",
        _set(
            "rest_endpoints",
            [
                {
                    "name": "e",
                    "url": "e",
                    "methods": ["GET"],
                    "definition": {"query": {"collection_name": "none", "query_name": "q"}},
                }
            ],
        ),
        "rest_endpoint",
        '"none" does not exist',
    ),
    (
        "network (TLS allow-list)",
        _set("network", {"tls_allowlist": [{"host": "internal.example", "suffix": "8443"}]}),
        "host_network_tls_allowlist",
        "internal.example",
    ),
    (
        "backend config",
        _set("backend_configs", {"dataconnector": {"sqlite": {"uri": "http://127.0.0.1:9"}}}),
        "data_connector_agent",
        "data connectors",
    ),
    (
        "OpenTelemetry",
        _set("opentelemetry", {"status": "enabled", "data_types": ["traces"]}),
        "opentelemetry",
        "OpenTelemetry",
    ),
    (
        "metrics config",
        _set("metrics_config", {"analyze_query_variables": True}),
        "metrics_config",
        "analyze_query_variables",
    ),
]


@pytest.mark.parametrize(
    ("what", "add", "kind", "words"), INCONSISTENT, ids=[c[0] for c in INCONSISTENT]
)
def test_an_object_svc_cannot_apply_is_listed_with_a_reason_and_kept(
    srv: ServerProcess, what: str, add: Any, kind: str, words: str
) -> None:
    doc = base()
    add(doc)
    answer = apply(srv, doc)
    if kind in REFUSED_EVEN_IF_ALLOWED:  # the reference's 500: refused with the object
        assert answer.status_code == 500, answer.text
        assert answer.json()["code"] == "unexpected"
        (internal,) = answer.json()["internal"]
        assert words in internal["reason"]
        assert exported(srv).get("query_collections", []) == []
        return
    assert answer.status_code == 200, answer.text
    assert answer.json()["is_consistent"] is False
    found = [i for i in inconsistent(srv) if i["type"] == kind]
    assert found, f"{what}: not listed"
    assert all(i["reason"] for i in found)
    assert any(words in i["reason"] for i in found), found
    # kept in the stored document: export gives it back, and applying that export again
    # reports the same objects
    again = exported(srv)
    assert apply(srv, again).json()["is_consistent"] is False
    assert exported(srv) == again
    # without `allow_inconsistent_metadata`: refused with the object, or (what svc serves
    # around: an unreachable remote schema, an allow-list entry without its collection)
    # applied and listed
    ok(srv, {"type": "clear_metadata", "args": {}})
    plain = apply(srv, doc, allow=False)
    if plain.status_code == 200:
        assert any(i["type"] == kind for i in inconsistent(srv))
    else:
        assert plain.status_code == 400, plain.text
        assert plain.json()["code"], plain.text
        assert exported(srv)["tables"] == []  # nothing of it applied


# Stored queries and REST endpoints that do not resolve are refused even with
# `allow_inconsistent_metadata` (500 `unexpected` "cannot continue due to newly found
# inconsistent metadata", `svc.api.collections`, the reference's answer).
REFUSED_EVEN_IF_ALLOWED = frozenset({"query_collection", "rest_endpoint"})


# (object, document, code, path) of what is refused at apply
REFUSED = [
    (
        "unknown top-level key",
        lambda d: d.update(tablez=[]),
        "not-supported",
        "$.args.metadata.tablez",
    ),
    (
        "unknown table configuration key",
        lambda d: table(d, "author").update(configuration={"apollo_federation_config": {}}),
        "not-supported",
        "$.args.metadata.tables[0].configuration.apollo_federation_config",
    ),
    (
        "unknown column configuration key",
        lambda d: table(d, "author").update(
            configuration={"column_config": {"name": {"custom_name": "n", "extra": 1}}}
        ),
        "not-supported",
        "$.args.metadata.tables[0].configuration.column_config.name.extra",
    ),
    (
        "unknown permission key",
        _perm("select", {"columns": ["id"], "filter": {}, "redaction": {}}),
        "not-supported",
        "$.args.metadata.tables[0].select_permissions[0].permission.redaction",
    ),
    (
        "event trigger cleanup",
        _on_author(
            "event_triggers",
            [
                {
                    "name": "t",
                    "definition": {"insert": {"columns": "*"}},
                    "webhook": "http://127.0.0.1:9",
                    "cleanup_config": {"schedule": "0 0 * * *"},
                }
            ],
        ),
        "not-supported",
        "$.args.metadata.tables[0].event_triggers[0].cleanup_config",
    ),
]


@pytest.mark.parametrize(("what", "add", "code", "path"), REFUSED, ids=[c[0] for c in REFUSED])
def test_a_key_svc_cannot_keep_is_refused_at_its_path(
    srv: ServerProcess, what: str, add: Any, code: str, path: str
) -> None:
    ok(srv, {"type": "clear_metadata", "args": {}})
    doc = base()
    add(doc)
    r = apply(srv, doc)
    assert r.status_code == 400, r.text
    assert (r.json()["code"], r.json()["path"]) == (code, path)
    assert exported(srv)["tables"] == []


def test_source_customization_is_refused_unless_it_is_the_default(srv: ServerProcess) -> None:
    ok(srv, {"type": "clear_metadata", "args": {}})
    source = {
        "name": "default",
        "kind": "postgres",
        "tables": base()["tables"],
        "configuration": {},
    }
    v3 = {
        "version": 3,
        # a type name `mapping` is remote schemas' customization, not a source's
        "sources": [{**source, "customization": {"type_names": {"mapping": {"a": "b"}}}}],
    }
    r = apply(srv, v3)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "not-supported"
    assert r.json()["path"] == "$.args.metadata.sources[0].customization.type_names"
    # Without the `naming_convention` experimental feature the reference accepts a
    # convention and serves `hasura-default` names (its
    # naming_convention_without_feature_turned_on tests): so does svc.
    named = {
        "version": 3,
        "sources": [{**source, "customization": {"naming_convention": "graphql-default"}}],
    }
    assert apply(srv, named).json() == {"is_consistent": True, "inconsistent_objects": []}
    default = {"naming_convention": "hasura-default", "root_fields": {}, "type_names": {}}
    plain = {"version": 3, "sources": [{**source, "customization": default}]}
    assert apply(srv, plain).json() == {"is_consistent": True, "inconsistent_objects": []}


def test_inherited_roles_are_applied_and_a_cycle_is_refused(srv: ServerProcess) -> None:
    """`inherited_roles` is served (`svc.ir.inherited`), not reported; a cycle is refused
    at apply with the reference's 400 `cyclic-dependency`, even with
    `allow_inconsistent_metadata`."""
    doc = base()
    table(doc, "author")["select_permissions"] = [
        {"role": "user", "permission": {"columns": ["id"], "filter": {}}}
    ]
    doc["inherited_roles"] = [{"role_name": "boss", "role_set": ["user", "editor"]}]
    assert apply(srv, doc, allow=False).status_code == 200
    assert inconsistent(srv) == []
    assert exported(srv)["inherited_roles"] == doc["inherited_roles"]
    got = gql(srv, "{ author(order_by: {id: asc}) { id } }", "boss")
    assert got == {"data": {"author": [{"id": 1}, {"id": 2}]}}
    doc["inherited_roles"].append({"role_name": "editor", "role_set": ["boss"]})
    r = apply(srv, doc)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "cyclic-dependency"
    assert r.json()["error"] == 'found cycle(s) in roles: ["boss","editor","boss"]'


def test_dropping_inconsistent_metadata_drops_the_kept_sections(srv: ServerProcess) -> None:
    doc = base()
    doc["inherited_roles"] = [{"role_name": "boss", "role_set": ["user"]}]
    doc["network"] = {"tls_allowlist": [{"host": "a.example"}]}
    apply(srv, doc)
    # an inherited role is applied, not reported (`svc.ir.inherited`)
    assert {i["type"] for i in inconsistent(srv)} == {"host_network_tls_allowlist"}
    ok(srv, {"type": "drop_inconsistent_metadata", "args": {}})
    assert inconsistent(srv) == []
    out = exported(srv)
    assert "network" not in out
    assert out["inherited_roles"] == [{"role_name": "boss", "role_set": ["user"]}]
    assert len(out["tables"]) == 3


# -- a role whose schema cannot be built -------------------------------------------------


def _execute(url: str, sql: str) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(go())


def test_a_role_schema_that_cannot_be_built_serves_all_but_its_culprit(pg_url: str) -> None:
    """A table custom-named like a scalar is consistent until the database gains a column
    of that scalar (outside svc): then the schemas of admin and of a role seeing both
    cannot be built. Each is served without the object it fails with, which is listed
    with the build's error; `/healthz` warns; a role that sees only one of them is
    untouched."""
    url = create_database(pg_url)
    _execute(
        url,
        "CREATE TABLE author (id int PRIMARY KEY, name text);"
        "CREATE TABLE article (id int PRIMARY KEY, title text);"
        "INSERT INTO author VALUES (1, 'ann'); INSERT INTO article VALUES (7, 't');",
    )
    srv = ServerProcess(url)
    try:
        every = {"columns": "*", "filter": {}}
        doc = {
            "version": 2,
            "tables": [
                {
                    "table": {"schema": "public", "name": "author"},
                    "select_permissions": [
                        {"role": "user", "permission": every},
                        {"role": "other", "permission": {"columns": ["id"], "filter": {}}},
                    ],
                },
                {
                    "table": {"schema": "public", "name": "article"},
                    "configuration": {"custom_name": "numeric"},
                    "select_permissions": [
                        {"role": "user", "permission": every},
                        {"role": "other", "permission": every},
                    ],
                },
            ],
        }
        assert apply(srv, doc, allow=False).status_code == 200
        assert srv.client.get("/healthz").text == "OK"
        _execute(url, "ALTER TABLE author ADD COLUMN price numeric DEFAULT 2.5")
        ok(srv, {"type": "reload_metadata", "args": {}})
        issues = inconsistent(srv)
        by_type = {i["type"]: i for i in issues}
        assert set(by_type) == {"table", "select_permission"}, issues
        assert by_type["table"]["definition"] == {"name": "article", "schema": "public"}
        assert by_type["select_permission"]["definition"]["role"] == "user"
        assert by_type["select_permission"]["definition"]["table"]["name"] == "article"
        for issue in issues:
            assert "multiple types named 'numeric'" in issue["reason"]
        # served: admin and user without the culprit, other untouched
        assert gql(srv, "{ author { id price } }") == {
            "data": {"author": [{"id": 1, "price": 2.5}]}
        }
        assert gql(srv, "{ author { id price } }", "user") == {
            "data": {"author": [{"id": 1, "price": 2.5}]}
        }
        missing = gql(srv, "{ numeric { id } }", "user")
        assert missing["errors"][0]["extensions"]["code"] == "validation-failed"
        assert gql(srv, "{ numeric { id } author { id } }", "other") == {
            "data": {"numeric": [{"id": 7}], "author": [{"id": 1}]}
        }
        assert srv.client.get("/healthz").text == "WARN: inconsistent objects in schema"
        strict = srv.client.get("/healthz?strict=true")
        assert (strict.status_code, strict.text) == (500, "ERROR: inconsistent objects in schema")
        # dropping the inconsistent objects leaves a consistent document
        ok(srv, {"type": "drop_inconsistent_metadata", "args": {}})
        assert inconsistent(srv) == []
        assert srv.client.get("/healthz").text == "OK"
    finally:
        srv.stop()


def test_a_select_permission_without_columns_builds(srv: ServerProcess) -> None:
    """`columns: []` with aggregations: the role's schema builds (the reference's object
    type without fields), it counts rows, and nothing is reported."""
    doc = base()
    table(doc, "author")["select_permissions"] = [
        {"role": "counter", "permission": {"columns": [], "filter": {}, "allow_aggregations": True}}
    ]
    assert apply(srv, doc, allow=False).status_code == 200
    assert inconsistent(srv) == []
    got = gql(srv, "{ author_aggregate { aggregate { count } } }", "counter")
    assert got == {"data": {"author_aggregate": {"aggregate": {"count": 2}}}}
    shape = gql(
        srv,
        '{ __type(name: "author") { fields { name } } '
        "query_root: __schema { queryType { fields { name args { name } } } } }",
        "counter",
    )
    assert shape["data"]["__type"] == {"fields": []}
    roots = {f["name"]: f for f in shape["data"]["query_root"]["queryType"]["fields"]}
    assert set(roots) == {"author", "author_aggregate"}  # no by_pk: the key is not visible
    assert "distinct_on" not in {a["name"] for a in roots["author"]["args"]}
    assert srv.client.get("/healthz").text == "OK"


# -- remote relationships name columns -----------------------------------------------------


def test_a_remote_relationship_on_a_renamed_column_applies(srv: ServerProcess) -> None:
    """`hasura_fields` name columns; the column's custom name is what the schema shows.
    Both stored shapes are read (`definition.{remote_schema, hasura_fields}` and v2.1's
    `definition.to_remote_schema.lhs_fields`)."""
    doc = base()
    doc["remote_schemas"] = [{"name": "users", "definition": {"url": USERS}}]
    profile = table(doc, "profile")
    profile["configuration"] = {"custom_column_names": {"uid": "userId"}}
    profile["remote_relationships"] = [
        {
            "name": "user",
            "definition": {
                "remote_schema": "users",
                "hasura_fields": ["uid"],
                "remote_field": {"user": {"arguments": {"id": "$uid"}}},
            },
        },
        {
            "name": "owner",
            "definition": {
                "to_remote_schema": {
                    "remote_schema": "users",
                    "lhs_fields": ["uid"],
                    "remote_field": {"user": {"arguments": {"id": "$uid"}}},
                }
            },
        },
    ]
    assert apply(srv, doc, allow=False).status_code == 200
    assert inconsistent(srv) == []
    got = gql(
        srv, "{ profile(order_by: {pid: asc}) { pid userId user { username } owner { id } } }"
    )
    assert got == {
        "data": {
            "profile": [
                {"pid": 10, "userId": 1, "user": {"username": "jane"}, "owner": {"id": 1}},
                {"pid": 20, "userId": 2, "user": {"username": "john"}, "owner": {"id": 2}},
                {"pid": 30, "userId": None, "user": None, "owner": None},
            ]
        }
    }
    assert exported(srv)["tables"][2]["remote_relationships"] == profile["remote_relationships"]
    # a column renamed by `run_sql` is followed into the join fields (not refused as a
    # remote relationship on a missing column)
    rename = "ALTER TABLE profile RENAME COLUMN uid TO user_id"
    ok(srv, {"type": "run_sql", "args": {"sql": rename}})
    assert inconsistent(srv) == []
    rels = exported(srv)["tables"][2]["remote_relationships"]
    assert rels[0]["definition"]["hasura_fields"] == ["user_id"]
    assert rels[1]["definition"]["to_remote_schema"]["lhs_fields"] == ["user_id"]
    got = gql(srv, "{ profile(where: {pid: {_eq: 10}}) { user { username } owner { id } } }")
    assert got == {"data": {"profile": [{"user": {"username": "jane"}, "owner": {"id": 1}}]}}
    ok(
        srv,
        {"type": "run_sql", "args": {"sql": "ALTER TABLE profile RENAME COLUMN user_id TO uid"}},
    )
    # dropping a join column is refused (the remote relationship depends on it)
    dropped = q(srv, {"type": "run_sql", "args": {"sql": "ALTER TABLE profile DROP COLUMN uid"}})
    assert dropped.status_code == 400, dropped.text
    assert dropped.json()["code"] == "dependency-error"
    assert "remote relationship profile.user" in dropped.json()["error"]


def test_a_remote_relationship_to_a_missing_remote_field_is_listed(srv: ServerProcess) -> None:
    doc = base()
    doc["remote_schemas"] = [{"name": "users", "definition": {"url": USERS}}]
    table(doc, "profile")["remote_relationships"] = [
        {
            "name": "ghost",
            "definition": {
                "remote_schema": "users",
                "hasura_fields": ["uid"],
                "remote_field": {"nobody": {"arguments": {"id": "$uid"}}},
            },
        }
    ]
    assert apply(srv, doc).status_code == 200
    (issue,) = inconsistent(srv)
    assert issue["type"] == "remote_relationship"
    assert 'field "nobody" not found in remote schema "users"' in issue["reason"]


# -- what the reference keeps ---------------------------------------------------------------


def test_insertion_order_of_a_manual_relationship_round_trips(srv: ServerProcess) -> None:
    doc = base()
    table(doc, "article")["object_relationships"] = [
        {
            "name": "writer",
            "using": {
                "manual_configuration": {
                    "remote_table": {"schema": "public", "name": "author"},
                    "column_mapping": {"author_id": "id"},
                    "insertion_order": "before_parent",
                }
            },
        }
    ]
    assert apply(srv, doc, allow=False).status_code == 200
    out = exported(srv)
    manual = out["tables"][1]["object_relationships"][0]["using"]["manual_configuration"]
    assert manual["insertion_order"] == "before_parent"
    assert apply(srv, out, allow=False).status_code == 200
    assert exported(srv) == out


# -- svc compile says what the server says ---------------------------------------------------


def test_compile_and_the_live_apply_report_the_same(srv: ServerProcess, tmp_path: Any) -> None:
    doc = base()
    doc["tables"].append({"table": {"schema": "public", "name": "missing"}})
    table(doc, "author")["select_permissions"] = [
        {"role": "user", "permission": {"columns": ["nope"], "filter": {}}}
    ]
    doc["inherited_roles"] = [{"role_name": "boss", "role_set": ["user"]}]
    doc["network"] = {"tls_allowlist": [{"host": "a.example"}]}
    doc["metrics_config"] = {"analyze_response_body": True}
    # the directory round trip keeps the kept sections in their files
    files = metadata_to_files(metadata_from_obj(copy.deepcopy(doc), "$"))
    assert {"inherited_roles.yaml", "network.yaml", "metrics_config.yaml"} <= set(files)
    md = metadata_from_files(files)
    catalog = asyncio.run(introspect(_database_url(srv)))
    compiled = compile_metadata(md, catalog)
    apply(srv, doc)
    live = sorted(i["reason"] for i in inconsistent(srv))
    assert sorted(p.reason for p in compiled.problems) == live
    assert not any("boss" in r for r in live)  # applied, not reported
    # refused alike: the directory reader and the server name the same key
    bad = copy.deepcopy(doc)
    table(bad, "author")["configuration"] = {"apollo_federation_config": {"enable": "v1"}}
    with pytest.raises(DirectoryError) as info:
        metadata_from_files({**files, "tables.yaml": _tables_yaml(bad)})
    assert (info.value.file, info.value.path) == (
        "tables.yaml",
        "$[0].configuration.apollo_federation_config",
    )
    r = apply(srv, bad)
    assert (r.json()["code"], r.json()["path"]) == (
        "not-supported",
        "$.args.metadata.tables[0].configuration.apollo_federation_config",
    )


def _tables_yaml(doc: dict[str, Any]) -> str:
    from svc.metadata.directory import dump_yaml

    return dump_yaml(doc["tables"])


def _database_url(srv: ServerProcess) -> str:
    args = srv.proc.args
    assert isinstance(args, list)
    return str(args[args.index("--database-url") + 1])
