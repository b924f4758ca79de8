"""Backend-only insert, update and delete permissions, against real svc servers.

Followed: Hasura v2 `server/src-lib/Hasura/Session.hs` / `Hasura/Authentication/User.hs`
(`mkUserInfo`, `getBackendOnlyFieldAccess`: `BOFAAllowed` only when the admin secret was
sent, or no auth is configured, and `x-hasura-use-backend-only-permissions` parses as
true with `parseStringAsBool`; JWT and webhook sessions never), and
`Hasura/GraphQL/Schema/Mutation.hs` (a `backend_only` insert/update/delete permission is
left out of the `Frontend` schema; the backend schema has every write). The session's
role is the requested one (`X-Svc-Role: user` beside the admin secret), so the writes
applied are that role's. svc's header is `X-Svc-Use-Backend-Only-Permissions`
(`X-Hasura-…` under `--hasura-compat`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import ServerProcess, create_database

SECRET = "s3cret"

STEPS: list[dict[str, Any]] = [
    {
        "type": "run_sql",
        "args": {
            "sql": "CREATE TABLE item (id int PRIMARY KEY, name text NOT NULL);"
            "INSERT INTO item VALUES (1, 'one'), (2, 'two'), (3, 'three');"
        },
    },
    {"type": "track_table", "args": {"schema": "public", "name": "item"}},
    {
        "type": "create_select_permission",
        "args": {
            "table": "item",
            "role": "user",
            "permission": {"columns": ["id", "name"], "filter": {}},
        },
    },
    {
        "type": "create_insert_permission",
        "args": {
            "table": "item",
            "role": "user",
            "permission": {"columns": ["id", "name"], "check": {}, "backend_only": True},
        },
    },
    {
        "type": "create_update_permission",
        "args": {
            "table": "item",
            "role": "user",
            "permission": {"columns": ["name"], "filter": {}, "backend_only": True},
        },
    },
    {
        "type": "create_delete_permission",
        "args": {
            "table": "item",
            "role": "user",
            "permission": {"filter": {}, "backend_only": True},
        },
    },
    # a role whose writes are not backend-only: it keeps them either way
    {
        "type": "create_select_permission",
        "args": {"table": "item", "role": "front", "permission": {"columns": ["id"], "filter": {}}},
    },
    {
        "type": "create_insert_permission",
        "args": {
            "table": "item",
            "role": "front",
            "permission": {"columns": ["id", "name"], "check": {}},
        },
    },
]

WRITES = (
    "insert_item",
    "insert_item_one",
    "update_item",
    "update_item_by_pk",
    "update_item_many",
    "delete_item",
    "delete_item_by_pk",
)
MUTATION_FIELDS = "{ __schema { mutationType { fields { name } } } }"


@pytest.fixture(scope="module")
def srv(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url), "--admin-secret", SECRET)
    try:
        r = s.query({"type": "bulk", "args": STEPS}, headers={"x-svc-admin-secret": SECRET})
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def _headers(role: str, flag: str | None, secret: bool = True) -> dict[str, str]:
    out = {"x-svc-role": role}
    if secret:
        out["x-svc-admin-secret"] = SECRET
    if flag is not None:
        out["x-svc-use-backend-only-permissions"] = flag
    return out


def _mutation_fields(srv: ServerProcess, headers: dict[str, str]) -> set[str]:
    body = srv.graphql(MUTATION_FIELDS, headers=headers)
    mutation = body["data"]["__schema"]["mutationType"]
    return {f["name"] for f in mutation["fields"]} if mutation else set()


def _names(srv: ServerProcess) -> list[str]:
    body = srv.graphql("{ item(order_by: {id: asc}) { name } }", headers=_headers("admin", None))
    return [r["name"] for r in body["data"]["item"]]


@pytest.mark.parametrize("flag", ["true", "True", "t", "YES", "y"])
def test_schema_shows_backend_only_writes_with_secret_and_header(
    srv: ServerProcess, flag: str
) -> None:
    """Every `backend_only` write of role user is in its schema with the admin secret and
    a true value of the header (`parseStringAsBool`'s true texts, any case)."""
    assert set(WRITES) <= _mutation_fields(srv, _headers("user", flag))


@pytest.mark.parametrize("flag", [None, "false", "f", "No", "n"])
def test_schema_hides_backend_only_writes_without_the_header(
    srv: ServerProcess, flag: str | None
) -> None:
    """Without the header, or with a false value, the role's writes are hidden (its
    select fields stay), though the admin secret was sent."""
    assert _mutation_fields(srv, _headers("user", flag)).isdisjoint(WRITES)
    body = srv.graphql("{ item { id } }", headers=_headers("user", flag))
    assert "errors" not in body, body


def test_invalid_header_value_is_refused(srv: ServerProcess) -> None:
    """A value that is not a boolean text: `bad-request` naming the header, with the
    reference's message (answered on `/v1/graphql` as svc answers every session error
    there)."""
    body = srv.graphql("{ item { id } }", headers=_headers("user", "maybe"))
    error = body["errors"][0]
    assert error["extensions"]["code"] == "bad-request", body
    assert error["message"] == (
        "x-svc-use-backend-only-permissions:  Not a valid boolean text. True values are"
        ' ["true","t","yes","y"] and  False values are ["false","f","no","n"]. All values'
        " are case insensitive"
    ), body


def test_non_backend_writes_stay_in_both_views(srv: ServerProcess) -> None:
    """A role whose insert is not backend-only has it with and without the header."""
    assert "insert_item" in _mutation_fields(srv, _headers("front", None))
    assert "insert_item" in _mutation_fields(srv, _headers("front", "true"))


def test_execution_insert_update_delete_with_the_header(srv: ServerProcess) -> None:
    """With secret + header the role's backend-only insert, update and delete run (and
    write); without the header the same documents fail validation and write nothing."""
    insert = 'mutation { insert_item_one(object: {id: 10, name: "ten"}) { id } }'
    update = 'mutation { update_item_by_pk(pk_columns: {id: 10}, _set: {name: "TEN"}) { name } }'
    delete = "mutation { delete_item(where: {id: {_eq: 10}}) { affected_rows } }"
    for doc in (insert, update, delete):
        body = srv.graphql(doc, headers=_headers("user", None))
        assert body["errors"][0]["extensions"]["code"] == "validation-failed", body
    assert "ten" not in _names(srv)

    back = _headers("user", "true")
    assert srv.graphql(insert, headers=back) == {"data": {"insert_item_one": {"id": 10}}}
    assert "ten" in _names(srv)
    assert srv.graphql(update, headers=back) == {"data": {"update_item_by_pk": {"name": "TEN"}}}
    assert srv.graphql(delete, headers=back) == {"data": {"delete_item": {"affected_rows": 1}}}
    assert _names(srv) == ["one", "two", "three"]
    # the same document again without the header: the cached backend plan is not reused
    body = srv.graphql(insert, headers=_headers("user", None))
    assert body["errors"][0]["extensions"]["code"] == "validation-failed", body


def test_header_without_admin_secret_is_ignored(pg_url: str) -> None:
    """The header alone gives nothing: with an unauthorized role (no admin secret sent,
    `UAdminSecretNotSent`) the writes stay hidden."""
    s = ServerProcess(
        create_database(pg_url), "--admin-secret", SECRET, "--unauthorized-role", "user"
    )
    try:
        r = s.query({"type": "bulk", "args": STEPS}, headers={"x-svc-admin-secret": SECRET})
        assert r.status_code == 200, r.text
        headers = {"x-svc-use-backend-only-permissions": "true"}
        assert _mutation_fields(s, headers).isdisjoint(WRITES)
        body = s.graphql(
            'mutation { insert_item_one(object: {id: 9, name: "x"}) { id } }', headers=headers
        )
        assert body["errors"][0]["extensions"]["code"] == "validation-failed", body
    finally:
        s.stop()


def test_unsecured_server_honours_the_header(pg_url: str) -> None:
    """No admin secret configured (`UAuthNotSet`): the header alone is enough, as in the
    reference."""
    s = ServerProcess(create_database(pg_url))
    try:
        r = s.query({"type": "bulk", "args": STEPS})
        assert r.status_code == 200, r.text
        assert set(WRITES) <= _mutation_fields(s, _headers("user", "true", secret=False))
        assert _mutation_fields(s, _headers("user", None, secret=False)).isdisjoint(WRITES)
    finally:
        s.stop()


def test_hasura_compat_header_name(pg_url: str) -> None:
    """Under `--hasura-compat` the header is `X-Hasura-Use-Backend-Only-Permissions`; svc's
    spelling is then an ordinary header."""
    s = ServerProcess(create_database(pg_url), "--hasura-compat", "--admin-secret", SECRET)
    try:
        admin = {"x-hasura-admin-secret": SECRET}
        r = s.query({"type": "bulk", "args": STEPS}, headers=admin)
        assert r.status_code == 200, r.text
        user = {**admin, "x-hasura-role": "user"}
        allowed = {**user, "x-hasura-use-backend-only-permissions": "true"}
        assert set(WRITES) <= _mutation_fields(s, allowed)
        other = {**user, "x-svc-use-backend-only-permissions": "true"}
        assert _mutation_fields(s, other).isdisjoint(WRITES)
    finally:
        s.stop()
