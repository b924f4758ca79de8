"""The actions scenario files of the corpus (`actions/scenarios/*.yaml`: async calls
polled until done, checks on parts of sync answers, case files over an Apollo websocket)
against a live `svc serve` (default worker count) and the `actions` fixture server
(`tests/fixture_servers/actions.py`, FIXTURES.md §6.1).

Each scenario test is one pytest test `<file>::<test>`; known gaps are strict xfails with
their reason.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.actions_scenarios import run_http_scenario
from tests.conformance.runner import CORPUS, PASS, SERVER_ARGS, SKIP_REASON, load_yaml
from tests.fixture_servers import CORPUS_ENV
from tests.fixture_servers import actions as fixture
from tests.support import ServerProcess, create_database

SCENARIO_DIR = CORPUS / "actions" / "scenarios"
KNOWN: dict[str, str] = {}


def scenario_ids() -> list[tuple[str, str, str]]:
    """(id, file name, test name) of every actions scenario test."""
    if not SCENARIO_DIR.is_dir():
        return []
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        for test in load_yaml(path)["tests"]:
            rel = path.relative_to(CORPUS).as_posix()
            out.append((f"{rel}::{test['name']}", path.name, test["name"]))
    return out


IDS = scenario_ids()


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[ServerProcess]:
    """A server with the corpus environment and the actions fixture it calls."""
    with fixture.serve():
        srv = ServerProcess(create_database(pg_url, prefix="act"), *SERVER_ARGS, env=CORPUS_ENV)
        fixture.engine_url = srv.url
        try:
            r = srv.query(load_yaml(CORPUS / "clear_db.yaml"))
            assert r.status_code == 200, r.text
            yield srv
        finally:
            fixture.engine_url = None
            srv.stop()


@pytest.fixture(scope="module")
def results(server: ServerProcess) -> Iterator[dict[str, dict[str, str]]]:
    """file name → {test: result}, each scenario file run once."""

    class Lazy(dict[str, dict[str, str]]):
        def __missing__(self, name: str) -> dict[str, str]:
            self[name] = run_http_scenario(server.url, SCENARIO_DIR / name)
            return self[name]

    yield Lazy()


@pytest.mark.skipif(not IDS, reason=SKIP_REASON)
@pytest.mark.parametrize(("case_id", "name", "test"), IDS, ids=[i[0] for i in IDS])
def test_actions_scenario(
    results: dict[str, dict[str, str]], case_id: str, name: str, test: str
) -> None:
    """One scenario test passes (or is a known gap that still fails)."""
    outcome = results[name].get(test, "not run")
    if case_id in KNOWN:
        if outcome == PASS:
            pytest.fail(f"known gap now passes, remove it from KNOWN: {KNOWN[case_id]}")
        pytest.xfail(KNOWN[case_id])
    assert outcome == PASS, outcome
