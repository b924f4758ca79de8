"""The Hasura names compatibility switch (`svc serve --hasura-compat`,
`SVC_GRAPHQL_HASURA_COMPAT=true`): a Hasura project runs unchanged.

Reference behaviour followed: Hasura v2 reads one spelling, `x-hasura-*` (case-insensitive,
stored lower-case: `Hasura.Session`, `isSessionVariable`), for request headers
(`X-Hasura-Role`, `X-Hasura-Admin-Secret`), session variables in permissions and presets,
the session JSON of computed fields, action bodies (`session_variables`), event payloads
(`event.session_variables`), auth-webhook answers (`mkUserInfoFromResp`) and JWT claims
(default namespace `https://hasura.io/jwt/claims`, `x-hasura-allowed-roles`,
`x-hasura-default-role`: `Hasura.Server.Auth.JWT`). Under the switch svc reads that
spelling and no other: an `X-Svc-*` header is an ordinary header. A metadata value naming
a session variable in the spelling the process does not read is refused (400
`parse-failed` at its path, the hint naming the switch), where the reference would have
taken it as a literal string.

Real servers (default worker count) on real Postgres; the action handler, event webhook
and auth webhook are real local HTTP servers (`tests.http_fixture`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest

from svc.metadata.limits import api_limits_from_obj
from svc.metadata.model import metadata_from_obj
from svc.metadata.session_names import check_remote_sdl, check_value, other_spelling
from svc.session_vars import HASURA_NAMES, SVC_NAMES, process_names
from tests.http_fixture import HttpFixture, Recorded, Reply
from tests.support import ROOT, ServerProcess, create_database

SECRET = "compat-admin-secret"
JWT_KEY = "a-hasura-style-hs256-key-of-32-chars-or-more"
SQL = """
create table author (id int primary key, name text not null, user_id text not null);
create table article (id int primary key, title text not null,
                      author_id int references author(id), owner text not null);
insert into author values (1, 'Ada', 'u1'), (2, 'Bob', 'u2');
create function author_is_me(author_row author, hasura_session json) returns boolean
  language sql stable as $$ select author_row.user_id = hasura_session ->> 'x-hasura-user-id' $$;
