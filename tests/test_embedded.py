"""Real-Postgres tests for svc.embedded (no mocks)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from pathlib import Path

import asyncpg
import pytest

from svc.embedded import EmbeddedPostgres, default_data_dir, find_postgres_bindir


async def _fetch(url: str, *sql: str) -> list[object]:
    """Run each statement in order on one connection; return the first column of
    the first row of each."""
    conn = await asyncpg.connect(url)
    try:
        return [await conn.fetchval(q) for q in sql]
    finally:
        await conn.close()


def _psql() -> str:
    bundled = find_postgres_bindir() / "psql"
    if os.access(bundled, os.X_OK):
        return str(bundled)
    found = shutil.which("psql")
    assert found is not None, "psql not found"
    return found


def test_default_data_dir() -> None:
    assert default_data_dir() == Path.cwd() / ".svc" / "pgdata"


def test_find_postgres_bindir() -> None:
    bindir = find_postgres_bindir()
    for name in ("initdb", "pg_ctl", "postgres"):
        assert os.access(bindir / name, os.X_OK)


def test_start_stop_restart_keeps_data(tmp_path: Path) -> None:
    messages: list[str] = []
    pg = EmbeddedPostgres(tmp_path / "pgdata", log=messages.append)
    try:
        url = pg.start()
        assert url.startswith("postgresql://postgres@127.0.0.1:")
        assert url == pg.url == f"postgresql://postgres@127.0.0.1:{pg.port}/postgres"
        assert pg.start() == url  # idempotent while running
        assert (pg.real_data_dir / "PG_VERSION").exists()
        if os.geteuid() == 0:  # Postgres must not run as root: files belong to another user
            assert pg.real_data_dir.stat().st_uid != 0

        out = subprocess.run(
            [_psql(), url, "-Atc", "select 1"], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == "1"

        settings = asyncio.run(
            _fetch(
                url,
                "show fsync",
                "show synchronous_commit",
                "show full_page_writes",
                "show max_connections",
                "show shared_buffers",
                "show listen_addresses",
                "select current_user",
                "show server_encoding",
            )
        )
        assert settings == ["off", "off", "off", "200", "128MB", "127.0.0.1", "postgres", "UTF8"]

        asyncio.run(
            _fetch(
                url,
                "create table kept (id int primary key, note text)",
                "insert into kept values (1, 'survives restart')",
            )
        )
        pid_file_text = (pg.real_data_dir / "postmaster.pid").read_text()

        pg.stop()
        pg.stop()  # idempotent
        assert not pg.running
        assert not (pg.real_data_dir / "postmaster.pid").exists()
        with pytest.raises(RuntimeError):
            _ = pg.url

        # Simulate a crash: the postmaster is gone but its pid file remains.
        (pg.real_data_dir / "postmaster.pid").write_text(pid_file_text)

        with EmbeddedPostgres(tmp_path / "pgdata", log=messages.append) as again:
            assert again.running
            (note,) = asyncio.run(_fetch(again.url, "select note from kept where id = 1"))
            assert note == "survives restart"
        assert not again.running
        assert any("stale postmaster.pid" in m for m in messages), messages
    finally:
        pg.destroy()
    assert not pg.real_data_dir.exists()
    assert not (tmp_path / "pgdata").exists()


def test_explicit_port_and_adopting_a_running_server(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    first = EmbeddedPostgres(tmp_path / "explicit", port=port)
    try:
        assert first.start() == f"postgresql://postgres@127.0.0.1:{port}/postgres"
        # A second owner of the same directory (e.g. after the first process died
        # without stopping its server) adopts the running server instead of failing.
        second = EmbeddedPostgres(tmp_path / "explicit")
        assert second.start() == first.url
        (one,) = asyncio.run(_fetch(second.url, "select 1"))
        assert one == 1
        second.stop()
        assert not second.running
        first.stop()  # server already gone: must not raise
    finally:
        first.destroy()
