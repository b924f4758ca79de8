"""Session fixtures: one throwaway Postgres cluster for the whole run (or
`SVC_TEST_DATABASE_URL`), and helpers to get fresh databases and real svc servers."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from svc.embedded import EmbeddedPostgres
from tests.support import ServerProcess, create_database


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
