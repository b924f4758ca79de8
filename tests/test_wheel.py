"""The built wheel works on its own (issue 12, packaging): build it with `uv build` (an sdist,
then the wheel from that sdist, so both must carry the grammars), install it
into a fresh venv, and run it from a directory outside the repository, so nothing is read
from the source tree. Its grammars (`grammar/*.lark`, shipped as `svc/_grammar/`) are read
at run time by the JSON-path parser (JWT `claims_namespace_path`) and the URL templates.

Dependencies install at the versions of `uv.lock` (`uv export`), which `uv sync` has put in
uv's cache, so the venv costs seconds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest

from svc.version import VERSION
from tests.support import ROOT, create_database, free_port

UV = os.environ.get("UV") or shutil.which("uv") or "uv"
HS_SECRET = "a shared secret that is longer than 32 characters"
ADMIN_SECRET = "wheel-test-admin-secret"


def clean_env() -> dict[str, str]:
    """This process's environment without what points Python at the checkout or its venv."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONHOME"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def run(*cmd: str | Path, cwd: Path) -> str:
    """Run `cmd` in `cwd`; its stdout, or the failure with its output."""
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=clean_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel built from this checkout installed; its directory."""
    tmp = tmp_path_factory.mktemp("wheel")
    run(UV, "build", "--out-dir", tmp / "dist", cwd=ROOT)
    (wheel,) = (tmp / "dist").glob("svc-*.whl")
    (sdist,) = (tmp / "dist").glob("svc-*.tar.gz")
    with tarfile.open(sdist) as tar:
        assert {"grammar/json_path.lark", "grammar/url_template.lark"} <= {
            name.split("/", 1)[1] for name in tar.getnames() if "/" in name
        }
    pins = run(UV, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project", cwd=ROOT)
    (tmp / "pins.txt").write_text(pins)
    run(UV, "venv", "--quiet", "--python", sys.executable, tmp / "venv", cwd=tmp)
    python = tmp / "venv" / "bin" / "python"
    run(UV, "pip", "install", "--quiet", "--python", python, "-c", "pins.txt", wheel, cwd=tmp)
    return tmp / "venv"


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty working directory outside the repository."""
    return tmp_path_factory.mktemp("elsewhere")


def test_the_wheel_ships_the_grammars(venv: Path, outside: Path) -> None:
    code = (
        "import svc, svc.grammars, svc.json_path, svc.outbound.templates as t;"
        "print(svc.__file__);"
        "print(svc.json_path.parse_json_path('$.a[\"b c\"][0]'));"
        "print(t.parse_template('http://{{HOST}}/x').parts)"
    )
    where, keys, parts = run(venv / "bin" / "python", "-c", code, cwd=outside).splitlines()
    assert Path(where).is_relative_to(venv), where  # the installed copy, not the checkout
    assert not Path(where).is_relative_to(ROOT)
    assert (Path(where).parent / "_grammar" / "json_path.lark").is_file()
    assert keys == "('a', 'b c', '0')"
    assert "HOST" in parts


def test_svc_version(venv: Path, outside: Path) -> None:
    assert VERSION in run(venv / "bin" / "svc", "version", cwd=outside)


@pytest.fixture
def served(venv: Path, outside: Path, pg_url: str) -> Iterator[str]:
    """The installed `svc serve` (one worker) with JWT claims under `$.app.claims`; its URL."""
    port = free_port()
    conf = {"type": "HS256", "key": HS_SECRET, "claims_namespace_path": "$.app.claims"}
    cmd = [
        str(venv / "bin" / "svc"),
        "serve",
        "--database-url",
        create_database(pg_url),
        "--server-host",
        "127.0.0.1",
        "--server-port",
        str(port),
        "--workers",
        "1",
        "--admin-secret",
        ADMIN_SECRET,
        "--jwt-secret",
        json.dumps(conf),
    ]
    log = outside / f"serve-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=outside, env=clean_env(), stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Wait (up to 60 s) until the server answers an admin GraphQL request."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"svc exited early:\n{log.read_text()[-3000:]}"
        try:
            r = httpx.post(
                f"{url}/v1/graphql",
                json={"query": "{ __typename }"},
                headers={"x-svc-admin-secret": ADMIN_SECRET},
            )
            if r.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"svc did not start:\n{log.read_text()[-3000:]}")


def token(body: dict[str, object]) -> dict[str, str]:
    """An `Authorization` header with `body` signed by the server's HS256 key."""
    body = {"sub": "someone", "exp": int(time.time()) + 300, **body}
    return {"Authorization": f"Bearer {jwt.encode(body, HS_SECRET, algorithm='HS256')}"}


def test_a_query_through_the_installed_server(served: str) -> None:
    claims = {"x-svc-allowed-roles": ["admin"], "x-svc-default-role": "admin"}
    query = {"query": "{ __typename }"}
    at_path = token({"app": {"claims": claims}})
    nested = httpx.post(f"{served}/v1/graphql", json=query, headers=at_path)
    assert nested.json() == {"data": {"__typename": "query_root"}}
    # Claims anywhere else are not found: the configured path is what was read.
    flat = httpx.post(f"{served}/v1/graphql", json=query, headers=token({"claims": claims}))
    assert "claims_namespace_path" in flat.text, flat.text
