"""The source operations on `default` (`svc/api/source_ops.py`): `default` is the database of
`--database-url`, so it is neither updated, dropped nor renamed (400 `not-supported` naming
`--database-url`); adding it again is the reference's 400 `already-exists`
(`Hasura.RQL.DDL.Schema.Source.runAddSource`); a source whose database cannot be reached is
refused (400 `invalid-configuration`, as `runAddSource`'s `buildSchemaCacheFor` refuses an
inconsistent new source); nothing is written. Other sources: tests/test_several_sources.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import ServerProcess

URL_ARGS = {"configuration": {"connection_info": {"database_url": "postgres://x/y"}}}


@pytest.fixture(scope="module")
def srv(server: ServerProcess) -> ServerProcess:
    """The module's server (`tests/conftest.py`)."""
    return server


def metadata(srv: ServerProcess, kind: str, args: dict[str, Any]) -> tuple[int, Any]:
    r = srv.client.post("/v1/metadata", json={"type": kind, "args": args})
    return r.status_code, r.json()


@pytest.mark.parametrize(
    ("kind", "args", "code"),
    [
        ("pg_add_source", {"name": "pg1", **URL_ARGS}, "invalid-configuration"),
        ("pg_update_source", {"name": "default", **URL_ARGS}, "not-supported"),
        ("pg_drop_source", {"name": "default"}, "not-supported"),
        ("rename_source", {"name": "default", "new_name": "main"}, "not-supported"),
    ],
)
def test_source_changes_are_refused(
    srv: ServerProcess, kind: str, args: dict[str, Any], code: str
) -> None:
    before = srv.query({"type": "export_metadata", "args": {}}).json()
    status, body = metadata(srv, kind, args)
    assert status == 400
    assert body["code"] == code
    if code == "not-supported":
        assert "--database-url" in body["error"]
    assert srv.query({"type": "export_metadata", "args": {}}).json() == before


def test_adding_the_served_source_again_already_exists(srv: ServerProcess) -> None:
    status, body = metadata(srv, "pg_add_source", {"name": "default", **URL_ARGS})
    assert status == 400
    assert body == {
        "code": "already-exists",
        "error": 'source with name "default" already exists',
        "path": "$.args",
    }
