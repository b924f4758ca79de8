"""Admin secrets (with a rotation list), the unauthorized role, the Config API, enabled
APIs and the pg_dump API over real HTTP (issue 4; spec 2.12, 4.14, 4.15)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support import ServerProcess, create_database

SQL = """
create table note (id serial primary key, body text not null, public boolean not null);
insert into note (body, public) values ('open', true), ('closed', false);
"""


@pytest.fixture(scope="module")
def secured(pg_url: str) -> Iterator[ServerProcess]:
    """Secrets `old`, `new` (rotation list) and `main`; unknown callers are `anonymous`."""
    s = ServerProcess(
        create_database(pg_url),
        "--admin-secret",
        "main",
        "--unauthorized-role",
        "anonymous",
        env={"SVC_GRAPHQL_ADMIN_SECRETS": json.dumps(["old", "new"])},
    )
    steps = [
        {"type": "run_sql", "args": {"sql": SQL}},
        {"type": "track_table", "args": "note"},
        {
            "type": "create_select_permission",
            "args": {
                "table": "note",
                "role": "anonymous",
                "permission": {"columns": ["body"], "filter": {"public": {"_eq": True}}},
            },
        },
    ]
    r = s.query({"type": "bulk", "args": steps}, headers={"X-Svc-Admin-Secret": "main"})
    assert r.status_code == 200, r.text
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def graphql_only(pg_url: str) -> Iterator[ServerProcess]:
    s = ServerProcess(create_database(pg_url), "--enabled-apis", "graphql")
    try:
        yield s
    finally:
        s.stop()


NOTES = "{ note { body } }"


def test_every_configured_secret_is_admin(secured: ServerProcess) -> None:
    for secret in ("main", "old", "new"):
        body = secured.graphql(NOTES, headers={"X-Svc-Admin-Secret": secret})
        assert sorted(n["body"] for n in body["data"]["note"]) == ["closed", "open"], secret


def test_wrong_secret_is_denied(secured: ServerProcess) -> None:
    r = secured.query({"type": "export_metadata", "args": {}}, headers={"X-Svc-Admin-Secret": "x"})
    assert r.status_code == 401 and r.json()["code"] == "access-denied"
    body = secured.graphql(NOTES, headers={"X-Svc-Admin-Secret": "mainx"})
    assert body["errors"][0]["extensions"]["code"] == "access-denied"


def test_no_credentials_is_the_unauthorized_role(secured: ServerProcess) -> None:
    assert secured.graphql(NOTES) == {"data": {"note": [{"body": "open"}]}}
    # The header cannot make an unauthenticated caller admin.
    body = secured.graphql(NOTES, headers={"X-Svc-Role": "admin"})
    assert body == {"data": {"note": [{"body": "open"}]}}
    r = secured.query({"type": "export_metadata", "args": {}})
    assert r.status_code == 400 and r.json()["code"] == "access-denied"


def test_admin_may_act_as_a_role(secured: ServerProcess) -> None:
    headers = {"X-Svc-Admin-Secret": "new", "X-Svc-Role": "anonymous"}
    assert secured.graphql(NOTES, headers=headers) == {"data": {"note": [{"body": "open"}]}}


def test_config_api(secured: ServerProcess) -> None:
    r = secured.client.get("/v1alpha1/config", headers={"X-Svc-Admin-Secret": "old"})
    assert r.status_code == 200
    config = r.json()
    assert config["is_admin_secret_set"] is True
    assert config["is_auth_hook_set"] is False and config["is_jwt_set"] is False
    assert config["is_allow_list_enabled"] is False
    assert set(config) == {
        "version",
        "is_admin_secret_set",
        "is_auth_hook_set",
        "is_jwt_set",
        "jwt",
        "is_allow_list_enabled",
        "live_queries",
        "streaming_queries",
        "experimental_features",
    }
    assert secured.client.get("/v1alpha1/config").status_code == 400


def test_pg_dump(secured: ServerProcess) -> None:
    body = {"opts": ["-O", "-x", "--schema-only", "--table", "public.note"], "clean_output": True}
    r = secured.client.post("/v1alpha1/pg_dump", json=body, headers={"X-Svc-Admin-Secret": "main"})
    assert r.status_code == 200, r.text
    assert "CREATE TABLE public.note" in r.text
    lines = r.text.splitlines()
    assert not [line for line in lines if line.startswith(("--", "SET ", "SELECT pg_catalog"))]
    denied = secured.client.post("/v1alpha1/pg_dump", json=body)
    assert denied.status_code == 400 and denied.json()["code"] == "access-denied"
    to_file = secured.client.post(
        "/v1alpha1/pg_dump",
        json={"opts": ["-f", "/tmp/x.sql"]},
        headers={"X-Svc-Admin-Secret": "main"},
    )
    assert to_file.status_code == 400


def test_disabled_apis_answer_404(graphql_only: ServerProcess) -> None:
    assert graphql_only.query({"type": "export_metadata", "args": {}}).status_code == 404
    assert graphql_only.client.get("/v1alpha1/config").status_code == 404
    assert graphql_only.client.post("/v1alpha1/pg_dump", json={"opts": []}).status_code == 404
    body = graphql_only.graphql("{ __typename }")
    assert body == {"data": {"__typename": "query_root"}}
