"""Session fixtures: one throwaway Postgres cluster for the whole run (or
`SVC_TEST_DATABASE_URL`), and helpers to get fresh databases and real svc servers."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from svc.embedded import EmbeddedPostgres
from svc.session_vars import process_names, use_names
from tests.support import ServerProcess, create_database

# Fixed ports (FIXTURES.md's fixture servers on 127.0.0.1:4000, :5000, :5592, …): the
# modules that start or name them run one after another in one pytest-xdist worker
# (`--dist loadgroup`); every other module is spread over the workers.
FIXED_PORT_SIGNS = (
    "fixture_servers",
    "webhook_recorder",
    "event_scenarios",
    "scheduled_scenarios",
    "actions_scenarios",
    "localhost:4000",
    "localhost:5000",
)


def _uses_fixed_ports(path: Path, seen: dict[Path, bool]) -> bool:
    if path not in seen:
        text = path.read_text(encoding="utf-8") if path.suffix == ".py" else ""
        in_corpus = "conformance" in path.parts
        seen[path] = in_corpus or any(sign in text for sign in FIXED_PORT_SIGNS)
    return seen[path]


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put every test of a module that uses the fixed fixture ports in one xdist group."""
    seen: dict[Path, bool] = {}
    for item in items:
        if _uses_fixed_ports(item.path, seen):
            item.add_marker(pytest.mark.xdist_group(name="fixed-ports"))


@pytest.fixture(scope="module", autouse=True)
def _process_names() -> Iterator[None]:
    """A module that runs the `svc` command in-process (`--hasura-compat`, also from its
    module fixtures) sets this process's session-variable names; the next module starts
    with the ones it found."""
    before = process_names()
    yield
    use_names(before)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of a Postgres superuser connection on a cluster the tests may use freely."""
    given = os.environ.get("SVC_TEST_DATABASE_URL")
    if given:
        yield given
        return
    data_dir = Path(tempfile.mkdtemp(prefix="svc-test-pg-")) / "data"
    pg = EmbeddedPostgres(data_dir)
    url = pg.start()
    try:
        yield url
    finally:
        pg.destroy()


@pytest.fixture(scope="session")
def new_database(pg_url: str) -> Callable[[], str]:
    """Call to get the URL of a new, empty database."""
    return lambda: create_database(pg_url)


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[ServerProcess]:
    """A svc server on its own new database, shared by one test module."""
    srv = ServerProcess(create_database(pg_url))
    try:
        yield srv
    finally:
        srv.stop()