"""


def hasura_metadata(base: str) -> dict[str, Any]:
    """A Hasura v2 export: `X-Hasura-User-Id` in a filter, a check and a preset, a
    computed field taking the session, an action and an event trigger (`base`: the URL of
    the local handler server)."""
    return {
        "version": 2,
        "tables": [
            {
                "table": {"schema": "public", "name": "author"},
                "array_relationships": [
                    {
                        "name": "articles",
                        "using": {
                            "foreign_key_constraint_on": {
                                "table": {"schema": "public", "name": "article"},
                                "column": "author_id",
                            }
                        },
                    }
                ],
                "computed_fields": [
                    {
                        "name": "is_me",
                        "definition": {
                            "function": {"schema": "public", "name": "author_is_me"},
                            "table_argument": "author_row",
                            "session_argument": "hasura_session",
                        },
                    }
                ],
                "select_permissions": [
                    {
                        "role": "user",
                        "permission": {
                            "columns": ["id", "name"],
                            "computed_fields": ["is_me"],
                            "filter": {"user_id": {"_eq": "X-Hasura-User-Id"}},
                        },
                    }
                ],
            },
            {
                "table": {"schema": "public", "name": "article"},
                "insert_permissions": [
                    {
                        "role": "user",
                        "permission": {
                            "columns": ["id", "title", "author_id"],
                            "check": {"owner": {"_eq": "X-HASURA-USER-ID"}},
                            "set": {"owner": "x-hasura-user-id"},
                        },
                    }
                ],
                "select_permissions": [
                    {
                        "role": "user",
                        "permission": {
                            "columns": ["id", "title", "owner"],
                            "filter": {"owner": "X-Hasura-User-Id"},
                        },
                    }
                ],
                "event_triggers": [
                    {
                        "name": "article_added",
                        "definition": {"enable_manual": False, "insert": {"columns": "*"}},
                        "retry_conf": {"num_retries": 0, "interval_sec": 1, "timeout_sec": 10},
                        "webhook": f"{base}/event",
                    }
                ],
            },
        ],
        "actions": [
            {
                "name": "whoami",
                "definition": {
                    "handler": f"{base}/who",
                    "output_type": "Who",
                    "arguments": [],
                    "type": "query",
                    "kind": "synchronous",
                    "forward_client_headers": True,
                },
                "permissions": [{"role": "user"}],
            }
        ],
        "custom_types": {
            "objects": [{"name": "Who", "fields": [{"name": "id", "type": "String"}]}]
        },
    }


def hook_answer(req: Recorded) -> Reply:
    """The auth webhook: the bearer token says which session it answers."""
    token = req.headers.get("authorization", "").removeprefix("Bearer ")
    answers = {
        "ada": {"X-Hasura-Role": "user", "X-Hasura-User-Id": "u1"},
        "svc-spelling": {"X-Svc-Role": "user", "X-Svc-User-Id": "u1"},
    }
    if token not in answers:
        return Reply(401, b"{}")
    return Reply(200, json.dumps(answers[token]).encode(), {"Content-Type": "application/json"})


@pytest.fixture(scope="module")
def outside() -> Iterator[HttpFixture]:
    """The action handler (`/who`), event webhook (`/event`) and auth webhook (`/auth`)."""
    with HttpFixture() as srv:
        srv.route("/who", lambda req: Reply(200, b'{"id": "me"}'))
        srv.route("/event", lambda req: Reply(200, b"{}"))
        srv.route("/auth", hook_answer)
        yield srv


@pytest.fixture(scope="module")
def database(pg_url: str) -> str:
    return create_database(pg_url, prefix="compat")


@pytest.fixture(scope="module")
def compat(database: str, outside: HttpFixture) -> Iterator[ServerProcess]:
    """`svc serve --hasura-compat` with an admin secret and Hasura's JWT configuration
    (no claims namespace given: the default is Hasura's), the Hasura metadata applied."""
    jwt_secret = json.dumps({"type": "HS256", "key": JWT_KEY})
    env = {"SVC_GRAPHQL_EVENTS_FETCH_INTERVAL": "0.1"}
    s = ServerProcess(
        database, "--hasura-compat", "--admin-secret", SECRET, "--jwt-secret", jwt_secret, env=env
    )
    admin = {"X-Hasura-Admin-Secret": SECRET}
    try:
        r = s.query({"type": "run_sql", "args": {"sql": SQL}}, headers=admin)
        assert r.status_code == 200, r.text
        md = hasura_metadata(outside.url("").rstrip("/"))
        r = s.query({"type": "replace_metadata", "args": md}, headers=admin)
        assert r.status_code == 200, r.text
        yield s
    finally:
        s.stop()


def as_user(user_id: str, **extra: str) -> dict[str, str]:
    return {
        "X-Hasura-Admin-Secret": SECRET,
        "X-Hasura-Role": "user",
        "X-Hasura-User-Id": user_id,
        **extra,
    }


AUTHORS = "{ author { id name is_me } }"


def test_hasura_headers_act_as_the_role_with_its_session(compat: ServerProcess) -> None:
    assert compat.graphql(AUTHORS, headers=as_user("u1")) == {
        "data": {"author": [{"id": 1, "name": "Ada", "is_me": True}]}
    }
    assert compat.graphql(AUTHORS, headers=as_user("u2")) == {
        "data": {"author": [{"id": 2, "name": "Bob", "is_me": True}]}
    }
    # The admin sees every row; the computed field reads `x-hasura-user-id` from the
    # session JSON the function gets.
    admin = {"X-Hasura-Admin-Secret": SECRET, "X-Hasura-User-Id": "u2"}
    assert compat.graphql("{ author(order_by: {id: asc}) { name is_me } }", headers=admin) == {
        "data": {"author": [{"name": "Ada", "is_me": False}, {"name": "Bob", "is_me": True}]}
    }


def test_svc_headers_are_ordinary_headers_under_the_switch(compat: ServerProcess) -> None:
    # X-Svc-Role is not read: the admin stays admin and sees both authors.
    headers = {"X-Hasura-Admin-Secret": SECRET, "X-Svc-Role": "user", "X-Svc-User-Id": "u1"}
    assert compat.graphql("{ author { id } }", headers=headers) == {
        "data": {"author": [{"id": 1}, {"id": 2}]}
    }
    # X-Svc-Admin-Secret is no credential: JWT mode wants a token.
    r = compat.client.post(
        "/v1/graphql", json={"query": AUTHORS}, headers={"X-Svc-Admin-Secret": SECRET}
    )
    assert r.json()["errors"][0]["extensions"]["code"] == "invalid-headers"
    # A wrong X-Hasura-Admin-Secret is named in Hasura's spelling.
    r = compat.client.post(
        "/v1/graphql", json={"query": AUTHORS}, headers={"X-Hasura-Admin-Secret": "wrong"}
    )
    assert r.json()["errors"][0]["message"] == "invalid x-hasura-admin-secret"


def test_a_jwt_with_hasura_claims(compat: ServerProcess) -> None:
    claims = {
        "x-hasura-allowed-roles": ["user"],
        "x-hasura-default-role": "user",
        "x-hasura-user-id": "u2",
    }
    token = jwt.encode({"https://hasura.io/jwt/claims": claims}, JWT_KEY, algorithm="HS256")
    bearer = {"Authorization": f"Bearer {token}"}
    assert compat.graphql(AUTHORS, headers=bearer) == {
        "data": {"author": [{"id": 2, "name": "Bob", "is_me": True}]}
    }
    # The role header a token may choose is X-Hasura-Role.
    r = compat.graphql(AUTHORS, headers={**bearer, "X-Hasura-Role": "editor"})
    assert r["errors"][0]["extensions"]["code"] == "access-denied"
    # svc's namespace and claim names are not read.
    svc_claims = {
        "x-svc-allowed-roles": ["user"],
        "x-svc-default-role": "user",
        "x-svc-user-id": "u2",
    }
    other = jwt.encode({"https://svc.io/jwt/claims": svc_claims}, JWT_KEY, algorithm="HS256")
    r = compat.graphql(AUTHORS, headers={"Authorization": f"Bearer {other}"})
    assert r["errors"][0]["message"] == "claims key: 'https://hasura.io/jwt/claims' not found"
    mixed = jwt.encode({"https://hasura.io/jwt/claims": svc_claims}, JWT_KEY, algorithm="HS256")
    r = compat.graphql(AUTHORS, headers={"Authorization": f"Bearer {mixed}"})
    assert r["errors"][0]["message"] == "JWT claim does not contain x-hasura-allowed-roles"
    config = compat.client.get("/v1alpha1/config", headers={"X-Hasura-Admin-Secret": SECRET})
    assert config.json()["jwt"]["claims_namespace"] == "https://hasura.io/jwt/claims"


def test_action_handler_gets_hasura_session_variables(
    compat: ServerProcess, outside: HttpFixture
) -> None:
    before = len(outside.requests)
    headers = as_user("u1", **{"X-Client": "c1", "X-Svc-User-Id": "not-a-variable"})
    assert compat.graphql("{ whoami { id } }", headers=headers) == {
        "data": {"whoami": {"id": "me"}}
    }
    call = [r for r in outside.requests[before:] if r.path == "/who"][-1]
    assert call.json()["session_variables"] == {"x-hasura-role": "user", "x-hasura-user-id": "u1"}
    # forward_client_headers: the session travels in the body, not as headers; X-Svc-* is
    # an ordinary client header under the switch and is forwarded as one.
    assert "x-hasura-role" not in call.headers and "x-hasura-user-id" not in call.headers
    assert call.headers["x-client"] == "c1"
    assert call.headers["x-svc-user-id"] == "not-a-variable"


def test_insert_preset_check_and_event_payload(compat: ServerProcess, outside: HttpFixture) -> None:
    before = len(outside.requests)
    mutation = (
        'mutation { insert_article_one(object: {id: 1, title: "t", author_id: 1}) { owner } }'
    )
    assert compat.graphql(mutation, headers=as_user("u1")) == {
        "data": {"insert_article_one": {"owner": "u1"}}  # the `x-hasura-user-id` preset
    }
    assert compat.graphql("{ article { id } }", headers=as_user("u2")) == {"data": {"article": []}}
    deadline = time.monotonic() + 20
    events: list[Recorded] = []
    while not events and time.monotonic() < deadline:
        events = [r for r in outside.requests[before:] if r.path == "/event"]
        time.sleep(0.1)
    assert events, "the event trigger did not fire"
    assert events[0].json()["event"]["session_variables"] == {
        "x-hasura-role": "user",
        "x-hasura-user-id": "u1",
    }


def test_svc_spelling_in_metadata_is_refused_under_the_switch(compat: ServerProcess) -> None:
    body = {
        "type": "pg_create_delete_permission",
        "args": {
            "table": "article",
            "role": "user",
            "permission": {"filter": {"owner": {"_eq": "X-Svc-User-Id"}}},
        },
    }
    r = compat.query(body, headers={"X-Hasura-Admin-Secret": SECRET})
    assert r.status_code == 400, r.text
    error = r.json()
    assert error["code"] == "parse-failed"
    assert error["path"] == "$.args.permission.filter.owner._eq"
    assert "svc's spelling" in error["error"] and "--hasura-compat" in error["error"]
    assert '"x-hasura-user-id"' in error["error"]


def test_the_auth_webhook_answers_hasura_names(
    database: str, compat: ServerProcess, outside: HttpFixture
) -> None:
    hooked = ServerProcess(
        database, "--hasura-compat", "--admin-secret", SECRET, "--auth-hook", outside.url("/auth")
    )
    try:
        bearer = {"Authorization": "Bearer ada"}
        assert hooked.graphql(AUTHORS, headers=bearer) == {
            "data": {"author": [{"id": 1, "name": "Ada", "is_me": True}]}
        }
        # An answer in svc's spelling has no role under the switch (Hasura v2's message).
        r = hooked.graphql(AUTHORS, headers={"Authorization": "Bearer svc-spelling"})
        assert r["errors"][0]["message"] == "x-hasura-role not found in session variables"
    finally:
        hooked.stop()


def test_hasura_spelling_is_refused_without_the_switch(pg_url: str, outside: HttpFixture) -> None:
    s = ServerProcess(create_database(pg_url, prefix="plain"))
    try:
        assert s.query({"type": "run_sql", "args": {"sql": SQL}}).status_code == 200
        md = hasura_metadata(outside.url("").rstrip("/"))
        r = s.query({"type": "replace_metadata", "args": md})
        assert r.status_code == 400, r.text
        error = r.json()
        assert error["code"] == "parse-failed"
        assert (
            error["path"] == "$.args.tables[0].select_permissions[0].permission.filter.user_id._eq"
        )
        assert error["error"] == (
            '"X-Hasura-User-Id" names a session variable in Hasura\'s spelling, which svc '
            "reads only with --hasura-compat (SVC_GRAPHQL_HASURA_COMPAT=true): change that "
            'setting, or write "x-svc-user-id"'
        )
        # Nothing was applied: the document is still empty.
        exported = s.query({"type": "export_metadata", "args": {}}).json()
        assert exported.get("tables", []) == []
        # A preset and a check, one operation each.
        s.query({"type": "track_table", "args": {"table": "article"}})
        insert = {
            "type": "pg_create_insert_permission",
            "args": {
                "table": "article",
                "role": "user",
                "permission": {"check": {}, "set": {"owner": "x-HASURA-user-id"}, "columns": "*"},
            },
        }
        r = s.query(insert)
        assert (r.status_code, r.json()["path"]) == (400, "$.args.permission.set.owner"), r.text
        # svc's own spelling is what this server reads.
        insert["args"]["permission"]["set"] = {"owner": "x-svc-user-id"}
        assert s.query(insert).status_code == 200
    finally:
        s.stop()


def svc_command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m svc ARGS` in a child process (session names are a process's), with
    `SVC_GRAPHQL_HASURA_COMPAT` only when `env` sets it."""
    full = {k: v for k, v in os.environ.items() if k != "SVC_GRAPHQL_HASURA_COMPAT"}
    return subprocess.run(
        [sys.executable, "-m", "svc", *args],
        cwd=ROOT,
        env={**full, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_metadata_cli_and_compile_follow_the_switch(
    compat: ServerProcess, database: str, tmp_path: Path
) -> None:
    folder = tmp_path / "project"
    # `svc metadata export --hasura-compat` sends X-Hasura-Admin-Secret.
    done = svc_command(
        "metadata", "export", "--endpoint", compat.url, "--dir", str(folder),
        "--admin-secret", SECRET, "--hasura-compat",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "X-Hasura-User-Id" in (folder / "tables.yaml").read_text()
    # Without the switch the CLI's own admin secret header is svc's: refused.
    refused = svc_command(
        "metadata", "export", "--endpoint", compat.url, "--dir", str(tmp_path / "no"),
        "--admin-secret", SECRET,
    )  # fmt: skip
    assert refused.returncode != 0
    # `svc compile` reads the directory as a server with the same setting would.
    plain = svc_command("compile", "--dir", str(folder), "--database-url", database)
    assert plain.returncode == 2, plain.stdout + plain.stderr
    assert "tables.yaml" in plain.stderr
    assert "tables.yaml: $[0].select_permissions[0].permission.filter.owner: " in plain.stderr
    assert "--hasura-compat" in plain.stderr
    for how in (["--hasura-compat"], []):
        env = None if how else {"SVC_GRAPHQL_HASURA_COMPAT": "true"}
        ok = svc_command("compile", "--dir", str(folder), "--database-url", database, *how, env=env)
        assert ok.returncode == 0, ok.stdout + ok.stderr


# -- the check itself, in this process (svc's names) ----------------------------------------
def test_this_test_process_reads_svc_names() -> None:
    assert process_names() is SVC_NAMES


@pytest.mark.parametrize(
    ("value", "names", "refused"),
    [
        ("X-Hasura-User-Id", SVC_NAMES, True),
        ("x-hasura-", SVC_NAMES, True),
        ("X-Svc-User-Id", SVC_NAMES, False),
        ("X-Svc-User-Id", HASURA_NAMES, True),
        ("x-hasura-user-id", HASURA_NAMES, False),
        ("hasura", SVC_NAMES, False),
        (7, SVC_NAMES, False),
    ],
)
def test_other_spelling(value: object, names: Any, refused: bool) -> None:
    assert (other_spelling(value, names) is not None) == refused


def test_every_string_of_a_value_is_looked_at() -> None:
    filter_ = {
        "_or": [
            {"id": {"_in": [1, 2]}},
            {"_exists": {"_table": "t", "_where": {"a b": "X-Hasura-Org"}}},
        ]
    }
    with pytest.raises(Exception) as caught:
        check_value(filter_, "$.f", SVC_NAMES)
    assert caught.value.path == "$.f._or[1]._exists._where['a b']"  # type: ignore[attr-defined]
    check_value(filter_, "$.f", HASURA_NAMES)  # Hasura's spelling under the switch


def test_remote_schema_presets_and_rate_limit_keys() -> None:
    sdl = 'type Query { user(id: ID @preset(value: "X-Hasura-User-Id")): String }'
    with pytest.raises(Exception) as caught:
        check_remote_sdl(sdl, "$.args.definition.schema", SVC_NAMES)
    assert "@preset" in str(caught.value.message)  # type: ignore[attr-defined]
    check_remote_sdl(sdl, "$.args.definition.schema", HASURA_NAMES)
    limits = {
        "rate_limit": {"global": {"max_reqs_per_min": 5, "unique_params": ["x-hasura-user-id"]}}
    }
    with pytest.raises(Exception) as caught:
        api_limits_from_obj(limits)
    error = caught.value
    assert error.path == "$.args.rate_limit.global.unique_params[0]"  # type: ignore[attr-defined]
    assert "--hasura-compat" in error.message  # type: ignore[attr-defined]


def test_the_console_sends_the_servers_admin_secret_header() -> None:
    from svc.config import Config
    from svc.server.console import answer

    status, page, _ = answer("/console", {}, Config(enable_console=True, hasura_compat=True))
    assert status == 200 and b'"adminSecretHeader": "x-hasura-admin-secret"' in page
    _, page, _ = answer("/console", {}, Config(enable_console=True))
    assert b'"adminSecretHeader": "x-svc-admin-secret"' in page


def test_a_document_with_remote_schema_presets_is_checked() -> None:
    sdl = 'type Query { user(id: ID @preset(value: "x-hasura-user-id")): String }'
    remote = {
        "name": "users",
        "definition": {"url": "http://127.0.0.1:1/graphql"},
        "permissions": [{"role": "user", "definition": {"schema": sdl}}],
    }
    with pytest.raises(Exception) as caught:
        metadata_from_obj({"version": 2, "tables": [], "remote_schemas": [remote]})
    error = caught.value
    assert error.path == "$.args.remote_schemas[0].permissions[0].definition.schema"  # type: ignore[attr-defined]
    assert "Hasura's spelling" in error.message  # type: ignore[attr-defined]
