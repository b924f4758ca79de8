"""The source operations while svc serves one source (`svc/api/source_ops.py`): refused with
what the reference answers where it answers the same (`pg_add_source` of an existing
`default`: 400 `already-exists`, `Hasura.RQL.DDL.Schema.Source.runAddSource`), else 400
`not-supported` naming `--database-url`, never "unknown operation"; nothing is written."""

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
    ("kind", "args"),
    [
        ("pg_add_source", {"name": "pg1", **URL_ARGS}),
        ("pg_add_source", {"name": "default", "replace_configuration": True, **URL_ARGS}),
        ("pg_update_source", {"name": "default", **URL_ARGS}),
        ("pg_drop_source", {"name": "default"}),
        ("rename_source", {"name": "default", "new_name": "main"}),
    ],
)
def test_source_changes_are_refused_as_not_supported(
    srv: ServerProcess, kind: str, args: dict[str, Any]
) -> None:
    before = srv.query({"type": "export_metadata", "args": {}}).json()
    status, body = metadata(srv, kind, args)
    assert status == 400
    assert body["code"] == "not-supported"
    assert "--database-url" in body["error"] and kind in body["error"]
    assert srv.query({"type": "export_metadata", "args": {}}).json() == before


def test_adding_the_served_source_again_already_exists(srv: ServerProcess) -> None:
    status, body = metadata(srv, "pg_add_source", {"name": "default", **URL_ARGS})
    assert status == 400
    assert body == {
        "code": "already-exists",
        "error": 'source with name "default" already exists',
        "path": "$.args",
    }
