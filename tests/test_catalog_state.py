"""`get_catalog_state` / `set_catalog_state` on a real server: the operations the Hasura v2
CLI uses to record migrations (`cli/internal/client/catalog_state.go`), answering the
reference's shape (`{id, cli_state, console_state}`; the console's own typing of it in
`frontend/.../get_catalog_state`), and sharing the column `svc migrate` writes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from svc.cli import main
from tests.support import ServerProcess, create_database


@pytest.fixture(scope="module")
def database(pg_url: str) -> str:
    return create_database(pg_url, prefix="catstate")


@pytest.fixture(scope="module")
def srv(database: str) -> Iterator[ServerProcess]:
    s = ServerProcess(database)
    try:
        yield s
    finally:
        s.stop()


def metadata(srv: ServerProcess, kind: str, args: object) -> tuple[int, object]:
    r = srv.client.post("/v1/metadata", json={"type": kind, "args": args})
    return r.status_code, r.json()


def test_states_start_empty_and_are_kept_whole(srv: ServerProcess) -> None:
    status, got = metadata(srv, "get_catalog_state", {})
    assert status == 200, got
    assert isinstance(got, dict) and uuid.UUID(got["id"])
    assert got["console_state"] == {}
    cli = {"migrations": {"default": {"1700000000000": False}}, "settings": {"x": [1, None]}}
    assert metadata(srv, "set_catalog_state", {"type": "cli", "state": cli}) == (
        200,
        {"message": "success"},
    )
    assert metadata(srv, "set_catalog_state", {"type": "console", "state": {"a": "b"}})[0] == 200
    status, again = metadata(srv, "get_catalog_state", {})
    assert again == {"id": got["id"], "cli_state": cli, "console_state": {"a": "b"}}


def test_a_state_type_other_than_cli_or_console_is_parse_failed(srv: ServerProcess) -> None:
    status, got = metadata(srv, "set_catalog_state", {"type": "other", "state": {}})
    assert status == 400 and isinstance(got, dict), got
    assert got["code"] == "parse-failed" and got["path"] == "$.args.type", got


def test_svc_migrate_and_the_cli_operations_share_one_record(
    srv: ServerProcess, database: str, tmp_path: Path
) -> None:
    """What `svc migrate apply` records is what the Hasura CLI reads back through
    `get_catalog_state` (and so treats as applied)."""
    folder = tmp_path / "migrations" / "default" / "1700000000009_t"
    folder.mkdir(parents=True)
    (folder / "up.sql").write_text("CREATE TABLE catstate_t (id int);")
    (folder / "down.sql").write_text("DROP TABLE catstate_t;")
    (tmp_path / "config.yaml").write_text("version: 3\nmetadata_directory: metadata\n")
    code = main(["migrate", "apply", "--project", str(tmp_path), "--database-url", database])
    assert code == 0
    status, got = metadata(srv, "get_catalog_state", {})
    assert status == 200 and isinstance(got, dict), got
    assert got["cli_state"]["migrations"]["default"]["1700000000009"] is False
